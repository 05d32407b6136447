package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
)

// assemble builds a batch around raw record bytes without any of Build's
// checks, compressing them with codec, so tests can make malformed batches
// with a valid CRC.
func assemble(t testing.TB, codec Codec, numRecords, lastOffsetDelta int32, raw []byte) []byte {
	t.Helper()
	b := make([]byte, HeaderSize)
	b, err := Compress(codec, b, raw)
	if err != nil {
		t.Fatal(err)
	}
	be := binary.BigEndian
	be.PutUint32(b[LengthPos:], uint32(len(b)-logOverhead))
	b[MagicPos] = MagicV2
	be.PutUint16(b[AttributesPos:], uint16(codec))
	be.PutUint32(b[LastOffsetDeltaPos:], uint32(lastOffsetDelta))
	be.PutUint64(b[ProducerIDPos:], math.MaxUint64)
	be.PutUint16(b[ProducerEpochPos:], math.MaxUint16)
	be.PutUint32(b[BaseSequencePos:], math.MaxUint32)
	be.PutUint32(b[RecordsCountPos:], uint32(numRecords))
	putCRC(b)
	return b
}

// encodeRecords encodes records as they appear in a batch, unchecked.
func encodeRecords(recs ...Record) []byte {
	var raw []byte
	for i := range recs {
		raw = appendRecord(raw, &recs[i])
	}
	return raw
}

// rawRecord frames body bytes as a record with the given length prefix.
func rawRecord(length int32, body ...byte) []byte {
	return append(appendVarint(nil, length), body...)
}

func TestValidateRecords(t *testing.T) {
	three := encodeRecords(Record{OffsetDelta: 0}, Record{OffsetDelta: 1}, Record{OffsetDelta: 2})
	// body of an empty record: attributes, ts 0, offset 0, null key, null value, 0 headers
	emptyBody := []byte{0, 0, 0, 1, 1, 0}
	cases := []struct {
		name       string
		numRecords int32
		lastDelta  int32
		raw        []byte
		strict     bool
		lenient    bool   // whether the lenient mode accepts it
		why        string // expected in the error of the mode that rejects by the deepest check
	}{
		{"valid", 3, 2, three, true, true, ""},
		{"count above records", 4, 3, three, false, false, "header says 4 records, found 3"},
		{"count below records", 2, 1, three, false, false, "bytes after the last"},
		{"trailing garbage", 3, 2, append(clone(three), 0xde, 0xad), false, false, "bytes after the last"},
		{"gap in deltas", 3, 3, encodeRecords(Record{OffsetDelta: 0}, Record{OffsetDelta: 1}, Record{OffsetDelta: 3}), false, true, "last offset delta 3 with 3 records"},
		{"deltas not from 0", 2, 1, encodeRecords(Record{OffsetDelta: 1}, Record{OffsetDelta: 1}), false, false, "does not follow"},
		{"deltas swapped", 2, 1, encodeRecords(Record{OffsetDelta: 1}, Record{OffsetDelta: 0}), false, false, "offset delta"},
		{"repeated delta", 3, 2, encodeRecords(Record{OffsetDelta: 0}, Record{OffsetDelta: 1}, Record{OffsetDelta: 1}), false, false, "does not follow"},
		{"delta beyond last", 2, 2, encodeRecords(Record{OffsetDelta: 0}, Record{OffsetDelta: 5}), false, false, "beyond last offset delta"},
		{"negative delta", 1, 0, encodeRecords(Record{OffsetDelta: -1}), false, false, "does not follow"},
		{"more records than deltas", 3, 1, three, false, false, "cannot fit"},
		{"empty batch", 0, 0, nil, false, true, "no records"},
		{"empty batch with bytes", 0, 0, []byte{0}, false, false, "bytes after the last"},
		{"length past end", 1, 0, rawRecord(20, emptyBody...), false, false, "record truncated"},
		{"length short of fields", 1, 0, append(rawRecord(5, emptyBody...), 0), false, false, "length does not match"},
		{"length beyond fields", 1, 0, rawRecord(7, append(clone(emptyBody), 0)...), false, false, "length does not match"},
		{"negative length", 1, 0, rawRecord(-1, emptyBody...), false, false, "record truncated"},
		{"key past record", 1, 0, rawRecord(6, 0, 0, 0, 20, 1, 0), false, false, "length does not match"},
		{"negative header count", 1, 0, rawRecord(6, 0, 0, 0, 1, 1, 1), false, false, "negative record header count"},
		{"null header key", 1, 0, rawRecord(8, 0, 0, 0, 1, 1, 2, 1, 1), false, false, "header key"},
		{"overlong varint", 1, 0, rawRecord(11, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), false, false, "malformed varint"},
		{"overlong length varint", 1, 0, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0}, false, false, "malformed varint"},
		{"empty payload", 1, 0, nil, false, false, "header says 1 records, found 0"},
	}
	for _, c := range cases {
		for _, codec := range allCodecs {
			if codec != CodecNone && len(c.raw) == 0 && c.numRecords == 0 {
				continue // an empty compressed payload is covered by the codec tests
			}
			b := assemble(t, codec, c.numRecords, c.lastDelta, c.raw)
			for _, strict := range []bool{true, false} {
				err := ValidateRecords(b, strict, 0)
				wantOK := c.strict
				if !strict {
					wantOK = c.lenient
				}
				if wantOK {
					if err != nil {
						t.Errorf("%s, %v, strict=%v: %v", c.name, codec, strict, err)
					}
					continue
				}
				if !errors.Is(err, ErrCorrupt) {
					t.Errorf("%s, %v, strict=%v: err = %v, want ErrCorrupt", c.name, codec, strict, err)
				} else if strict == c.lenient && !strings.Contains(err.Error(), c.why) {
					// The reason is checked in the mode that runs the
					// deeper checks: lenient, unless lenient accepts.
					t.Errorf("%s, %v: err = %q, want it to mention %q", c.name, codec, err, c.why)
				}
			}
		}
	}
}

