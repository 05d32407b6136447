package group

import (
	"slices"
	"testing"
	"time"
)

func tp(topic string, p int32) TopicPartition { return TopicPartition{Topic: topic, Partition: p} }

// TestOffsetsTransactions drives the offset store with tables of committed
// records (plain and transactional) and markers, as replay and the
// runtime's Apply do.
func TestOffsetsTransactions(t *testing.T) {
	type op struct {
		kind     string // "commit", "txn", "marker", "tombstone"
		tp       TopicPartition
		offset   int64 // committed offset
		at       int64 // log offset of the record
		producer int64
		commit   bool
	}
	cases := []struct {
		name    string
		ops     []op
		want    map[TopicPartition]int64
		pending []TopicPartition
	}{
		{"plain commits, the latest wins",
			[]op{{kind: "commit", tp: tp("a", 0), offset: 5, at: 1}, {kind: "commit", tp: tp("a", 0), offset: 9, at: 2}},
			map[TopicPartition]int64{tp("a", 0): 9}, nil},
		{"transactional commit is pending until its marker",
			[]op{{kind: "commit", tp: tp("a", 0), offset: 5, at: 1}, {kind: "txn", tp: tp("a", 0), offset: 7, at: 2, producer: 1}},
			map[TopicPartition]int64{tp("a", 0): 5}, []TopicPartition{tp("a", 0)}},
		{"commit marker installs the pending offsets",
			[]op{{kind: "txn", tp: tp("a", 0), offset: 7, at: 2, producer: 1}, {kind: "txn", tp: tp("a", 1), offset: 8, at: 3, producer: 1},
				{kind: "marker", producer: 1, commit: true, at: 4}},
			map[TopicPartition]int64{tp("a", 0): 7, tp("a", 1): 8}, nil},
		{"abort marker drops them",
			[]op{{kind: "commit", tp: tp("a", 0), offset: 5, at: 1}, {kind: "txn", tp: tp("a", 0), offset: 7, at: 2, producer: 1},
				{kind: "marker", producer: 1, commit: false, at: 3}},
			map[TopicPartition]int64{tp("a", 0): 5}, nil},
		{"a plain commit after the transactional one wins at the marker",
			[]op{{kind: "txn", tp: tp("a", 0), offset: 7, at: 2, producer: 1}, {kind: "commit", tp: tp("a", 0), offset: 9, at: 3},
				{kind: "marker", producer: 1, commit: true, at: 4}},
			map[TopicPartition]int64{tp("a", 0): 9}, nil},
		{"a plain commit before the transactional one loses at the marker",
			[]op{{kind: "commit", tp: tp("a", 0), offset: 9, at: 1}, {kind: "txn", tp: tp("a", 0), offset: 7, at: 2, producer: 1},
				{kind: "marker", producer: 1, commit: true, at: 4}},
			map[TopicPartition]int64{tp("a", 0): 7}, nil},
		{"markers of other producers leave a transaction pending",
			[]op{{kind: "txn", tp: tp("a", 0), offset: 7, at: 2, producer: 1}, {kind: "marker", producer: 2, commit: true, at: 3}},
			map[TopicPartition]int64{}, []TopicPartition{tp("a", 0)}},
		{"tombstone removes a committed offset",
			[]op{{kind: "commit", tp: tp("a", 0), offset: 5, at: 1}, {kind: "tombstone", tp: tp("a", 0), at: 2}},
			map[TopicPartition]int64{}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := (&Coordinator{}).newShard(shardContextForTest())
			for _, o := range c.ops {
				oc := OffsetCommit{Offset: o.offset, LeaderEpoch: -1, ExpireTime: -1}
				switch o.kind {
				case "commit":
					s.applyOffset("g", o.tp, oc, o.at, false, -1)
				case "txn":
					s.applyOffset("g", o.tp, oc, o.at, true, o.producer)
				case "marker":
					s.completeTxn(o.producer, o.commit)
				case "tombstone":
					s.removeOffset("g", o.tp, false, -1)
				}
			}
			got := map[TopicPartition]int64{}
			var pending []TopicPartition
			if o := s.offsets["g"]; o != nil {
				for _, p := range o.Partitions() {
					v, _ := o.Get(p)
					got[p] = v.Offset
				}
				for _, p := range []TopicPartition{tp("a", 0), tp("a", 1)} {
					if o.HasPending(p) {
						pending = append(pending, p)
					}
				}
			}
			if len(got) != len(c.want) {
				t.Fatalf("offsets %v, want %v", got, c.want)
			}
			for p, w := range c.want {
				if got[p] != w {
					t.Fatalf("offsets %v, want %v", got, c.want)
				}
			}
			if !slices.Equal(pending, c.pending) {
				t.Fatalf("pending %v, want %v", pending, c.pending)
			}
		})
	}
}

