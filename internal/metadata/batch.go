package metadata

import "fmt"

// batchVersion is the version of the batch envelope written by EncodeBatch.
const batchVersion = 0

// maxBatchRecords bounds the record count a batch header may claim; with at
// least 5 bytes per record this is far above anything that fits in a raft
// entry, so it only stops forged counts.
const maxBatchRecords = 1 << 24

// EncodeBatch appends a batch of records to dst: the batch version (0) and
// the record count as unsigned varints, then each record as an unsigned
// varint length followed by its Encode bytes. One batch is one entry of the
// metadata log and is applied atomically.
func EncodeBatch(dst []byte, rs []Record) []byte {
	dst = appendUvarint(dst, batchVersion)
	dst = appendUvarint(dst, uint32(len(rs)))
	var tmp []byte
	for _, r := range rs {
		tmp = Encode(tmp[:0], r)
		dst = appendUvarint(dst, uint32(len(tmp)))
		dst = append(dst, tmp...)
	}
	return dst
}

// DecodeBatch decodes a batch written by EncodeBatch. Like Decode, it never
// panics on malformed input, does not allocate beyond what the input can
// hold, and names the failing record's index and byte offset.
func DecodeBatch(b []byte) ([]Record, error) {
	r := newReader(b, 0)
	v := r.uvarint("batch version")
	n := r.uvarint("batch record count")
	if r.err != nil {
		return nil, fmt.Errorf("decode metadata batch: %w", r.err)
	}
	if v != batchVersion {
		r.pos = 0
		r.fail("batch version %d, want %d", v, batchVersion)
		return nil, fmt.Errorf("decode metadata batch: %w", r.err)
	}
	// Every record takes at least 5 bytes (length, frame, type, version, tags).
	if n > maxBatchRecords || int(n) > r.remaining()/5 {
		r.fail("batch claims %d records in %d bytes", n, r.remaining())
		return nil, fmt.Errorf("decode metadata batch: %w", r.err)
	}
	rs := make([]Record, 0, n)
	for i := 0; i < int(n); i++ {
		size := r.uvarint("record length")
		start := r.pos
		data := r.take(int(size), "record")
		if r.err != nil {
			return nil, fmt.Errorf("decode metadata batch record %d: %w", i, r.err)
		}
		rec, err := decodeAt(data, start)
		if err != nil {
			return nil, fmt.Errorf("decode metadata batch record %d: %w", i, err)
		}
		rs = append(rs, rec)
	}
	if err := r.done("metadata batch"); err != nil {
		return nil, fmt.Errorf("decode metadata batch: %w", err)
	}
	return rs, nil
}
