package mirrorconfig

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/kmirror/kmirror/internal/auth"
)

// SyncedACLID is the id under which a mirror's ACL sync stores binding b
// on the destination cluster. The id is derived from the mirror's name and
// the binding, so it records the ACL's provenance in the metadata itself:
// an ACL whose id is SyncedACLID(m, its binding) was created by mirror m's
// sync (through the controller's internal path, which alone may choose
// ids), and only such ACLs does the sync ever delete. An ACL an operator
// created (with a random id) is never taken for a synced one.
//
// The id is the first 16 bytes of SHA-256 over a fixed label, the mirror
// name and every field of the binding (strings length-prefixed), shaped as
// a version-8 UUID.
func SyncedACLID(mirror string, b auth.Binding) [16]byte {
	h := sha256.New()
	put := func(s string) {
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(s))))
		h.Write([]byte(s))
	}
	put("kmirror mirror acl sync v1")
	put(mirror)
	h.Write([]byte{byte(b.ResourceType), byte(b.PatternType), byte(b.Operation), byte(b.Permission)})
	put(b.ResourceName)
	put(b.Principal)
	put(b.Host)
	var id [16]byte
	copy(id[:], h.Sum(nil))
	id[6] = id[6]&0x0f | 0x80
	id[8] = id[8]&0x3f | 0x80
	return id
}