// TestExpiredOffsets tables Kafka's offsets.retention.minutes rules.
func TestExpiredOffsets(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	ms := func(d time.Duration) int64 { return t0.Add(d).UnixMilli() }
	retention := time.Hour
	standalone := NewGroup("g", t0)
	emptyConsumer := NewGroup("g", t0)
	emptyConsumer.protocolType = ConsumerProtocolType
	emptyConsumer.stateTime = t0.Add(2 * time.Hour) // became Empty at t0+2h
	legacyEmpty := NewGroup("g", t0)
	legacyEmpty.protocolType = ConsumerProtocolType
	legacyEmpty.stateTime = time.Time{} // record without a state timestamp
	stable := NewGroup("g", t0)
	stable.protocolType = ConsumerProtocolType
	stable.state = Stable
	stable.subscribed = map[string]bool{"sub": true}
	stableUnknownSubs := NewGroup("g", t0)
	stableUnknownSubs.protocolType = ConsumerProtocolType
	stableUnknownSubs.state = Stable
	rebalancing := NewGroup("g", t0)
	rebalancing.protocolType = ConsumerProtocolType
	rebalancing.state = PreparingRebalance
	rebalancing.subscribed = map[string]bool{}

	offsets := func() *Offsets {
		o := newOffsets()
		o.commit(tp("sub", 0), OffsetCommit{Offset: 1, CommitTime: ms(0), ExpireTime: -1}, 1)
		o.commit(tp("old", 0), OffsetCommit{Offset: 1, CommitTime: ms(0), ExpireTime: -1}, 2)
		o.commit(tp("new", 0), OffsetCommit{Offset: 1, CommitTime: ms(150 * time.Minute), ExpireTime: -1}, 3)
		o.commit(tp("explicit", 0), OffsetCommit{Offset: 1, CommitTime: ms(150 * time.Minute), ExpireTime: ms(170 * time.Minute)}, 4)
		return o
	}
	cases := []struct {
		name string
		g    *Group
		now  time.Duration
		want []string
	}{
		{"standalone: each offset a retention after its commit", standalone, 140 * time.Minute, []string{"old", "sub"}},
		{"standalone: explicit expire time", standalone, 171 * time.Minute, []string{"explicit", "old", "sub"}},
		{"empty consumer group: a retention after it became Empty, for all", emptyConsumer, 169 * time.Minute, nil},
		{"empty consumer group: expired", emptyConsumer, 3 * time.Hour, []string{"explicit", "new", "old", "sub"}},
		{"empty consumer group: explicit expire times still apply", emptyConsumer, 171 * time.Minute, []string{"explicit"}},
		{"empty group without a state time: commit times", legacyEmpty, 160 * time.Minute, []string{"old", "sub"}},
		{"stable consumer group: unsubscribed topics only", stable, 5 * time.Hour, []string{"explicit", "new", "old"}},
		{"stable group with unknown subscriptions: nothing", stableUnknownSubs, 5 * time.Hour, nil},
		{"rebalancing group: nothing", rebalancing, 5 * time.Hour, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, p := range ExpiredOffsets(c.g, offsets(), t0.Add(c.now), retention) {
				got = append(got, p.Topic)
			}
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Fatalf("expired %v, want %v", got, c.want)
			}
		})
	}
}
