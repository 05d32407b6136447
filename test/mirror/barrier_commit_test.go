package mirror_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
	"github.com/kmirror/kmirror/pkg/mirroradmin"
)

// TestStoppedMeansBarrierCommitted fails a topic over on a three-node
// destination while the partition's follower is paused (SIGSTOP) but still
// in the ISR, so that the failover barrier the leader appends cannot be
// committed: its wait times out (replica.socket.timeout.ms 2 s) and the
// failover retries. The partition must stay STOPPING: a STOPPED partition
// whose barrier no in-sync follower has can lose it to an election. The
// leader is then paused too and the follower resumed, which makes the
// follower the leader, with no barrier in its log: it must fail the
// partition over itself (exactly one MIRROR_PID_RESET in its log, no
// producer of the source left in DescribeProducers). Before the fix, the
// retry found the barrier in the leader's log and declared STOPPED, and
// the new leader took writes with the source's producer states.
//
// The paused follower is the node of the active controller, the hardest
// case: the failover request and the brokers' heartbeats wait for the
// quorum to elect another controller while the paused one's sockets stay
// open. The third node holds __mirror_state (reassigned there) and keeps
// the quorum with whichever of the other two runs.
func TestStoppedMeansBarrierCommitted(t *testing.T) {
	a := inProcess(t, 1)
	as := seedsOf(a)
	b := startProcs(t, 3, map[string]string{
		"default.replication.factor": "2",
		"min.insync.replicas":        "1",
		"replica.lag.time.max.ms":    "60000", // the paused follower stays in the ISR
		"broker.session.timeout.ms":  "15000", // and is not fenced while the barrier waits
		"replica.socket.timeout.ms":  "2000",  // the barrier's commit wait
	})
	bs := b.seeds()
	createTopicOn(t, as, "barrier", 1)
	prod := startProducer(t, as, "barrier", "idem") // idempotent: the source's producers
	prod.waitAcked(t, 200)
	madm := newMirrorAdmin(t, bs)
	mirrorFrom(t, madm, "m", as, "barrier")
	waitStates(t, madm, "m", "barrier", 1, mirroradmin.StateMirroring)

	adm := kadm.NewClient(newClient(t, bs, kgo.MetadataMinAge(10*time.Millisecond)))
	ctx := testCtx(t)
	move := func(topic string, parts int32, target []int32) {
		t.Helper()
		var req kadm.AlterPartitionAssignmentsReq
		for p := range parts {
			req.Assign(topic, p, target)
		}
		resp, err := adm.AlterPartitionAssignments(ctx, req)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("move %s to %v: %v", topic, target, err)
		}
		waitUntil(t, fmt.Sprintf("%s on %v", topic, target), func() (bool, string) {
			md, err := adm.Metadata(ctx, topic)
			if err != nil {
				return false, err.Error()
			}
			for p := range parts {
				pd := md.Topics[topic].Partitions[p]
				if !slices.Equal(pd.Replicas, target) || !slices.Contains(target, pd.Leader) || len(pd.ISR) != len(target) {
					return false, fmt.Sprintf("%s-%d: replicas %v isr %v leader %d", topic, p, pd.Replicas, pd.ISR, pd.Leader)
				}
			}
			return true, ""
		})
	}
	// The follower to pause is the active controller's node.
	followerID := quorumLeader(t, b.node(1).addr())
	var others []int32
	for id := int32(1); id <= 3; id++ {
		if id != followerID {
			others = append(others, id)
		}
	}
	leaderID, stateID := others[0], others[1]
	move("__mirror_state", 5, []int32{stateID})
	move("barrier", 1, []int32{leaderID, followerID})
	waitUntil(t, fmt.Sprintf("node %d to lead barrier-0", leaderID), func() (bool, string) {
		if _, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"barrier": {0: {}}}); err != nil {
			return false, err.Error()
		}
		l := leaderOf(ctx, adm, "barrier", 0)
		return l == leaderID, fmt.Sprintf("leader %d", l)
	})
	prod.waitAcked(t, prod.acked.Load()+100)
	prod.stop()
	if err := prod.failed(); err != nil {
		t.Fatal(err)
	}
	waitSameLogs(t, as, bs, "barrier", 1)
	if n := producersOn(t, bs, "barrier", 1); n == 0 {
		t.Fatal("DescribeProducers shows no producer of the source while mirroring")
	}

	leader, follower := b.node(leaderID), b.node(followerID)
	if id := quorumLeader(t, leader.addr()); id != followerID {
		t.Logf("the active controller moved to node %d before the pause", id)
	}
	follower.process().Signal(syscall.SIGSTOP)
	// While a node is paused, the mirror requests go to a chosen running
	// broker: a client routing by its metadata may pick the paused one
	// (it accepts connections and never answers), e.g. as the controller.
	// The paused node may be the active controller: the broker's
	// forwarding waits for the quorum's new one.
	waitUntil(t, "the failover request taken", func() (bool, string) {
		resp, err := requestTo(leader.addr(), (*wire.RemoveTopicsFromMirrorRequest)(&wire.MirrorTopicsRequest{
			MirrorName: "m", TimeoutMillis: 30000, Topics: []wire.MirrorTopicsRequestTopic{{Name: "barrier"}}}))
		if err != nil {
			return false, err.Error()
		}
		r := resp.(*wire.RemoveTopicsFromMirrorResponse)
		if r.ErrorCode != 0 || len(r.Topics) != 1 {
			return false, fmt.Sprintf("%+v", r)
		}
		code := r.Topics[0].ErrorCode
		return code == 0 || strings.Contains(deref(r.Topics[0].ErrorMessage), "REMOVED"), fmt.Sprintf("%v %s", kerr.ErrorForCode(code), deref(r.Topics[0].ErrorMessage))
	})
	// The barrier's commit wait ended twice, or (the bug) STOPPED.
	waitUntil(t, "two failed waits for the barrier, or STOPPED", func() (bool, string) {
		fails := strings.Count(leader.process().Output(), "failover step failed")
		if st, err := stateVia(leader.addr(), "m", "barrier"); err == nil && st == wire.MirrorStateStopped {
			return true, ""
		}
		return fails >= 2, fmt.Sprintf("%d failed waits", fails)
	})
	if st, err := stateVia(leader.addr(), "m", "barrier"); err != nil || st != wire.MirrorStateStopping {
		t.Errorf("barrier-0 is %v (%v) while its barrier is not committed, want STOPPING", st, err)
	}

	// The leader goes away (paused: fenced after its session), the
	// follower comes back and leads a log without the barrier.
	leader.process().Signal(syscall.SIGSTOP)
	follower.process().Signal(syscall.SIGCONT)
	live := []string{follower.addr(), b.node(stateID).addr()}
	leaderOn(t, live, "barrier", 0, leaderID)
	waitUntil(t, "barrier-0 STOPPED under its new leader", func() (bool, string) {
		st, err := stateVia(follower.addr(), "m", "barrier")
		return err == nil && st == wire.MirrorStateStopped, fmt.Sprint(st, err)
	})
	_, log, err := rawLog(t, live, "barrier", 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := barriers(headers(t, log)); n != 1 {
		t.Errorf("the new leader's log has %d MIRROR_PID_RESET barriers, want 1", n)
	}
	if n := producersOn(t, live, "barrier", 1); n != 0 {
		t.Errorf("DescribeProducers shows %d producers after the failover, want none of the source's", n)
	}
	produceSome(t, live, "barrier", "b", 10) // writable

	// The old leader rejoins and ends with the same log.
	leader.kill()
	leader.start()
	waitFullISR(t, bs, "barrier", 1)
}