func TestValidateRecordsChecksCRCFirst(t *testing.T) {
	b, _ := Build(BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, sampleRecords())
	b[len(b)-1] ^= 1
	if err := ValidateRecords(b, true, 0); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "crc") {
		t.Fatalf("err = %v", err)
	}
}

func TestValidateRecordsLimitsDecompression(t *testing.T) {
	recs := []Record{{Value: make([]byte, 2<<20)}}
	for _, c := range allCodecs[1:] {
		b, err := Build(BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Codec: c}, recs)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 1<<20 {
			t.Fatalf("%v: 2 MiB of zeros compressed to %d bytes", c, len(b))
		}
		if err := ValidateRecords(b, true, 1<<20); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "limit") {
			t.Errorf("%v: 1 MiB limit: err = %v", c, err)
		}
		if _, err := Records(b, 1<<20); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%v: Records with 1 MiB limit: err = %v", c, err)
		}
		if err := ValidateRecords(b, true, 3<<20); err != nil {
			t.Errorf("%v: 3 MiB limit: %v", c, err)
		}
	}
}

func TestVarints(t *testing.T) {
	for _, v := range []int32{0, 1, -1, 63, -64, 64, -65, 1 << 20, math.MaxInt32, math.MinInt32} {
		b := appendVarint(nil, v)
		if len(b) != sizeVarint(v) {
			t.Errorf("sizeVarint(%d) = %d, encoded %d", v, sizeVarint(v), len(b))
		}
		got, n := readVarint(b)
		if got != v || n != len(b) {
			t.Errorf("varint %d: read %d (%d bytes of %d)", v, got, n, len(b))
		}
	}
	for _, v := range []int64{0, -1, 1 << 40, math.MaxInt64, math.MinInt64} {
		b := appendVarlong(nil, v)
		if len(b) != sizeVarlong(v) {
			t.Errorf("sizeVarlong(%d) = %d, encoded %d", v, sizeVarlong(v), len(b))
		}
		got, n := readVarlong(b)
		if got != v || n != len(b) {
			t.Errorf("varlong %d: read %d (%d bytes of %d)", v, got, n, len(b))
		}
	}
	// Kafka's zig-zag: 1 -> 2, -1 -> 1, -64 -> 127, 64 -> 128 (two bytes).
	for v, want := range map[int32][]byte{1: {2}, -1: {1}, -64: {0x7f}, 64: {0x80, 0x01}} {
		if got := appendVarint(nil, v); !bytes.Equal(got, want) {
			t.Errorf("appendVarint(%d) = %x, want %x", v, got, want)
		}
	}
	if _, n := readVarint([]byte{0x80, 0x80}); n != 0 {
		t.Errorf("truncated varint: n = %d, want 0", n)
	}
	if _, n := readVarint([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x01}); n >= 0 {
		t.Errorf("6-byte varint: n = %d, want < 0", n)
	}
	if _, n := readVarlong(bytes.Repeat([]byte{0x80}, 11)); n >= 0 {
		t.Errorf("11-byte varlong: n = %d, want < 0", n)
	}
}

// An empty compressed batch is not decompressed: the scratch buffer must
// not become an alias of the caller's memory, or the next decompression
// would write past the batch into whatever follows it.
func TestValidateRecordsEmptyCompressedBatchLendsNoMemory(t *testing.T) {
	empty, err := Build(BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(empty) != HeaderSize {
		t.Fatalf("empty batch of %d bytes", len(empty))
	}
	empty[AttributesPos+1] |= byte(CodecLZ4)
	putCRC(empty)
	mem := bytes.Repeat([]byte{0xAA}, 4<<20)
	copy(mem, empty)
	batch := mem[:HeaderSize] // its capacity reaches into mem
	other := validateTestBatch(t, 1000, CodecLZ4)
	for range 20 {
		if err := ValidateRecords(batch, false, 0); err != nil {
			t.Fatal(err)
		}
		if err := ValidateRecords(other, true, 0); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(mem[HeaderSize:], bytes.Repeat([]byte{0xAA}, len(mem)-HeaderSize)) {
		t.Fatal("decompression wrote into the memory after an empty batch")
	}
}

func validateTestBatch(t *testing.T, n int, codec Codec) []byte {
	t.Helper()
	batch, err := Build(BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Codec: codec}, benchRecords(n))
	if err != nil {
		t.Fatal(err)
	}
	return batch
}
