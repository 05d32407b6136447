package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
)

// checkScanAgrees checks ScanRecords against Records on one batch: the same
// verdict with the same error text, and for a good batch the metadata of
// exactly the records Records decoded.
func checkScanAgrees(t *testing.T, batch []byte, recs []Record, recsErr error) {
	t.Helper()
	var metas []RecordMeta
	scanErr := ScanRecords(batch, fuzzLimit, func(m RecordMeta) error {
		metas = append(metas, m)
		return nil
	})
	if fmt.Sprint(scanErr) != fmt.Sprint(recsErr) {
		t.Fatalf("ScanRecords error %v, Records error %v", scanErr, recsErr)
	}
	if scanErr != nil {
		return
	}
	if len(metas) != len(recs) {
		t.Fatalf("ScanRecords saw %d records, Records %d", len(metas), len(recs))
	}
	for i, r := range recs {
		want := RecordMeta{TimestampDelta: r.TimestampDelta, OffsetDelta: r.OffsetDelta, NullKey: r.Key == nil}
		if metas[i] != want {
			t.Fatalf("record %d: ScanRecords %+v, Records %+v", i, metas[i], want)
		}
	}
}

func TestScanRecordsAgreesWithRecords(t *testing.T) {
	recs := []Record{
		{Key: []byte("k0"), Value: []byte("v0")},
		{TimestampDelta: 300, Value: []byte("null key")},
		{TimestampDelta: -5, Key: []byte{}, Value: nil, Headers: []RecordHeader{{Key: "h", Value: []byte("x")}, {Key: "", Value: nil}}},
		{TimestampDelta: 1 << 40, Key: bytes.Repeat([]byte("k"), 200), Value: bytes.Repeat([]byte("v"), 5000)},
	}
	NumberRecords(recs)
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			batch, err := Build(BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Codec: codec}, recs)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Records(batch, 0)
			if err != nil {
				t.Fatal(err)
			}
			checkScanAgrees(t, batch, got, nil)
		})
	}
}

// Every way a record can be malformed is refused by ScanRecords with the
// error ForEachRecord gives.
func TestScanRecordsRefusesWhatRecordsRefuses(t *testing.T) {
	good, err := Build(BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]Record{{Key: []byte("k"), Value: []byte("value"), Headers: []RecordHeader{{Key: "hk", Value: []byte("hv")}}}})
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	// Every single-byte change of the records section, and every count.
	for pos := HeaderSize; pos < len(good); pos++ {
		for _, v := range []byte{0, 1, 2, 0x7f, 0x80, 0xff} {
			b := clone(good)
			b[pos] = v
			recs, recsErr := Records(b, 0)
			if recsErr != nil {
				bad++
			}
			checkScanAgrees(t, b, recs, recsErr)
		}
	}
	for _, n := range []int32{0, 2, -1, 1 << 30} {
		b := clone(good)
		binary.BigEndian.PutUint32(b[RecordsCountPos:], uint32(n))
		recs, recsErr := Records(b, 0)
		if recsErr == nil {
			t.Errorf("count %d accepted", n)
		}
		checkScanAgrees(t, b, recs, recsErr)
	}
	if bad == 0 {
		t.Fatal("no corruption was detected: the test exercises nothing")
	}
}

func TestScanRecordsStops(t *testing.T) {
	batch := scanTestBatch(t, 10, CodecLZ4)
	n := 0
	err := ScanRecords(batch, 0, func(RecordMeta) error {
		if n++; n == 3 {
			return ErrStop
		}
		return nil
	})
	if err != nil || n != 3 {
		t.Fatalf("ErrStop: %d records, %v", n, err)
	}
	boom := errors.New("boom")
	if err := ScanRecords(batch, 0, func(RecordMeta) error { return boom }); err != boom {
		t.Fatalf("fn's error: %v", err)
	}
}

// A leader validates every compressed batch it appends: scanning one must
// reuse its decompression buffer instead of allocating the batch's
// decompressed size each time, as ForEachRecord does.
func TestScanRecordsReusesItsBuffer(t *testing.T) {
	batch := scanTestBatch(t, 1000, CodecLZ4)
	const rounds = 40
	scanned := bytesAllocated(func() {
		for range rounds {
			if err := ScanRecords(batch, 0, func(RecordMeta) error { return nil }); err != nil {
				t.Fatal(err)
			}
		}
	})
	iterated := bytesAllocated(func() {
		for range rounds {
			if err := ForEachRecord(batch, 0, func(Record) error { return nil }); err != nil {
				t.Fatal(err)
			}
		}
	})
	// sync.Pool may drop a buffer now and then (under the race detector,
	// one Put in four), and each drop costs what ForEachRecord pays every
	// time: reuse must still save most of it.
	if scanned > iterated/2 {
		t.Errorf("%d scans of a 1 MiB lz4 batch allocated %d bytes, ForEachRecord %d", rounds, scanned, iterated)
	}
}

func scanTestBatch(t *testing.T, n int, codec Codec) []byte {
	t.Helper()
	batch, err := Build(BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Codec: codec}, benchRecords(n))
	if err != nil {
		t.Fatal(err)
	}
	return batch
}

// An empty compressed batch is not decompressed: the scratch buffer must
// not become an alias of the caller's memory, or the next decompression
// would write past the batch into whatever follows it.
func TestScanRecordsEmptyCompressedBatchLendsNoMemory(t *testing.T) {
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
	other := scanTestBatch(t, 1000, CodecLZ4)
	for range 20 {
		if err := ScanRecords(batch, 0, func(RecordMeta) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if err := ScanRecords(other, 0, func(RecordMeta) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(mem[HeaderSize:], bytes.Repeat([]byte{0xAA}, len(mem)-HeaderSize)) {
		t.Fatal("decompression wrote into the memory after an empty batch")
	}
}

// ScanPayload works from the parsed header alone, so that a leader can
// stamp offsets into the batch's header while its records are scanned.
func TestScanPayloadReadsNoHeaderBytes(t *testing.T) {
	for _, codec := range allCodecs {
		batch := scanTestBatch(t, 20, codec)
		h, err := ParseHeader(batch)
		if err != nil {
			t.Fatal(err)
		}
		clear(batch[:HeaderSize]) // what is left of the header is garbage
		n := 0
		if err := ScanPayload(h, batch[HeaderSize:], 0, func(m RecordMeta) error {
			if m.OffsetDelta != int32(n) {
				t.Fatalf("%s: record %d has offset delta %d", codec, n, m.OffsetDelta)
			}
			n++
			return nil
		}); err != nil || n != 20 {
			t.Fatalf("%s: %d records, %v", codec, n, err)
		}
	}
	var bad Header
	bad.Attributes = 7 // no such codec
	if err := ScanPayload(bad, nil, 0, func(RecordMeta) error { return nil }); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("unknown codec: %v", err)
	}
}
