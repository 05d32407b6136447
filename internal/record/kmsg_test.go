package record

import (
	"bytes"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// These tests check the encoding against franz-go's kmsg, an independent
// implementation of the v2 batch and record layout.

// kmsgBatch encodes records with kmsg the way a franz-go producer lays them
// out, uncompressed, with the CRC computed by hash/crc32 directly.
func kmsgBatch(t *testing.T, base int64, recs []kmsg.Record, attrs int16) []byte {
	t.Helper()
	var raw []byte
	for i := range recs {
		r := recs[i]
		r.Length = 0
		body := r.AppendTo(nil)
		r.Length = int32(len(body) - 1) // a zero length encodes as one byte
		raw = r.AppendTo(raw)
	}
	rb := kmsg.RecordBatch{
		FirstOffset:          base,
		PartitionLeaderEpoch: 3,
		Magic:                2,
		Attributes:           attrs,
		LastOffsetDelta:      recs[len(recs)-1].OffsetDelta,
		FirstTimestamp:       1000,
		MaxTimestamp:         1009,
		ProducerID:           17,
		ProducerEpoch:        2,
		FirstSequence:        40,
		NumRecords:           int32(len(recs)),
		Records:              raw,
	}
	rb.Length = int32(HeaderSize - 12 + len(raw))
	b := rb.AppendTo(nil)
	rb.CRC = int32(crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return rb.AppendTo(nil)
}

func TestDecodeKmsgBatch(t *testing.T) {
	krecs := []kmsg.Record{
		{TimestampDelta64: 0, OffsetDelta: 0, Key: []byte("a"), Value: []byte("1")},
		{TimestampDelta64: 9, OffsetDelta: 1, Key: nil, Value: bytes.Repeat([]byte("x"), 300),
			Headers: []kmsg.Header{{Key: "h1", Value: []byte("v1")}, {Key: "h2", Value: nil}}},
		{TimestampDelta64: -3, OffsetDelta: 2, Key: []byte{}, Value: nil},
	}
	b := kmsgBatch(t, 500, krecs, 0x10)
	if err := ValidateRecords(b, true, 0); err != nil {
		t.Fatal(err)
	}
	h, err := ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.BaseOffset != 500 || h.PartitionLeaderEpoch != 3 || !h.IsTransactional() || h.LastOffsetDelta != 2 ||
		h.BaseTimestamp != 1000 || h.MaxTimestamp != 1009 || h.ProducerID != 17 || h.ProducerEpoch != 2 ||
		h.BaseSequence != 40 || h.NumRecords != 3 || h.LastSequence() != 42 {
		t.Fatalf("header %+v", h)
	}
	got, err := Records(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, kr := range krecs {
		want := Record{TimestampDelta: kr.TimestampDelta64, OffsetDelta: kr.OffsetDelta, Key: kr.Key, Value: kr.Value}
		for _, kh := range kr.Headers {
			want.Headers = append(want.Headers, RecordHeader{Key: kh.Key, Value: kh.Value})
		}
		if !recordsEqual(got[i], want) {
			t.Errorf("record %d = %+v, want %+v", i, got[i], want)
		}
	}
}

func TestKmsgDecodesOurBatch(t *testing.T) {
	want := sampleRecords()
	spec := BatchSpec{BaseOffset: 9, PartitionLeaderEpoch: 4, ProducerID: 8, ProducerEpoch: 1, BaseSequence: 3,
		Transactional: true, BaseTimestamp: 1 << 41}
	b, err := Build(spec, want)
	if err != nil {
		t.Fatal(err)
	}
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	if rb.FirstOffset != 9 || rb.PartitionLeaderEpoch != 4 || rb.Magic != 2 || int(rb.Length) != len(b)-12 ||
		uint32(rb.CRC) != crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)) ||
		rb.Attributes != 0x10 || rb.ProducerID != 8 || rb.ProducerEpoch != 1 || rb.FirstSequence != 3 ||
		rb.NumRecords != int32(len(want)) || rb.LastOffsetDelta != int32(len(want)-1) || rb.FirstTimestamp != 1<<41 {
		t.Fatalf("kmsg read %+v", rb)
	}
	data := rb.Records
	for i := range want {
		r := kbin.Reader{Src: data}
		l := r.Varint()
		n := len(data) - len(r.Src) + int(l)
		var kr kmsg.Record
		if !r.Ok() || n > len(data) {
			t.Fatalf("record %d: bad length", i)
		}
		if err := kr.ReadFrom(data[:n]); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		data = data[n:]
		got := Record{Attributes: kr.Attributes, TimestampDelta: kr.TimestampDelta64, OffsetDelta: kr.OffsetDelta, Key: kr.Key, Value: kr.Value}
		for _, kh := range kr.Headers {
			got.Headers = append(got.Headers, RecordHeader{Key: kh.Key, Value: kh.Value})
		}
		if !recordsEqual(got, want[i]) {
			t.Errorf("record %d: kmsg read %+v, want %+v", i, got, want[i])
		}
		// Re-encoding with kmsg must give our exact bytes.
		if enc := kr.AppendTo(nil); !bytes.Equal(enc, rb.Records[len(rb.Records)-len(data)-n:len(rb.Records)-len(data)]) {
			t.Errorf("record %d: kmsg re-encoding differs", i)
		}
	}
	if len(data) != 0 {
		t.Fatalf("%d bytes left after the records", len(data))
	}
}
