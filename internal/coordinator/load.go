package coordinator

import (
	"errors"
	"fmt"

	"github.com/kmirror/kmirror/internal/record"
)

// loadStats summarises a load.
type loadStats struct {
	records, skipped int
	end              int64
}

// load replays the partition from its log start to its log end into the
// shard. A malformed record, or a batch whose records cannot be read, is
// logged with its offset and skipped; only a log whose batch framing cannot
// be followed fails the load.
func (h *shardHost[S]) load() (loadStats, error) {
	var st loadStats
	off := int64(0)
	for {
		if err := h.ctx.Err(); err != nil {
			return st, err
		}
		buf, logEnd, err := h.plog.Read(h.ctx, off, h.rt.cfg.LoadBufferBytes)
		if err != nil {
			return st, fmt.Errorf("read %s-%d at %d: %w", h.rt.cfg.Topic, h.partition, off, err)
		}
		st.end = logEnd
		if off >= logEnd {
			return st, nil
		}
		progressed := false
		for rest := buf; len(rest) > 0; {
			batch, next, err := record.NextBatch(rest)
			if errors.Is(err, record.ErrIncomplete) {
				break
			}
			if err != nil {
				return st, fmt.Errorf("batch framing at or after offset %d: %w", off, err)
			}
			rest = next
			hdr, err := record.ParseHeader(batch)
			if err != nil {
				return st, fmt.Errorf("batch header at or after offset %d: %w", off, err)
			}
			if hdr.NextOffset() <= off {
				continue // before the position (a read starts with the batch holding it)
			}
			h.replayBatch(batch, hdr, &st)
			off = hdr.NextOffset()
			progressed = true
		}
		if !progressed {
			return st, fmt.Errorf("read at offset %d below log end %d returned no whole batch", off, logEnd)
		}
	}
}

// replayBatch feeds one batch to the shard.
func (h *shardHost[S]) replayBatch(batch []byte, hdr record.Header, st *loadStats) {
	if err := record.ValidateCRC(batch); err != nil {
		st.skipped++
		h.log.Error("skipping corrupt batch while loading", "offset", hdr.BaseOffset, "err", err)
		return
	}
	if hdr.IsControl() {
		if hdr.NumRecords == 0 {
			return
		}
		ct, err := record.ControlTypeOf(batch)
		if err != nil {
			st.skipped++
			h.log.Error("skipping malformed control batch while loading", "offset", hdr.BaseOffset, "err", err)
			return
		}
		if ct != record.ControlCommit && ct != record.ControlAbort {
			return
		}
		m, err := record.ParseEndTxnMarker(batch)
		if err != nil {
			st.skipped++
			h.log.Error("skipping malformed transaction marker while loading", "offset", hdr.BaseOffset, "err", err)
			return
		}
		st.records++
		marker := Marker{ProducerID: hdr.ProducerID, ProducerEpoch: hdr.ProducerEpoch, CoordinatorEpoch: m.CoordinatorEpoch, Commit: m.Commit}
		var rerr error
		if !h.protect("replay", func() { rerr = h.shard.ReplayMarker(hdr.BaseOffset, marker) }) {
			rerr = errors.New("replay panicked")
		}
		if rerr != nil {
			st.skipped++
			h.log.Error("skipping transaction marker the coordinator cannot apply", "offset", hdr.BaseOffset, "err", rerr)
		}
		return
	}
	err := record.ForEachRecord(batch, h.rt.cfg.MaxDecompressedBytes, func(r record.Record) error {
		lr := LoggedRecord{
			Offset:        hdr.BaseOffset + int64(r.OffsetDelta),
			Timestamp:     hdr.BaseTimestamp + r.TimestampDelta,
			ProducerID:    hdr.ProducerID,
			ProducerEpoch: hdr.ProducerEpoch,
			Transactional: hdr.IsTransactional(),
			Key:           r.Key,
			Value:         r.Value,
		}
		st.records++
		var rerr error
		if !h.protect("replay", func() { rerr = h.shard.Replay(lr) }) {
			rerr = errors.New("replay panicked")
		}
		if rerr != nil {
			st.skipped++
			h.log.Error("skipping malformed coordinator record while loading", "offset", lr.Offset, "err", rerr)
		}
		return nil
	})
	if err != nil {
		st.skipped++
		h.log.Error("skipping unreadable records of a batch while loading", "offset", hdr.BaseOffset, "err", err)
	}
}
