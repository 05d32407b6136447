package mirror

import "github.com/kmirror/kmirror/internal/wire"

// kmirror's tagged fields on the mirror RPCs (docs/protocol.md lists them).
// Tags let these fields travel without a new message version, and a peer
// that does not know them keeps and ignores them.
const (
	// tagSourceCluster carries a partition's source_cluster_id (compact
	// string) in ReadMirrorStates response partitions and WriteMirrorStates
	// request partitions: the cluster whose data the partition's log holds
	// (mirrorstate.PartitionValue.SourceClusterID).
	tagSourceCluster uint32 = 0
	// tagLocalOnly (0x4b4d, "KM", kmirror's tag for internal requests) on a
	// ReadLastMirroredEpochs or DescribeMirrors request asks the receiving
	// broker to answer from its own state only, without asking other
	// brokers: the request was forwarded by a broker that already did the
	// routing. Its value is one byte, 1.
	tagLocalOnly uint32 = 0x4b4d
)

// setStringTag stores s as tag key in tags (nothing for "").
func setStringTag(tags *wire.Tags, key uint32, s string) {
	if s == "" {
		return
	}
	tags.Set(key, wire.AppendCompactString(nil, s))
}

// stringTag reads a compact-string tag; "" if absent or malformed.
func stringTag(tags wire.Tags, key uint32) string {
	b, ok := tags.Get(key)
	if !ok {
		return ""
	}
	r := wire.NewReader(b)
	s := r.CompactString()
	if r.Complete() != nil {
		return ""
	}
	return s
}

// setLocalOnly marks a forwarded request.
func setLocalOnly(tags *wire.Tags) { tags.Set(tagLocalOnly, []byte{1}) }

// isLocalOnly reports whether a request was marked by setLocalOnly.
func isLocalOnly(tags wire.Tags) bool {
	b, ok := tags.Get(tagLocalOnly)
	return ok && len(b) == 1 && b[0] == 1
}
