package producerstate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sort"
)

// Kafka's producer snapshot file, version 1 (big-endian):
//
//	version int16 (= 1) | crc uint32 | count int32 | count × entry
//	entry: producerId int64 | epoch int16 | lastSequence int32 | lastOffset int64 |
//	       offsetDelta int32 | timestamp int64 | coordinatorEpoch int32 |
//	       currentTxnFirstOffset int64
//
// The CRC-32C covers everything after the crc field (count and entries).
// Like Kafka, a snapshot keeps only the last batch of each producer:
// lastOffset = -1 (and lastSequence = -1, offsetDelta = 0) when it has none.
const (
	snapshotVersion    = 1
	snapshotCRCPos     = 2
	snapshotCountPos   = 6
	snapshotHeaderSize = 10
	snapshotEntrySize  = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8 // 46
)

// ErrCorruptSnapshot is wrapped by errors from decoding a snapshot file that
// is truncated, has a bad CRC or an unknown version.
var ErrCorruptSnapshot = errors.New("corrupt producer snapshot")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeSnapshot serialises entries in producer id order (Kafka writes them
// in hash order; any order reads back the same).
func encodeSnapshot(entries map[int64]*Entry) []byte {
	pids := make([]int64, 0, len(entries))
	for pid := range entries {
		pids = append(pids, pid)
	}
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })

	b := make([]byte, snapshotHeaderSize, snapshotHeaderSize+len(pids)*snapshotEntrySize)
	binary.BigEndian.PutUint16(b[0:], snapshotVersion)
	binary.BigEndian.PutUint32(b[snapshotCountPos:], uint32(len(pids)))
	for _, pid := range pids {
		e := entries[pid]
		lastSeq, lastOffset, delta := noSequence, int64(-1), int32(0)
		if n := len(e.Batches); n > 0 {
			last := e.Batches[n-1]
			lastSeq, lastOffset = last.LastSeq, last.LastOffset
			delta = int32(last.LastOffset - last.FirstOffset)
		}
		b = binary.BigEndian.AppendUint64(b, uint64(pid))
		b = binary.BigEndian.AppendUint16(b, uint16(e.ProducerEpoch))
		b = binary.BigEndian.AppendUint32(b, uint32(lastSeq))
		b = binary.BigEndian.AppendUint64(b, uint64(lastOffset))
		b = binary.BigEndian.AppendUint32(b, uint32(delta))
		b = binary.BigEndian.AppendUint64(b, uint64(e.LastTimestamp))
		b = binary.BigEndian.AppendUint32(b, uint32(e.CoordinatorEpoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.CurrentTxnFirstOffset))
	}
	binary.BigEndian.PutUint32(b[snapshotCRCPos:], crc32.Checksum(b[snapshotCountPos:], castagnoli))
	return b
}

// decodeSnapshot parses a snapshot file's bytes. It never allocates more
// than the input justifies and never panics; any inconsistency is an error
// wrapping ErrCorruptSnapshot.
func decodeSnapshot(b []byte) ([]*Entry, error) {
	if len(b) < snapshotHeaderSize {
		return nil, fmt.Errorf("%w: %d bytes is shorter than the header", ErrCorruptSnapshot, len(b))
	}
	if v := int16(binary.BigEndian.Uint16(b)); v != snapshotVersion {
		return nil, fmt.Errorf("%w: unknown version %d", ErrCorruptSnapshot, v)
	}
	stored := binary.BigEndian.Uint32(b[snapshotCRCPos:])
	if computed := crc32.Checksum(b[snapshotCountPos:], castagnoli); stored != computed {
		return nil, fmt.Errorf("%w: stored crc %#08x, computed %#08x", ErrCorruptSnapshot, stored, computed)
	}
	count := int32(binary.BigEndian.Uint32(b[snapshotCountPos:]))
	body := b[snapshotHeaderSize:]
	if count < 0 || len(body)%snapshotEntrySize != 0 || int64(count) != int64(len(body)/snapshotEntrySize) {
		return nil, fmt.Errorf("%w: %d entries do not fit %d bytes", ErrCorruptSnapshot, count, len(body))
	}
	entries := make([]*Entry, 0, count)
	for p := body; len(p) > 0; p = p[snapshotEntrySize:] {
		e := &Entry{
			ProducerID:            int64(binary.BigEndian.Uint64(p[0:])),
			ProducerEpoch:         int16(binary.BigEndian.Uint16(p[8:])),
			LastTimestamp:         int64(binary.BigEndian.Uint64(p[26:])),
			CoordinatorEpoch:      int32(binary.BigEndian.Uint32(p[34:])),
			CurrentTxnFirstOffset: int64(binary.BigEndian.Uint64(p[38:])),
		}
		lastSeq := int32(binary.BigEndian.Uint32(p[10:]))
		lastOffset := int64(binary.BigEndian.Uint64(p[14:]))
		delta := int32(binary.BigEndian.Uint32(p[22:]))
		if e.CurrentTxnFirstOffset < 0 {
			e.CurrentTxnFirstOffset = -1
		}
		if lastOffset >= 0 {
			e.Batches = []BatchMetadata{{
				FirstSeq:    decrementSequence(lastSeq, delta),
				LastSeq:     lastSeq,
				FirstOffset: lastOffset - int64(delta),
				LastOffset:  lastOffset,
				Timestamp:   e.LastTimestamp,
			}}
		}
		entries = append(entries, e)
	}
	return entries, nil
}
