package mirror_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/pkg/mirroradmin"
)

// The crash tests run the destination as the kmirror binary and kill it
// with SIGKILL; the source is an in-process cluster.

// TestKillDestinationWhileMirroring kills B while it copies A under a
// running producer: restarted, B resumes from its log end and ends
// byte-identical with A (no gap, no duplicate: the same batches at the
// same offsets).
func TestKillDestinationWhileMirroring(t *testing.T) {
	a := inProcess(t, 1)
	as := seedsOf(a)
	b := startProcs(t, 1, nil)
	bs := b.seeds()
	const parts = 3
	createTopicOn(t, as, "busy", parts)
	prod := startProducer(t, as, "busy", "x")
	prod.waitAcked(t, 300)
	adm := newMirrorAdmin(t, bs)
	mirrorFrom(t, adm, "m", as, "busy")
	waitStates(t, adm, "m", "busy", parts, mirroradmin.StateMirroring)
	waitUntil(t, "B copying", func() (bool, string) {
		ps, err := partitionStatuses(t, adm, "m", "busy")
		if err != nil {
			return false, err.Error()
		}
		for _, p := range ps {
			if p.DestinationLogEndOffset <= 0 {
				return false, fmt.Sprintf("partition %d empty", p.Partition)
			}
		}
		return true, ""
	})
	for round := range 2 {
		b.node(1).kill()
		prod.waitAcked(t, prod.acked.Load()+200) // A moves on while B is down
		b.node(1).start()
		waitStates(t, adm, "m", "busy", parts, mirroradmin.StateMirroring)
		t.Logf("round %d: B mirrors again", round)
	}
	prod.waitAcked(t, prod.acked.Load()+200)
	prod.stop()
	if err := prod.failed(); err != nil {
		t.Fatal(err)
	}
	waitSameLogs(t, as, bs, "busy", parts)
}

