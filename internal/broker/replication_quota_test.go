package broker

import (
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestReplicationQuotaRate(t *testing.T) {
	q := newReplicationQuota(11, 1)
	t0 := time.Unix(1_700_000_000, 0)
	if r := q.rate(t0); r != 0 {
		t.Fatalf("rate %v with nothing sent", r)
	}
	// A first burst is spread over at least ten samples.
	q.record(1000, t0)
	if r := q.rate(t0.Add(100 * time.Millisecond)); r != 100 {
		t.Fatalf("rate %v after 1000 bytes at once, want 100 (over 10 s)", r)
	}
	if !q.exceeded(99, t0) || q.exceeded(100, t0) || q.exceeded(math.MaxInt64, t0) {
		t.Fatal("exceeded does not compare the rate with the limit")
	}
	// Over a long stretch the rate is the bytes over the time since the
	// oldest sample in the window.
	for s := 1; s <= 20; s++ {
		q.record(1000, t0.Add(time.Duration(s)*time.Second))
	}
	if r := q.rate(t0.Add(20*time.Second + 500*time.Millisecond)); r < 1000 || r > 1100 {
		t.Fatalf("rate %v at a steady 1000 bytes a second", r)
	}
	// Samples older than the window are forgotten.
	if r := q.rate(t0.Add(40 * time.Second)); r != 0 {
		t.Fatalf("rate %v long after the last bytes", r)
	}
}

func TestThrottledReplicaList(t *testing.T) {
	cases := []struct {
		list              []string
		partition, broker int32
		want              bool
	}{
		{[]string{"*"}, 3, 7, true},
		{[]string{"0:1", "1:2"}, 1, 2, true},
		{[]string{"0:1", "1:2"}, 1, 1, false},
		{[]string{" 0 : 1 "}, 0, 1, true},
		{nil, 0, 1, false},
		{[]string{"x:1"}, 0, 1, false},
	}
	for _, c := range cases {
		if got := throttledReplica(c.list, c.partition, c.broker); got != c.want {
			t.Errorf("throttledReplica(%q, %d, %d) = %v", c.list, c.partition, c.broker, got)
		}
	}
}

// TestLeaderThrottlesCatchingUpFollowers: with a partition listed in
// leader.replication.throttled.replicas for this broker (1) and a rate of
// one byte a second, a follower outside the ISR gets one fetch's worth of
// records and then none while the rate is above the limit; a follower in
// the ISR, and followers of a partition not listed, are never held back.
func TestLeaderThrottlesCatchingUpFollowers(t *testing.T) {
	e := newEnv(t, map[string]string{"leader.replication.throttled.rate": "1"})
	e.registerBroker3(false)
	e.createTopicWith("slow", 1, 1, []int32{1, 2, 3}, []int32{1, 2}, map[string]string{"leader.replication.throttled.replicas": "0:1"})
	e.createTopicWith("free", 1, 1, []int32{1, 2, 3}, []int32{1, 2}, nil)
	for _, topic := range []string{"slow", "free"} {
		for _, v := range []string{"a", "b", "c"} {
			if rp := e.produce(9, 1, topic, 0, makeBatch(t, plainBatch(), v)); rp.ErrorCode != 0 {
				t.Fatal(kerr.ErrorForCode(rp.ErrorCode))
			}
		}
	}
	// Follower 2 (in the ISR) has everything, so the high watermark is the
	// log end and follower 3, fetching from 0, stays behind it: it must not
	// join the ISR during the test.
	for _, topic := range []string{"slow", "free"} {
		e.followerFetch(2, 12, topic, 3, 0)
	}
	records := func(id int32, epoch int64, topic string) int {
		t.Helper()
		r := e.followerFetch(id, epoch, topic, 0, 0)
		if r.ErrorCode != 0 {
			t.Fatalf("%s fetch of %d: %v", topic, id, kerr.ErrorForCode(r.ErrorCode))
		}
		if r.HighWatermark < 0 || r.LogStartOffset != 0 {
			t.Fatalf("%s fetch of %d: high watermark %d, log start %d", topic, id, r.HighWatermark, r.LogStartOffset)
		}
		return len(r.RecordBatches)
	}
	if n := records(3, 13, "slow"); n == 0 {
		t.Fatal("the first throttled fetch got no records though nothing was sent yet")
	}
	if n := records(3, 13, "slow"); n != 0 {
		t.Fatalf("a follower outside the ISR got %d bytes of a throttled partition over the rate", n)
	}
	if n := records(2, 12, "slow"); n == 0 {
		t.Fatal("a follower in the ISR was throttled")
	}
	if n := records(3, 13, "free"); n == 0 {
		t.Fatal("a partition not listed was throttled")
	}
}