// requestTo sends req to the broker at addr itself.
func requestTo(addr string, req kmsg.Request) (kmsg.Response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := wire.Dial(ctx, "tcp", addr, "barrier-test")
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.Request(ctx, req)
}

// quorumLeader asks the broker at addr for the metadata quorum's leader
// (DescribeQuorum), retrying while none is known.
func quorumLeader(t testing.TB, addr string) int32 {
	t.Helper()
	var leader int32 = -1
	waitUntil(t, "the metadata quorum's leader", func() (bool, string) {
		req := kmsg.NewPtrDescribeQuorumRequest()
		tp := kmsg.NewDescribeQuorumRequestTopic()
		tp.Topic = "__cluster_metadata"
		tp.Partitions = append(tp.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
		req.Topics = append(req.Topics, tp)
		resp, err := requestTo(addr, req)
		if err != nil {
			return false, err.Error()
		}
		r := resp.(*kmsg.DescribeQuorumResponse)
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return false, err.Error()
		}
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return false, fmt.Sprintf("%+v", r)
		}
		p := r.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil || p.LeaderID < 0 {
			return false, fmt.Sprintf("leader %d: %v", p.LeaderID, err)
		}
		leader = p.LeaderID
		return true, ""
	})
	return leader
}

// stateVia asks the broker at addr for the state of partition 0 of a
// mirrored topic (DescribeMirrors).
func stateVia(addr, mirror, topic string) (wire.MirrorPartitionState, error) {
	resp, err := requestTo(addr, &wire.DescribeMirrorsRequest{MirrorNames: []string{mirror}, IncludePartitions: true})
	if err != nil {
		return 0, err
	}
	for _, m := range resp.(*wire.DescribeMirrorsResponse).Mirrors {
		for _, tp := range m.Topics {
			if tp.Name == topic && len(tp.Partitions) > 0 {
				return tp.Partitions[0].State, nil
			}
		}
	}
	return 0, fmt.Errorf("%s not described in mirror %s", topic, mirror)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
