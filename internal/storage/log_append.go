package storage

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/storage/producerstate"
)

// AppendInfo describes the result of an append.
type AppendInfo struct {
	// FirstOffset and LastOffset are the offsets of the appended batches'
	// first and last records (for a Duplicate, of the original batch); -1
	// when nothing was appended.
	FirstOffset, LastOffset int64
	// MaxTimestamp is the largest batch timestamp and OffsetOfMaxTimestamp
	// the last offset of the first batch holding it.
	MaxTimestamp, OffsetOfMaxTimestamp int64
	// LogAppendTime is the time stamped on the batches when the topic uses
	// LogAppendTime, else -1.
	LogAppendTime int64
	// LogStartOffset is the log start offset after the append.
	LogStartOffset int64
	// NumRecords and Bytes count what was written.
	NumRecords int
	Bytes      int
	// Duplicate says the batch was a producer's retry of a batch already in
	// the log: nothing was written and the offsets are the original ones.
	Duplicate bool
}

// AppendAsLeader validates and appends producer batches (magic v2 only),
// assigning offsets from the log end, stamping partitionLeaderEpoch =
// leaderEpoch and, when the topic uses LogAppendTime, the append time,
// recompressing when compression.type names a codec, and checking producer
// state: a retried batch is answered with its original offsets and nothing
// is written. Control batches are refused from OriginClient. Bad input yields
// an error wrapping kerr.CorruptMessage, kerr.InvalidRecord,
// kerr.MessageTooLarge, kerr.InvalidTimestamp or a producer error, and the log
// is unchanged. The batches may be modified in place. All batches of one call
// are written with one write; a large append is validated while it is
// written (and published only once validation passed), a smaller one
// before.
func (l *Log) AppendAsLeader(batches []byte, leaderEpoch int32, origin AppendOrigin) (AppendInfo, error) {
	info, err := l.appendAsLeader(batches, leaderEpoch, origin, true)
	if errors.Is(err, errRedoSerially) {
		// A header must be corrected first (nothing was appended).
		info, err = l.appendAsLeader(batches, leaderEpoch, origin, false)
	}
	return info, err
}

// appendAsLeader is AppendAsLeader, validating a large append while it is
// written if overlap allows (see validateLeaderInput).
func (l *Log) appendAsLeader(batches []byte, leaderEpoch int32, origin AppendOrigin, overlap bool) (AppendInfo, error) {
	cfg := l.Config()
	now := l.now()
	in, rebuilt, crc, err := validateLeaderInput(l.tp, batches, cfg, origin, now.UnixMilli(), l.maxDecompressed(), overlap)
	if err != nil {
		return AppendInfo{}, err
	}
	buf := batches
	if rebuilt {
		// One buffer for the single write; the batches are stamped in it.
		n := 0
		for _, b := range in {
			n += len(b.data)
		}
		buf = make([]byte, 0, n)
		for i := range in {
			off := len(buf)
			buf = append(buf, in[i].data...)
			in[i].data = buf[off:len(buf):len(buf)]
		}
	}
	l.mu.Lock()
	info, err := l.appendLeaderLocked(in, buf, leaderEpoch, origin, cfg, now, crc)
	flush := err == nil && !info.Duplicate && l.LogEndOffset()-l.recoveryPoint.Load() >= cfg.FlushMessages
	l.mu.Unlock()
	// A corrupt batch is reported as such, whatever else stopped the append
	// (a duplicate is only answered for intact input).
	if cerr := crc.wait(); cerr != nil {
		return AppendInfo{}, fmt.Errorf("append to %s: %w", l.tp, cerr)
	}
	if flush {
		if err := l.flushTo(info.LastOffset + 1); err != nil {
			return info, err
		}
	}
	return info, err
}

func (l *Log) appendLeaderLocked(in []inBatch, buf []byte, leaderEpoch int32, origin AppendOrigin, cfg LogConfig, now time.Time, crc *crcCheck) (AppendInfo, error) {
	if err := l.writableLocked(); err != nil {
		return AppendInfo{}, err
	}
	if origin == OriginClient {
		for _, b := range in {
			if md, ok := l.psm.FindDuplicate(b.h); ok {
				return AppendInfo{
					FirstOffset:          md.FirstOffset,
					LastOffset:           md.LastOffset,
					MaxTimestamp:         md.Timestamp,
					OffsetOfMaxTimestamp: md.LastOffset,
					LogAppendTime:        -1,
					LogStartOffset:       l.logStart.Load(),
					NumRecords:           int(md.LastOffset - md.FirstOffset + 1),
					Duplicate:            true,
				}, nil
			}
		}
	}
	nowMs := now.UnixMilli()
	lat := cfg.MessageTimestampType == record.LogAppendTime
	next := l.LogEndOffset()
	for i := range in {
		b := &in[i]
		record.SetBaseOffset(b.data, next)
		record.SetPartitionLeaderEpoch(b.data, leaderEpoch)
		if lat {
			record.SetLogAppendTime(b.data, nowMs)
		}
		b.h, _ = record.ParseHeader(b.data)
		next = b.h.NextOffset()
	}
	a := l.psm.NewAppend(producerstate.Origin(origin))
	for _, b := range in {
		if err := a.Add(b.h, b.ctl, b.coordEpoch); err != nil {
			return AppendInfo{}, fmt.Errorf("append to %s: %w", l.tp, err)
		}
	}
	if err := l.writeBatchesLocked(in, buf, cfg, now, crc); err != nil {
		return AppendInfo{}, err
	}
	if err := l.afterWriteLocked(a, in); err != nil {
		return AppendInfo{}, err
	}
	info := summarize(in, l.logStart.Load())
	if lat {
		info.LogAppendTime = nowMs
	}
	return info, nil
}

