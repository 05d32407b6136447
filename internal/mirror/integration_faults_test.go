package mirror_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/mirror"
	"github.com/kmirror/kmirror/internal/wire"
)

// TestRestartResumesMirroring restarts the destination while it mirrors:
// each partition resumes MIRRORING from its log end (its state is claimed
// by the restarted leader, without going through PREPARING, so nothing is
// truncated) and catches up; a paused topic stays paused.
func TestRestartResumesMirroring(t *testing.T) {
	a := startCluster(t)
	b := startCluster(t)
	createTopic(t, a, "r1", 2, nil)
	createTopic(t, a, "r2", 1, nil)
	produceN(t, a, "r1", "before", 30)
	produceN(t, a, "r2", "before", 10)
	createMirror(t, b, a, "m")
	mirrorTopics(t, b, opAdd, "m", "r1", "r2")
	an, bn := a.Nodes()[0], b.Nodes()[0]
	waitStates(t, b, "m", "r1", 2, wire.MirrorStateMirroring)
	waitIdentical(t, an, bn, "r1", 2)
	mirrorTopics(t, b, opPause, "m", "r2")
	waitStates(t, b, "m", "r2", 1, wire.MirrorStatePaused)
	before := []int32{storedState(t, b, "m", "r1", 0).StateEpoch, storedState(t, b, "m", "r1", 1).StateEpoch}
	pausedEpoch := storedState(t, b, "m", "r2", 0).StateEpoch
	pausedEnd := leo(t, bn, "r2", 0)

	bn.Restart()
	produceN(t, a, "r1", "after", 30)
	produceN(t, a, "r2", "after", 10)
	waitStates(t, b, "m", "r1", 2, wire.MirrorStateMirroring)
	waitIdentical(t, an, bn, "r1", 2)
	for p := range int32(2) {
		if got := storedState(t, b, "m", "r1", p).StateEpoch; got != before[p]+1 {
			t.Fatalf("r1-%d: state epoch %d after the restart, want %d (MIRRORING claimed, no PREPARING)", p, got, before[p]+1)
		}
	}
	waitStates(t, b, "m", "r2", 1, wire.MirrorStatePaused)
	if got := storedState(t, b, "m", "r2", 0).StateEpoch; got != pausedEpoch+1 {
		t.Fatalf("r2: state epoch %d after the restart, want %d", got, pausedEpoch+1)
	}
	if got := leo(t, bn, "r2", 0); got != pausedEnd {
		t.Fatalf("paused r2 moved from %d to %d across the restart", pausedEnd, got)
	}
	if err := produceErr(t, b, "r1"); err == nil {
		t.Fatal("a mirrored topic accepted a produce after the restart")
	}
}

