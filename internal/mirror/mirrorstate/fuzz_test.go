package mirrorstate

import (
	"bytes"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to every decoder: they must not panic,
// and whatever decodes must encode back to the same bytes (the format has
// one encoding per value, which compaction relies on for keys).
func FuzzDecode(f *testing.F) {
	f.Add(EncodePartitionKey(PartitionKey{Mirror: "m", TopicID: testTopicID, Partition: 1}))
	f.Add(EncodeLMEKey(LMEKey{TopicID: testTopicID, Partition: 1}))
	f.Add(EncodePartitionValue(PartitionValue{State: 2, StateEpoch: 3, SourceClusterID: "s"}))
	f.Add(EncodeLMEValue(LMEValue{Mirror: "m", SourceClusterID: "s", LastMirroredEpoch: 2, EndOffset: 10}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if k, err := DecodeKey(b); err == nil {
			var again []byte
			switch k.Type {
			case TypePartitionState:
				again = EncodePartitionKey(k.Partition)
			case TypeLastMirroredEpoch:
				again = EncodeLMEKey(k.LME)
			}
			if !bytes.Equal(again, b) {
				t.Fatalf("key % x re-encodes as % x", b, again)
			}
		}
		if v, err := DecodePartitionValue(b); err == nil {
			// Unknown tags are dropped on decode; without them the bytes
			// must come back unchanged.
			if again := EncodePartitionValue(v); len(again) == len(b) && !bytes.Equal(again, b) {
				t.Fatalf("value % x re-encodes as % x", b, again)
			}
		}
		if v, err := DecodeLMEValue(b); err == nil {
			_ = EncodeLMEValue(v)
		}
	})
}
