package mirror_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/wire"
)

// TestDeleteMirror: a mirror cannot be deleted while a topic mirrors; once
// every partition is STOPPED it can, its __mirror_state records go, the
// topic is writable and in no mirror, and the name can be used again.
func TestDeleteMirror(t *testing.T) {
	a := startCluster(t)
	b := startCluster(t)
	createTopic(t, a, "d1", 2, nil)
	produceN(t, a, "d1", "x", 20)
	createMirror(t, b, a, "dm")
	mirrorTopics(t, b, opAdd, "dm", "d1")
	waitStates(t, b, "dm", "d1", 2, wire.MirrorStateMirroring)

	if code, msg := deleteMirror(t, b, "dm"); code != kerr.InvalidRequest.Code {
		t.Fatalf("delete of a mirroring mirror: %v %s", kerr.ErrorForCode(code), msg)
	}
	mirrorTopics(t, b, opRemove, "dm", "d1")
	waitStates(t, b, "dm", "d1", 2, wire.MirrorStateStopped)
	if code, msg := deleteMirror(t, b, "dm"); code != 0 {
		t.Fatalf("delete after failover: %v %s", kerr.ErrorForCode(code), msg)
	}
	waitFor(t, "dm's states removed from __mirror_state", func() bool {
		for p := range int32(2) {
			if st := storedState(t, b, "dm", "d1", p); st.State != wire.MirrorStateUnknown || st.UpdateMillis != -1 {
				return false
			}
		}
		return true
	})
	d := describe(t, b, "dm")
	if len(d.Mirrors) != 1 || d.Mirrors[0].ErrorCode != kerr.ResourceNotFound.Code {
		t.Fatalf("describe a deleted mirror: %+v", d.Mirrors)
	}
	if err := produceErr(t, b, "d1"); err != nil {
		t.Fatalf("produce after the mirror was deleted: %v", err)
	}

	// The name is free again, and the topic can be mirrored anew.
	createMirror(t, b, a, "dm")
	mirrorTopics(t, b, opAdd, "dm", "d1")
	waitStates(t, b, "dm", "d1", 2, wire.MirrorStateMirroring)
	waitIdentical(t, a.Nodes()[0], b.Nodes()[0], "d1", 2)
}