// AppendAsFollower appends batches keeping their offsets and partition
// leader epochs, as a follower or a mirror does. Batches are CRC-checked, not
// decompressed. A batch starting below the log end offset is refused with an
// error wrapping ErrUnexpectedAppendOffset and kerr.OffsetOutOfRange; gaps
// above the log end (left by compaction on the source) are kept. The leader
// epoch cache learns each new epoch; producer state is applied without
// validation. A trailing partial batch (fetch responses may end in one) is
// ignored. With no whole batch, nothing happens and FirstOffset is -1.
func (l *Log) AppendAsFollower(batches []byte) (AppendInfo, error) {
	in, total, crc, err := validateFollowerInput(l.tp, batches)
	if err != nil {
		return AppendInfo{}, err
	}
	defer crc.wait() // on every path, before the caller may reuse batches
	if len(in) == 0 {
		return AppendInfo{FirstOffset: -1, LastOffset: -1, MaxTimestamp: -1, OffsetOfMaxTimestamp: -1,
			LogAppendTime: -1, LogStartOffset: l.logStart.Load()}, nil
	}
	cfg := l.Config()
	l.mu.Lock()
	info, err := l.appendFollowerLocked(in, batches[:total], cfg, crc)
	flush := err == nil && l.LogEndOffset()-l.recoveryPoint.Load() >= cfg.FlushMessages
	l.mu.Unlock()
	if cerr := crc.wait(); cerr != nil {
		return AppendInfo{}, fmt.Errorf("append to %s: %w", l.tp, cerr)
	}
	if flush {
		if err := l.flushTo(info.LastOffset + 1); err != nil {
			return info, err
		}
	}
	return info, err
}

func (l *Log) appendFollowerLocked(in []inBatch, buf []byte, cfg LogConfig, crc *crcCheck) (AppendInfo, error) {
	if err := l.writableLocked(); err != nil {
		return AppendInfo{}, err
	}
	if leo := l.LogEndOffset(); in[0].h.BaseOffset < leo {
		return AppendInfo{}, fmt.Errorf("append to %s: first batch at offset %d is below the log end offset %d: %w: %w",
			l.tp, in[0].h.BaseOffset, leo, ErrUnexpectedAppendOffset, kerr.OffsetOutOfRange)
	}
	a := l.psm.NewAppend(producerstate.OriginReplication)
	for _, b := range in {
		if err := a.Add(b.h, b.ctl, b.coordEpoch); err != nil {
			return AppendInfo{}, fmt.Errorf("append to %s: %w", l.tp, err)
		}
	}
	if err := l.writeBatchesLocked(in, buf, cfg, l.now(), crc); err != nil {
		return AppendInfo{}, err
	}
	if err := l.afterWriteLocked(a, in); err != nil {
		return AppendInfo{}, err
	}
	return summarize(in, l.logStart.Load()), nil
}

// afterWriteLocked applies what follows a successful write: producer state,
// transaction index entries, leader epochs. A failure here leaves the log
// unusable for writes (its files and state may disagree until reopened,
// which recovers them), as a Kafka log dir goes offline on an I/O error.
func (l *Log) afterWriteLocked(a *producerstate.Append, in []inBatch) error {
	l.psm.Commit(a)
	err := l.indexCompletedTxns(a)
	for _, b := range in {
		if err != nil {
			break
		}
		if e := b.h.PartitionLeaderEpoch; e >= 0 {
			_, err = l.epochs.assign(e, b.h.BaseOffset)
		}
	}
	l.updateFirstUnstableLocked()
	if err != nil {
		l.failed = err
		return fmt.Errorf("append to %s: %w", l.tp, err)
	}
	return nil
}

func summarize(in []inBatch, logStart int64) AppendInfo {
	info := AppendInfo{
		FirstOffset:          in[0].h.BaseOffset,
		LastOffset:           in[len(in)-1].h.LastOffset(),
		MaxTimestamp:         math.MinInt64,
		OffsetOfMaxTimestamp: -1,
		LogAppendTime:        -1,
		LogStartOffset:       logStart,
	}
	for _, b := range in {
		if b.h.MaxTimestamp > info.MaxTimestamp {
			info.MaxTimestamp, info.OffsetOfMaxTimestamp = b.h.MaxTimestamp, b.h.LastOffset()
		}
		info.NumRecords += int(b.h.NumRecords)
		info.Bytes += len(b.data)
	}
	return info
}

