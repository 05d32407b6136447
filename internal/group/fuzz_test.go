package group

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/coordinator"
)

// FuzzDecode feeds arbitrary __consumer_offsets records through the path a
// loading shard takes (Shard.Replay): it must never panic, and a record
// that decodes must survive re-encoding unchanged in meaning.
func FuzzDecode(f *testing.F) {
	f.Add(EncodeOffsetKey("g", TopicPartition{Topic: "t", Partition: 3}),
		EncodeOffsetValue(OffsetCommit{Offset: 42, LeaderEpoch: 7, Metadata: "m", CommitTime: 1000, ExpireTime: -1}))
	f.Add(EncodeGroupKey("g"), EncodeGroupValue(Snapshot{
		ProtocolType: "consumer", Protocol: "range", Generation: 3, Leader: "m1", StateTime: time.UnixMilli(5000),
		Members: []SnapshotMember{{ID: "m1", InstanceID: "i1", ClientID: "c", ClientHost: "/h",
			RebalanceTimeout: time.Minute, SessionTimeout: 10 * time.Second, Subscription: subscription("t"), Assignment: []byte{1}}},
	}))
	f.Add([]byte{0, 2, 0, 1, 'g'}, []byte{})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		if len(value) == 0 {
			value = nil // the corpus cannot say nil: an empty value stands for a tombstone
		}
		c := &Coordinator{cfg: DefaultConfig(), waiters: newWaiters()}
		c.machine = c.cfg.machine()
		s := c.newShard(coordinator.ShardContext[*shard]{Clock: coordinator.NewManualClock(time.Unix(0, 0))})
		_ = s.Replay(coordinator.LoggedRecord{Offset: 1, ProducerID: -1, Key: key, Value: value})
		_ = s.Replay(coordinator.LoggedRecord{Offset: 2, ProducerID: 9, Transactional: true, Key: key, Value: value})
		_ = s.ReplayMarker(3, coordinator.Marker{ProducerID: 9, Commit: true})

		k, err := DecodeKey(key)
		if err != nil || value == nil {
			return
		}
		switch k.Kind {
		case OffsetKey:
			if !bytes.Equal(EncodeOffsetKey(k.Group, TopicPartition{Topic: k.Topic, Partition: k.Partition})[2:], key[2:]) {
				// Only the version prefix may differ (0 or 1); trailing bytes
				// are tolerated on decode.
				if k2, err := DecodeKey(EncodeOffsetKey(k.Group, TopicPartition{Topic: k.Topic, Partition: k.Partition})); err != nil || k2 != k {
					t.Fatalf("offset key %+v does not round-trip: %+v %v", k, k2, err)
				}
			}
			o, err := DecodeOffsetValue(value)
			if err != nil {
				return
			}
			o2, err := DecodeOffsetValue(EncodeOffsetValue(o))
			if err != nil {
				t.Fatalf("re-encoded offset value does not decode: %v", err)
			}
			if o.ExpireTime >= 0 {
				o.LeaderEpoch = -1 // the expire-time version has no leader epoch
			}
			if o2 != o {
				t.Fatalf("offset value %+v became %+v", o, o2)
			}
		case GroupKey:
			snap, err := DecodeGroupValue(value)
			if err != nil {
				return
			}
			if _, err := Restore(k.Group, snap, time.Unix(0, 0)); err != nil {
				return
			}
			snap2, err := DecodeGroupValue(EncodeGroupValue(snap))
			if err != nil {
				t.Fatalf("re-encoded group value does not decode: %v", err)
			}
			normalize := func(s *Snapshot) {
				for i := range s.Members {
					m := &s.Members[i]
					if len(m.Subscription) == 0 {
						m.Subscription = nil
					}
					if len(m.Assignment) == 0 {
						m.Assignment = nil
					}
					m.RebalanceTimeout = m.RebalanceTimeout.Truncate(time.Millisecond)
					m.SessionTimeout = m.SessionTimeout.Truncate(time.Millisecond)
				}
				if len(s.Members) == 0 {
					s.Members = nil
				}
			}
			normalize(&snap)
			normalize(&snap2)
			if !reflect.DeepEqual(snap, snap2) {
				t.Fatalf("group value %+v became %+v", snap, snap2)
			}
		}
	})
}

// FuzzParseSubscription feeds arbitrary consumer member metadata (client
// bytes) to the subscription parser.
func FuzzParseSubscription(f *testing.F) {
	f.Add(subscription("a", "b"))
	f.Add([]byte{0, 1, 0, 0, 0, 1, 0, 1, 'x'})
	f.Add([]byte{0, 0, 0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		topics, err := ParseSubscriptionTopics(b)
		if err == nil && len(topics)*2 > len(b) {
			t.Fatalf("%d topics from %d bytes", len(topics), len(b))
		}
	})
}