// kfakeSource starts a kfake cluster with topic and n records in it.
func kfakeSource(t *testing.T, topic string, partitions int32, n int) *kfake.Cluster {
	t.Helper()
	src, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(src.ListenAddrs()...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range n {
		if err := cl.ProduceSync(ctxFor(t), &kgo.Record{Key: []byte("k" + itoa(i)), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	return src
}

// TestSourceTopicDeletedFails: a mirrored topic deleted on the source makes
// its partitions FAILED with a reason that says so; recreated there under
// a new id, they stay FAILED (never mirrored from another topic); failing
// over still works, without the source.
func TestSourceTopicDeletedFails(t *testing.T) {
	src := kfakeSource(t, "gone", 2, 20)
	b := startCluster(t)
	createMirrorFrom(t, b, "kf", src.ListenAddrs()[0])
	mirrorTopics(t, b, opAdd, "kf", "gone")
	waitStates(t, b, "kf", "gone", 2, wire.MirrorStateMirroring)
	waitFor(t, "the data copied", func() bool { return sum(leos(t, b.Nodes()[0], "gone", 2)) >= 20 })

	if err := src.DeleteTopic("gone"); err != nil {
		t.Fatal(err)
	}
	waitStates(t, b, "kf", "gone", 2, wire.MirrorStateFailed)
	checkErrors := func(want string) {
		t.Helper()
		waitFor(t, "FAILED partitions to say "+want, func() bool {
			for _, m := range describe(t, b, "kf").Mirrors {
				for _, tp := range m.Topics {
					for _, p := range tp.Partitions {
						if p.LastError == nil || !strings.Contains(*p.LastError, want) {
							return false
						}
					}
				}
			}
			return true
		})
	}
	checkErrors("does not exist on the source")
	if err := src.CreateTopic("gone", 2, nil); err != nil {
		t.Fatal(err)
	}
	checkErrors("has id")
	if s := partitionStates(t, b, "kf", "gone"); s[0] == wire.MirrorStateMirroring || s[1] == wire.MirrorStateMirroring {
		t.Fatalf("mirroring resumed from a recreated source topic: %v", s)
	}

	// The source goes away entirely; failover needs nothing from it.
	src.Close()
	var copied [2][]byte
	for p := range int32(2) {
		_, copied[p] = logBytes(t, b.Nodes()[0], "gone", p)
	}
	mirrorTopics(t, b, opRemove, "kf", "gone")
	waitStates(t, b, "kf", "gone", 2, wire.MirrorStateStopped)
	for p := range int32(2) {
		// The source's producer was idempotent, not transactional: all
		// that was copied stays, then one barrier.
		_, data := logBytes(t, b.Nodes()[0], "gone", p)
		checkFailedOver(t, "gone-"+itoa(int(p)), copied[p], data)
	}
	if err := produceErr(t, b, "gone"); err != nil {
		t.Fatalf("produce after failover without a source: %v", err)
	}
}

func sum(xs []int64) int64 {
	var n int64
	for _, x := range xs {
		n += x
	}
	return n
}

// TestStoppingRedoAfterBarrier replays the crash of a leader between
// appending the failover barrier and persisting STOPPED (held there by the
// pause hook, then restarted): the state is STOPPING when the node comes
// back; the new leader finds the barrier at the end of its last mirrored
// epoch and completes without a second one, and the failover is then
// recorded as complete (mirror.name m.stopped).
func TestStoppingRedoAfterBarrier(t *testing.T) {
	a := startCluster(t)
	b := startCluster(t)
	createTopic(t, a, "once", 1, nil)
	produceN(t, a, "once", "x", 10)
	createMirror(t, b, a, "m")
	mirrorTopics(t, b, opAdd, "m", "once")
	waitStates(t, b, "m", "once", 1, wire.MirrorStateMirroring)
	bn := b.Nodes()[0]
	waitIdentical(t, a.Nodes()[0], bn, "once", 1)
	mirrored := leo(t, bn, "once", 0)

	held := make(chan struct{}, 1)
	remove := mirror.HoldAt(mirror.PauseBarrierAppended, func(ctx context.Context) {
		select {
		case held <- struct{}{}:
		default:
		}
		<-ctx.Done() // until the node stops
	})
	defer remove()
	mirrorTopics(t, b, opRemove, "m", "once")
	select {
	case <-held:
	case <-time.After(waitTimeout):
		t.Fatal("the failover never appended its barrier")
	}
	if st := storedState(t, b, "m", "once", 0); st.State != wire.MirrorStateStopping {
		t.Fatalf("held after the barrier, the stored state is %v, not STOPPING", st.State)
	}
	if got := leo(t, bn, "once", 0); got != mirrored+1 {
		t.Fatalf("held after the barrier, the log ends at %d, want %d", got, mirrored+1)
	}
	bn.Stop()
	remove()
	bn.Start()
	waitStates(t, b, "m", "once", 1, wire.MirrorStateStopped)
	// A's log (no open transaction) byte for byte, then one barrier: the
	// one appended before the crash, not a second.
	_, src := logBytes(t, a.Nodes()[0], "once", 0)
	_, data := logBytes(t, bn, "once", 0)
	checkFailedOver(t, "once-0", src, data)
	waitMirrorName(t, b, "once", "m.stopped")
}

// TestSourceOutage stops the source while B mirrors from it: the partitions
// stay MIRRORING, DescribeMirrors reports the error, and mirroring carries
// on by itself once the source is back.
func TestSourceOutage(t *testing.T) {
	a := startCluster(t)
	b := startCluster(t)
	createTopic(t, a, "out", 2, nil)
	produceN(t, a, "out", "before", 20)
	createMirror(t, b, a, "m")
	mirrorTopics(t, b, opAdd, "m", "out")
	an, bn := a.Nodes()[0], b.Nodes()[0]
	waitStates(t, b, "m", "out", 2, wire.MirrorStateMirroring)
	waitIdentical(t, an, bn, "out", 2)

	an.Stop()
	waitFor(t, "DescribeMirrors to report the outage", func() bool {
		for _, m := range describe(t, b, "m").Mirrors {
			for _, tp := range m.Topics {
				for _, p := range tp.Partitions {
					if p.LastError == nil || p.State != wire.MirrorStateMirroring {
						return false
					}
				}
			}
		}
		return true
	})
	an.Start()
	produceN(t, a, "out", "after", 20)
	waitIdentical(t, an, bn, "out", 2)
	// A's restart began new leader epochs there, which B's partitions
	// follow (the epoch floor): their figures come from the new drivers'
	// first fetches.
	var last wire.DescribeMirrorsResponsePartition
	ok := pollUntil(func() bool {
		for _, m := range describe(t, b, "m").Mirrors {
			for _, tp := range m.Topics {
				for _, p := range tp.Partitions {
					if p.State != wire.MirrorStateMirroring || p.Lag != 0 || p.LastError != nil {
						last = p
						return false
					}
				}
			}
		}
		return true
	})
	if !ok {
		t.Fatalf("out-%d after the outage: %+v", last.Partition, last)
	}
}