// TestKillDestinationDuringStopping kills B while a failover is between
// two of its steps (held there by the mirror's crash-test hook): restarted,
// B completes the failover, and every partition holds A's data, byte for
// byte, followed by exactly one MIRROR_PID_RESET barrier, above every
// mirrored epoch.
func TestKillDestinationDuringStopping(t *testing.T) {
	for _, point := range []string{"stopping-fetchers-removed", "stopping-lme-persisted", "stopping-barrier-appended"} {
		t.Run(point, func(t *testing.T) {
			hold := filepath.Join(t.TempDir(), "hold")
			t.Setenv("KMIRROR_TEST_MIRROR_PAUSE", point+":"+hold)
			a := inProcess(t, 1)
			as := seedsOf(a)
			b := startProcs(t, 1, nil)
			bs := b.seeds()
			const parts = 2
			createTopicOn(t, as, "fo", parts)
			produceSome(t, as, "fo", "x", 200)
			adm := newMirrorAdmin(t, bs)
			mirrorFrom(t, adm, "m", as, "fo")
			waitStates(t, adm, "m", "fo", parts, mirroradmin.StateMirroring)
			waitSameLogs(t, as, bs, "fo", parts)
			source := map[int32][]byte{}
			for p := range int32(parts) {
				_, source[p], _ = rawLog(t, as, "fo", p)
			}

			if err := os.WriteFile(hold, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			failover(t, adm, "m", "fo")
			line := waitOutputLine(t, b.node(1).process(), "mirror test pause point reached", "point="+point)
			t.Logf("holding: %s", line)
			b.node(1).kill()
			if err := os.Remove(hold); err != nil {
				t.Fatal(err)
			}
			b.node(1).start()
			waitStates(t, adm, "m", "fo", parts, mirroradmin.StateStopped)
			for p := range int32(parts) {
				_, got, err := rawLog(t, bs, "fo", p)
				if err != nil {
					t.Fatal(err)
				}
				checkFailedOver(t, fmt.Sprintf("fo-%d", p), source[p], got)
			}
			produceSome(t, bs, "fo", "b", 20) // writable
		})
	}
}

// TestKillDestinationDuringStoppingWithOpenTransaction kills B while a
// failover is held in STOPPING and A has a transaction open on every
// partition, whose records B has copied: before the cut at the last stable
// offset (held after the fetchers were removed) and after it (held once the
// Last Mirrored Epoch was persisted). Restarted, B completes the failover,
// and every partition holds A's batches below the open transaction's first
// offset, byte for byte, followed by exactly one MIRROR_PID_RESET barrier:
// the open transaction and the records after it are cut, nothing before
// it.
func TestKillDestinationDuringStoppingWithOpenTransaction(t *testing.T) {
	for _, point := range []string{"stopping-fetchers-removed", "stopping-lme-persisted"} {
		t.Run(point, func(t *testing.T) {
			hold := filepath.Join(t.TempDir(), "hold")
			t.Setenv("KMIRROR_TEST_MIRROR_PAUSE", point+":"+hold)
			a := inProcess(t, 1)
			as := seedsOf(a)
			b := startProcs(t, 1, nil)
			bs := b.seeds()
			const parts = 2
			createTopicOn(t, as, "otx", parts)
			produceSome(t, as, "otx", "before", 100)
			tx := newClient(t, as, kgo.DefaultProduceTopic("otx"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
				kgo.TransactionalID("open"), kgo.TransactionTimeout(5*time.Minute))
			if err := tx.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			for p := range int32(parts) {
				if err := tx.ProduceSync(testCtx(t), &kgo.Record{Partition: p, Value: []byte("uncommitted")}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			produceSome(t, as, "otx", "after", 100) // committed, but above the last stable offset
			adm := newMirrorAdmin(t, bs)
			mirrorFrom(t, adm, "m", as, "otx")
			waitStates(t, adm, "m", "otx", parts, mirroradmin.StateMirroring)
			waitSameLogs(t, as, bs, "otx", parts) // the open transaction copied
			cuts := lastStableOffsets(t, as, "otx", parts)
			kept := map[int32][]byte{}
			for p := range int32(parts) {
				_, src, err := rawLog(t, as, "otx", p)
				if err != nil {
					t.Fatal(err)
				}
				kept[p] = batchesBelow(t, fmt.Sprintf("otx-%d", p), src, cuts[p])
				if len(kept[p]) == 0 || len(kept[p]) == len(src) {
					t.Fatalf("otx-%d: the cut at %d keeps %d of %d bytes; the test needs data on both sides", p, cuts[p], len(kept[p]), len(src))
				}
			}

			if err := os.WriteFile(hold, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			failover(t, adm, "m", "otx")
			for p := range int32(parts) {
				line := waitOutputLine(t, b.node(1).process(), "mirror test pause point reached", "point="+point, fmt.Sprintf("partition=%d ", p))
				t.Logf("holding: %s", line)
			}
			b.node(1).kill()
			if err := os.Remove(hold); err != nil {
				t.Fatal(err)
			}
			b.node(1).start()
			waitStates(t, adm, "m", "otx", parts, mirroradmin.StateStopped)
			for p := range int32(parts) {
				_, got, err := rawLog(t, bs, "otx", p)
				if err != nil {
					t.Fatal(err)
				}
				checkFailedOver(t, fmt.Sprintf("otx-%d", p), kept[p], got)
			}
			produceSome(t, bs, "otx", "b", 20) // writable
		})
	}
}

// TestKillRightAfterFailover kills B as soon as its failover completed:
// recovery replays the MIRROR_PID_RESET barrier, so DescribeProducers shows
// none of the source's producers (which it showed while mirroring), and a
// new idempotent producer writes from sequence 0.
func TestKillRightAfterFailover(t *testing.T) {
	a := inProcess(t, 1)
	as := seedsOf(a)
	b := startProcs(t, 1, nil)
	bs := b.seeds()
	const parts = 2
	createTopicOn(t, as, "pids", parts)
	produceSome(t, as, "pids", "x", 100)
	produceSome(t, as, "pids", "y", 100) // a second producer id
	adm := newMirrorAdmin(t, bs)
	mirrorFrom(t, adm, "m", as, "pids")
	waitStates(t, adm, "m", "pids", parts, mirroradmin.StateMirroring)
	waitSameLogs(t, as, bs, "pids", parts)
	if n := producersOn(t, bs, "pids", parts); n == 0 {
		t.Fatal("B shows no producers while mirroring: the test would prove nothing")
	}

	failover(t, adm, "m", "pids")
	waitStates(t, adm, "m", "pids", parts, mirroradmin.StateStopped)
	b.node(1).kill()
	b.node(1).start()
	if n := producersOn(t, bs, "pids", parts); n != 0 {
		t.Fatalf("B shows %d producers after recovering from a crash right after the failover", n)
	}
	cl := newClient(t, bs, kgo.DefaultProduceTopic("pids"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(parts) {
		if err := cl.ProduceSync(testCtx(t), &kgo.Record{Partition: p, Value: []byte("new")}).FirstErr(); err != nil {
			t.Fatalf("produce to pids-%d after the failover: %v", p, err)
		}
	}
	d, err := kadm.NewClient(newClient(t, bs)).DescribeProducers(testCtx(t), kadm.TopicsSet{"pids": {0: {}, 1: {}}})
	if err != nil {
		t.Fatal(err)
	}
	d.EachPartition(func(p kadm.DescribedProducersPartition) {
		if len(p.ActiveProducers) != 1 || p.ActiveProducers[0].LastSequence != 0 {
			t.Fatalf("pids-%d after one new write: %+v", p.Partition, p.ActiveProducers)
		}
	})
}

// producersOn returns how many producers DescribeProducers shows on the
// partitions of topic.
func producersOn(t testing.TB, seeds []string, topic string, parts int32) int {
	t.Helper()
	set := kadm.TopicsSet{topic: {}}
	for p := range parts {
		set[topic][p] = struct{}{}
	}
	var n int
	waitUntil(t, "DescribeProducers of "+topic, func() (bool, string) {
		d, err := kadm.NewClient(newClient(t, seeds)).DescribeProducers(testCtx(t), set)
		if err != nil {
			return false, err.Error()
		}
		n = 0
		var failed error
		d.EachPartition(func(p kadm.DescribedProducersPartition) {
			if p.Err != nil {
				failed = p.Err
			}
			n += len(p.ActiveProducers)
		})
		if failed != nil {
			return false, failed.Error()
		}
		return true, ""
	})
	return n
}
