package storage

import (
	"encoding/binary"
	"testing"

	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/storage/producerstate"
)

// FuzzCleanerFilter feeds arbitrary bytes, cut into batches (CRCs fixed up
// so the filter's decoding is reached), through the cleaner's batch filter
// with an offset map built from them. It must never panic, and for input a
// log could hold (every batch passes ValidateRecords) everything it writes
// must be valid batches in offset order.
func FuzzCleanerFilter(f *testing.F) {
	for _, seed := range cleanerFuzzSeeds(f) {
		f.Add(seed, int64(1_700_000_000_000))
	}
	f.Fuzz(func(t *testing.T, data []byte, nowMs int64) {
		var batches [][]byte
		for rest := data; len(rest) > 0 && len(batches) < 64; {
			b, r, err := record.NextBatch(rest)
			if err != nil {
				break
			}
			b = append([]byte(nil), b...)
			binary.BigEndian.PutUint32(b[record.CRCPos:], record.ComputeCRC(b))
			batches = append(batches, b)
			rest = r
		}
		valid := true
		m := newOffsetMap(64*offsetSlotSize, 0.9)
		m.reset(64)
		var aborted []producerstate.AbortedTxn
		next := int64(0)
		for _, b := range batches {
			h, _ := record.ParseHeader(b)
			if record.ValidateRecords(b, false, 1<<20) != nil || h.BaseOffset < next || h.LastOffset() < h.BaseOffset {
				valid = false // not a log's content: only the no-panic property holds
				continue
			}
			next = h.NextOffset()
			if h.IsControl() {
				if ctl, err := record.ControlTypeOf(b); err == nil && ctl == record.ControlAbort {
					aborted = append(aborted, producerstate.AbortedTxn{ProducerID: h.ProducerID, FirstOffset: h.BaseOffset - 1, LastOffset: h.BaseOffset})
				}
				continue
			}
			_ = record.ForEachRecord(b, 1<<20, func(r record.Record) error {
				if r.Key != nil {
					m.put(r.Key, h.BaseOffset+int64(r.OffsetDelta))
				}
				return nil
			})
		}
		txns := newCleanerTxns()
		txns.addAborted(aborted)
		var st cleanStats
		flt := &batchFilter{
			m: m, mapEnd: 1 << 40, roundEnd: -1, groupEnd: -1,
			nowMs: nowMs, deleteRetentionMs: 1000,
			producers:       map[int64]activeProducer{1: {lastDataOffset: 5, epoch: 0}},
			txns:            txns,
			maxDecompressed: 1 << 20,
			stats:           &st,
		}
		var out []byte
		for _, b := range batches {
			h, _ := record.ParseHeader(b)
			var err error
			out, err = flt.filter(out, h, b)
			if err != nil && valid {
				t.Fatalf("filter refused a valid batch at %d: %v", h.BaseOffset, err)
			}
		}
		if !valid {
			return
		}
		prev := int64(-1)
		for rest := out; len(rest) > 0; {
			b, r, err := record.NextBatch(rest)
			if err != nil {
				t.Fatalf("cleaned output: %v", err)
			}
			if err := record.ValidateRecords(b, false, 1<<20); err != nil {
				t.Fatalf("cleaned batch invalid: %v", err)
			}
			h, _ := record.ParseHeader(b)
			if h.BaseOffset < prev {
				t.Fatalf("cleaned batches out of order")
			}
			prev = h.BaseOffset
			rest = r
		}
	})
}

// cleanerFuzzSeeds are batches of the kinds the cleaner meets: compressed
// keyed data with duplicates and tombstones, an idempotent producer's
// batch, a transaction with its ABORT marker, MIRROR_PID_RESET, and an empty
// batch a previous cleaning left.
func cleanerFuzzSeeds(t testing.TB) [][]byte {
	mk := func(s batchSpec, recs ...kv) []byte { return kvBatch(t, s, recs...) }
	p := func(base int64, codec record.Codec) batchSpec {
		s := plain(0, 1_700_000_000_000)
		s.baseOffset, s.codec = base, codec
		return s
	}
	join := func(bs ...[]byte) []byte {
		var out []byte
		for _, b := range bs {
			out = append(out, b...)
		}
		return out
	}
	idem := p(3, record.CodecLZ4)
	idem.pid, idem.epoch, idem.seq = 1, 0, 0
	txn := p(6, record.CodecNone)
	txn.pid, txn.epoch, txn.seq, txn.txn = 2, 0, 0, true
	abort := record.BuildEndTxnMarker(2, 0, record.EndTxnMarker{}, 1_700_000_000_000, 0)
	record.SetBaseOffset(abort, 7)
	reset := record.BuildMirrorPIDReset(1_700_000_000_000, 0, "src")
	record.SetBaseOffset(reset, 8)
	empty := emptyBatch(headerOf(t, mk(p(9, record.CodecNone), put("x", "1"), put("y", "1"))))
	return [][]byte{
		join(mk(p(0, record.CodecGzip), put("a", "1"), put("b", "1"), tomb("a")), mk(idem, put("b", "2"), put("c", "1"), kv{noKey: true, value: "n"})),
		join(mk(txn, put("a", "t")), abort, reset, empty),
		join(mk(p(0, record.CodecZstd), tomb("z")), mk(p(1, record.CodecSnappy), put("z", "1"))),
	}
}
