package mirrorstate

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"testing"

	"github.com/kmirror/kmirror/internal/wire"
)

var testTopicID = [16]byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}

func TestPartitionRecordRoundTrip(t *testing.T) {
	k := PartitionKey{Mirror: "west", TopicID: testTopicID, Partition: 7}
	kb := EncodePartitionKey(k)
	got, err := DecodeKey(kb)
	if err != nil {
		t.Fatal(err)
	}
	if got.Type != TypePartitionState || got.Partition != k {
		t.Fatalf("key %+v, want %+v", got, k)
	}
	v := PartitionValue{State: wire.MirrorStateFailed, StateEpoch: 12, LeaderEpoch: 3,
		SourceClusterID: "src-cluster", LastError: "source topic deleted", UpdateMillis: 1700000000123}
	gv, err := DecodePartitionValue(EncodePartitionValue(v))
	if err != nil {
		t.Fatal(err)
	}
	if gv != v {
		t.Fatalf("value %+v, want %+v", gv, v)
	}
}

func TestLMERecordRoundTrip(t *testing.T) {
	k := LMEKey{TopicID: testTopicID, Partition: 2}
	got, err := DecodeKey(EncodeLMEKey(k))
	if err != nil {
		t.Fatal(err)
	}
	if got.Type != TypeLastMirroredEpoch || got.LME != k {
		t.Fatalf("key %+v, want %+v", got, k)
	}
	v := LMEValue{Mirror: "m", SourceClusterID: "A", LastMirroredEpoch: 4, EndOffset: 991, UpdateMillis: 5}
	gv, err := DecodeLMEValue(EncodeLMEValue(v))
	if err != nil {
		t.Fatal(err)
	}
	if gv != v {
		t.Fatalf("value %+v, want %+v", gv, v)
	}
}

// TestEncodingIsStable pins the byte layout: it is an on-disk format that
// other kmirror versions read.
func TestEncodingIsStable(t *testing.T) {
	key := EncodePartitionKey(PartitionKey{Mirror: "ab", TopicID: testTopicID, Partition: 1})
	want := append([]byte{0, 0, 3, 'a', 'b'}, testTopicID[:]...)
	want = append(want, 0, 0, 0, 1)
	if !bytes.Equal(key, want) {
		t.Fatalf("partition key % x\nwant          % x", key, want)
	}
	val := EncodePartitionValue(PartitionValue{State: wire.MirrorStateMirroring, StateEpoch: 2, LeaderEpoch: 1, SourceClusterID: "c", UpdateMillis: 9})
	wantVal := []byte{0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 1, 2, 'c', 1, 0, 0, 0, 0, 0, 0, 0, 9, 0}
	if !bytes.Equal(val, wantVal) {
		t.Fatalf("partition value % x\nwant            % x", val, wantVal)
	}
	lk := EncodeLMEKey(LMEKey{TopicID: testTopicID, Partition: 3})
	wantLK := append([]byte{0, 1}, testTopicID[:]...)
	wantLK = append(wantLK, 0, 0, 0, 3)
	if !bytes.Equal(lk, wantLK) {
		t.Fatalf("lme key % x\nwant    % x", lk, wantLK)
	}
}

func TestDecodeMalformed(t *testing.T) {
	goodKey := EncodePartitionKey(PartitionKey{Mirror: "m", TopicID: testTopicID, Partition: 1})
	goodVal := EncodePartitionValue(PartitionValue{State: wire.MirrorStatePaused, StateEpoch: 1})
	goodLME := EncodeLMEValue(LMEValue{Mirror: "m", SourceClusterID: "x", LastMirroredEpoch: 1, EndOffset: 2})
	badState := append([]byte(nil), goodVal...)
	badState[2] = 99
	badVersion := append([]byte(nil), goodVal...)
	badVersion[1] = 1
	cases := map[string]func() error{
		"empty key":          func() error { _, err := DecodeKey(nil); return err },
		"unknown key type":   func() error { _, err := DecodeKey([]byte{0, 9, 1}); return err },
		"truncated key":      func() error { _, err := DecodeKey(goodKey[:len(goodKey)-1]); return err },
		"trailing key bytes": func() error { _, err := DecodeKey(append(append([]byte(nil), goodKey...), 0)); return err },
		"huge string length": func() error { _, err := DecodeKey([]byte{0, 0, 0xff, 0xff, 0xff, 0x0f}); return err },
		"empty value":        func() error { _, err := DecodePartitionValue(nil); return err },
		"truncated value":    func() error { _, err := DecodePartitionValue(goodVal[:5]); return err },
		"unknown state":      func() error { _, err := DecodePartitionValue(badState); return err },
		"newer version":      func() error { _, err := DecodePartitionValue(badVersion); return err },
		"trailing value":     func() error { _, err := DecodePartitionValue(append(append([]byte(nil), goodVal...), 1)); return err },
		"truncated lme":      func() error { _, err := DecodeLMEValue(goodLME[:len(goodLME)-2]); return err },
	}
	for name, f := range cases {
		if err := f(); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", name, err)
		}
	}
}

func TestPartitionForIsFNV1a(t *testing.T) {
	for _, tc := range []struct {
		mirror string
		part   int32
		n      int32
	}{{"west", 0, 50}, {"west", 1, 50}, {"", 5, 50}, {"a-very-long-mirror-name.with.dots", 1 << 30, 7}, {"m", -1, 3}} {
		h := fnv.New32a()
		h.Write([]byte(tc.mirror))
		h.Write(testTopicID[:])
		var p [4]byte
		binary.BigEndian.PutUint32(p[:], uint32(tc.part))
		h.Write(p[:])
		want := int32(h.Sum32() % uint32(tc.n))
		if got := PartitionFor(tc.mirror, testTopicID, tc.part, tc.n); got != want {
			t.Errorf("PartitionFor(%q, %d, %d) = %d, want %d", tc.mirror, tc.part, tc.n, got, want)
		}
	}
	if LMEPartitionFor(testTopicID, 3, 50) != PartitionFor("", testTopicID, 3, 50) {
		t.Fatal("LMEPartitionFor is not PartitionFor with an empty mirror name")
	}
	if PartitionFor("m", testTopicID, 0, 0) != 0 {
		t.Fatal("no partitions must map to 0")
	}
	// A pinned value: changing the hash would move every stored state.
	if got := PartitionFor("west", [16]byte{}, 0, 50); got != 48 {
		t.Fatalf("PartitionFor(west, zero id, 0, 50) = %d; the hash changed", got)
	}
}

func TestRecordTypeString(t *testing.T) {
	if TypePartitionState.String() != "MirrorPartitionState" || TypeLastMirroredEpoch.String() != "LastMirroredEpochs" || RecordType(5).String() != "RecordType(5)" {
		t.Fatal("record type names")
	}
}