// writeBatchesLocked writes buf (the concatenation of in's batches) to the
// log, rolling first if the active segment is full or old, and again
// whenever a batch's offsets are not representable from the active
// segment's base (a follower may append across huge offset gaps). On
// success the new end is published to readers. A pending CRC check (nil if
// none) is completed before anything is published.
func (l *Log) writeBatchesLocked(in []inBatch, buf []byte, cfg LogConfig, now time.Time, crc *crcCheck) error {
	if err := l.active().rebuildSuspectIndexes(); err != nil {
		return err
	}
	first, last := in[0].h, in[len(in)-1].h
	maxTs := int64(math.MinInt64)
	for _, b := range in {
		maxTs = max(maxTs, b.h.MaxTimestamp)
	}
	roll, err := l.active().shouldRoll(cfg, int64(len(buf)), maxTs, last.LastOffset(), now)
	if err != nil {
		return err
	}
	if roll || !canRelativize(l.active().base, first.LastOffset()) {
		if err := l.rollLocked(first.BaseOffset, true); err != nil {
			return err
		}
	}
	var verify func() error
	if crc != nil {
		if canRelativize(l.active().base, last.LastOffset()) {
			verify = crc.wait // one write: checked alongside it
		} else if err := crc.wait(); err != nil {
			return err // several writes: check first
		}
	}
	warm := warmAllowed(cfg)
	infos := make([]batchInfo, 0, len(in))
	var runStart, runByte, byteOff int
	wrote := false
	for i, b := range in {
		if !canRelativize(l.active().base, b.h.LastOffset()) {
			if err := l.writeRunLocked(buf[runByte:byteOff], infos[runStart:i], wrote, nil, warm, now); err != nil {
				return err
			}
			wrote = true
			// No producer snapshot: the batches written so far are not in
			// the producer state yet.
			if err := l.rollLocked(b.h.BaseOffset, false); err != nil {
				l.failed = err
				return err
			}
			runStart, runByte = i, byteOff
		}
		infos = append(infos, batchInfo{base: b.h.BaseOffset, last: b.h.LastOffset(), maxTs: b.h.MaxTimestamp, size: int64(len(b.data))})
		byteOff += len(b.data)
	}
	return l.writeRunLocked(buf[runByte:byteOff], infos[runStart:], wrote, verify, warm, now)
}

func (l *Log) writeRunLocked(buf []byte, infos []batchInfo, partial bool, verify func() error, warm bool, now time.Time) error {
	if len(infos) == 0 {
		return nil
	}
	if err := l.active().append(buf, infos, verify, warm, now); err != nil {
		if errors.Is(err, errRefused) {
			return err
		}
		if partial {
			// Earlier runs of this append are in the log already; the
			// producer state does not know them. Stop writing until the log
			// is reopened (and recovered).
			l.failed = err
		}
		return err
	}
	l.publishEnd()
	return nil
}

// Roll closes the active segment and starts a new one at the log end, unless
// the active segment is empty.
func (l *Log) Roll() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	return l.rollLocked(l.LogEndOffset(), true)
}

// rollLocked makes a new active segment at newBase (>= the log end offset).
// An empty active segment is replaced rather than kept. The old segment is
// sealed, a producer snapshot is taken at the new base (if snapshot: the
// producer state must reflect every batch written), and the old segment is
// flushed in the background (advancing the recovery point), as Kafka does.
func (l *Log) rollLocked(newBase int64, snapshot bool) error {
	old := l.active()
	if old.size.Load() == 0 {
		if old.base == newBase {
			return nil
		}
		s, err := l.newSegmentLocked(newBase)
		if err != nil {
			return err
		}
		segs := append([]*segment(nil), l.segments()...)
		segs[len(segs)-1] = s
		l.setSegments(segs)
		l.publishEnd()
		l.removeSegmentsLocked([]*segment{old})
		return nil
	}
	if err := old.seal(); err != nil {
		return err
	}
	s, err := l.newSegmentLocked(newBase)
	if err != nil {
		return err
	}
	segs := append(append([]*segment(nil), l.segments()...), s)
	l.setSegments(segs)
	l.publishEnd()
	if snapshot {
		if l.psm.MapEndOffset() < newBase {
			l.psm.UpdateMapEndOffset(newBase)
		}
		if err := l.psm.TakeSnapshot(); err != nil {
			l.logger.Warn("producer snapshot at roll failed", "offset", newBase, "error", err)
		}
	}
	l.bg.Add(1)
	go func() {
		defer l.bg.Done()
		if err := l.flushTo(newBase); err != nil {
			l.logger.Warn("flushing rolled segment", "segment", old.base, "error", err)
		}
	}()
	return nil
}
