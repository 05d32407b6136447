package record

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

// sampleRecords covers null and empty keys and values, headers with null
// and empty values, negative and large timestamp deltas and multi-byte
// varints.
func sampleRecords() []Record {
	big := bytes.Repeat([]byte{'v'}, 70000)
	recs := []Record{
		{Key: []byte("k"), Value: []byte("v")},
		{Key: nil, Value: nil}, // tombstone with null key
		{Key: []byte{}, Value: []byte{}},
		{TimestampDelta: -5, Key: []byte("neg"), Value: big},
		{TimestampDelta: math.MaxInt64 / 4, Attributes: 0x7f, Value: []byte("attrs kept")},
		{Value: []byte("h"), Headers: []RecordHeader{
			{Key: "a", Value: []byte("1")},
			{Key: "", Value: nil},
			{Key: "ünïcode", Value: []byte{}},
		}},
	}
	NumberRecords(recs)
	return recs
}

func TestRecordsRoundTripAllCodecs(t *testing.T) {
	want := sampleRecords()
	for _, c := range allCodecs {
		spec := BatchSpec{BaseOffset: 1000, ProducerID: 5, ProducerEpoch: 1, BaseSequence: 10, Codec: c, BaseTimestamp: 1 << 40}
		b, err := Build(spec, want)
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		if err := ValidateRecords(b, true, 0); err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		h, _ := ParseHeader(b)
		if h.Codec() != c || h.NumRecords != int32(len(want)) || h.LastOffsetDelta != int32(len(want)-1) ||
			h.MaxTimestamp != spec.BaseTimestamp+math.MaxInt64/4 || h.BaseTimestamp != spec.BaseTimestamp ||
			h.LastSequence() != 15 {
			t.Fatalf("%v: header %+v", c, h)
		}
		got, err := Records(b, 0)
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%v: %d records, want %d", c, len(got), len(want))
		}
		for i := range want {
			if !recordsEqual(got[i], want[i]) {
				t.Fatalf("%v: record %d = %+v, want %+v", c, i, got[i], want[i])
			}
		}
		var n int
		err = ForEachRecord(b, 0, func(r Record) error {
			if !recordsEqual(r, want[n]) {
				t.Fatalf("%v: ForEachRecord record %d differs", c, n)
			}
			n++
			return nil
		})
		if err != nil || n != len(want) {
			t.Fatalf("%v: ForEachRecord saw %d records, %v", c, n, err)
		}
	}
}

func TestForEachRecordStops(t *testing.T) {
	b, _ := Build(BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, sampleRecords())
	n := 0
	err := ForEachRecord(b, 0, func(Record) error {
		n++
		if n == 2 {
			return ErrStop
		}
		return nil
	})
	if err != nil || n != 2 {
		t.Fatalf("ErrStop: n=%d err=%v", n, err)
	}
	mine := errors.New("mine")
	n = 0
	err = ForEachRecord(b, 0, func(Record) error { n++; return mine })
	if err != mine || n != 1 {
		t.Fatalf("callback error: n=%d err=%v, want the callback's own error", n, err)
	}
}

func TestBuildComputesHeaderFromRecords(t *testing.T) {
	recs := []Record{{OffsetDelta: 0, TimestampDelta: 3}, {OffsetDelta: 4, TimestampDelta: -2}, {OffsetDelta: 9, TimestampDelta: 1}}
	b, err := Build(BatchSpec{BaseOffset: 100, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, BaseTimestamp: 50, TimestampType: LogAppendTime}, recs)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := ParseHeader(b)
	if h.LastOffsetDelta != 9 || h.NextOffset() != 110 || h.MaxTimestamp != 53 || h.TimestampType() != LogAppendTime || h.NumRecords != 3 {
		t.Fatalf("header %+v", h)
	}
	// Gapped offsets are valid in a log (compaction) but not from a producer.
	if err := ValidateRecords(b, false, 0); err != nil {
		t.Fatalf("lenient: %v", err)
	}
	if err := ValidateRecords(b, true, 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("strict: %v", err)
	}

	// All timestamps before the base: MaxTimestamp is the greatest, not the base.
	b, _ = Build(BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, BaseTimestamp: 50}, []Record{{TimestampDelta: -10}, {OffsetDelta: 1, TimestampDelta: -20}})
	if h, _ := ParseHeader(b); h.MaxTimestamp != 40 {
		t.Fatalf("MaxTimestamp = %d, want 40", h.MaxTimestamp)
	}

	// An empty batch, as compaction leaves to keep producer state.
	b, err = Build(BatchSpec{BaseOffset: 7, ProducerID: 3, ProducerEpoch: 0, BaseSequence: 0, BaseTimestamp: 50}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := ParseHeader(b); h.NumRecords != 0 || h.Size() != HeaderSize || h.MaxTimestamp != 50 {
		t.Fatalf("empty batch header %+v", h)
	}
	if err := ValidateRecords(b, false, 0); err != nil {
		t.Fatalf("empty batch, lenient: %v", err)
	}
	if err := ValidateRecords(b, true, 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("empty batch, strict: %v", err)
	}
	if recs, err := Records(b, 0); err != nil || len(recs) != 0 {
		t.Fatalf("Records of empty batch: %v, %v", recs, err)
	}
	// Compressed empty batches carry an empty compressed stream.
	for _, c := range allCodecs[1:] {
		b, err := Build(BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Codec: c}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == HeaderSize {
			t.Errorf("%v: empty batch has no compressed stream", c)
		}
		if err := ValidateRecords(b, false, 0); err != nil {
			t.Errorf("%v: empty compressed batch: %v", c, err)
		}
	}
}

func TestBuildRejectsBadInput(t *testing.T) {
	spec := BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	for name, recs := range map[string][]Record{
		"repeated delta":   {{OffsetDelta: 0}, {OffsetDelta: 0}},
		"decreasing delta": {{OffsetDelta: 3}, {OffsetDelta: 2}},
		"negative delta":   {{OffsetDelta: -1}},
	} {
		if _, err := Build(spec, recs); err == nil {
			t.Errorf("%s: Build accepted", name)
		}
	}
	spec.Codec = 5
	if _, err := Build(spec, []Record{{}}); err == nil {
		t.Error("codec 5 accepted")
	}
}

func TestRecordsDoNotTrustCounts(t *testing.T) {
	// Header claims MaxInt32 records; ten bytes follow.
	b := assemble(t, CodecNone, math.MaxInt32, math.MaxInt32-1, make([]byte, 10))
	var err error
	allocated := bytesAllocated(func() { _, err = Records(b, 0) })
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("err = %v", err)
	}
	if allocated > 64<<10 {
		t.Fatalf("Records allocated %d bytes for a 10-byte payload", allocated)
	}
	// A record claiming MaxInt32 headers in a few bytes.
	rec := []byte{0}
	rec = append(rec, 0, 0, 1, 1)               // attributes, ts, offset, null key, null value
	rec = appendVarint(rec, math.MaxInt32)      // header count
	rec = append(rec, 0, 0)                     // one header's worth of bytes
	raw := appendVarint(nil, int32(len(rec)-1)) // length excludes the placeholder
	raw = append(raw, rec[1:]...)
	b = assemble(t, CodecNone, 1, 0, raw)
	allocated = bytesAllocated(func() { _, err = Records(b, 0) })
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("header count: err = %v", err)
	}
	if allocated > 64<<10 {
		t.Fatalf("Records allocated %d bytes for a record claiming 2^31 headers", allocated)
	}
}
