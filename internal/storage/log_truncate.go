package storage

import (
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TruncateTo removes every offset >= offset: whole segments above it, the
// batches of the segment holding it from the batch containing offset on,
// their index entries, the leader epochs starting at or after the new end,
// and the producer state they produced (reloaded from the latest snapshot at
// or below the new end plus replay). The new log end offset is the end of
// the last remaining batch (at most offset; less if offset was inside a
// batch or a gap). offset >= the log end does nothing; offset below the log
// start offset truncates fully and restarts the log there, as Kafka does.
func (l *Log) TruncateTo(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("truncate %s to %d: negative offset", l.tp, offset)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	if offset >= l.LogEndOffset() {
		return nil
	}
	if offset < l.logStart.Load() {
		return l.truncateFullyLocked(offset)
	}
	// A cut that leaves the log ending below its start (the batch holding
	// offset starts below the log start, or a gap precedes it) leaves nothing
	// readable: restart the log at offset instead.
	segs := l.segments()
	floor := segs[max(floorSegment(segs, offset), 0)]
	_, end, err := floor.cutPoint(offset)
	if err != nil {
		return fmt.Errorf("truncate %s to %d: %w", l.tp, offset, err)
	}
	if end < l.logStart.Load() {
		return l.truncateFullyLocked(offset)
	}
	l.readMu.Lock()
	err = l.truncateToLocked(offset)
	l.readMu.Unlock()
	if err != nil {
		l.failed = err
		return fmt.Errorf("truncate %s to %d: %w", l.tp, offset, err)
	}
	return nil
}

// truncateToLocked does TruncateTo's work; caller holds mu and readMu.
func (l *Log) truncateToLocked(offset int64) error {
	l.truncGen++
	segs := l.segments()
	i := floorSegment(segs, offset)
	keep, drop := segs[:i+1], segs[i+1:]
	if len(drop) > 0 {
		l.setSegments(append([]*segment(nil), keep...))
		l.removeSegmentsLocked(drop)
	}
	active := keep[len(keep)-1]
	if _, err := active.truncateTo(offset, l.Config(), l.now()); err != nil {
		return err
	}
	l.publishEnd()
	l.notifyTruncated()
	leo := l.LogEndOffset()
	if err := l.epochs.truncateFromEnd(leo); err != nil {
		return err
	}
	// Transaction index entries of the removed markers are gone with their
	// segments, or were cut by the segment's truncateTo.
	if err := l.reloadProducerState(); err != nil {
		return err
	}
	if hw := l.hw.Load(); hw > leo {
		l.hw.Store(leo)
	}
	l.psm.OnHighWatermarkUpdated(l.hw.Load())
	l.updateFirstUnstableLocked()
	if l.recoveryPoint.Load() > leo {
		l.recoveryPoint.Store(leo)
	}
	return nil
}

// TruncateFullyAndStartAt removes every segment and restarts the log empty
// at offset: log start, log end, high watermark and recovery point all become
// offset; the leader epoch cache and the producer state are cleared.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("truncate %s fully to %d: negative offset", l.tp, offset)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	return l.truncateFullyLocked(offset)
}

func (l *Log) truncateFullyLocked(offset int64) error {
	l.readMu.Lock()
	defer l.readMu.Unlock()
	l.truncGen++
	old := l.segments()
	// The new segment may have the base of an old one: move the old files
	// aside first.
	l.removeSegmentsLocked(old)
	s, err := l.newSegmentLocked(offset)
	if err != nil {
		l.failed = err
		return fmt.Errorf("truncate %s fully to %d: %w", l.tp, offset, err)
	}
	l.setSegments([]*segment{s})
	l.publishEnd()
	l.notifyTruncated()
	l.logStart.Store(offset)
	l.hw.Store(offset)
	l.recoveryPoint.Store(offset)
	l.firstUnstable.Store(math.MaxInt64)
	if err := l.epochs.clear(); err != nil {
		l.failed = err
		return err
	}
	if err := l.psm.TruncateFullyAndStartAt(offset); err != nil {
		l.failed = err
		return err
	}
	l.updateFirstUnstableLocked()
	return nil
}

// DeleteRecordsBefore moves the log start offset up to offset (Kafka's
// DeleteRecords), which must not exceed the high watermark (else an error
// wrapping kerr.OffsetOutOfRange), and deletes the segments wholly below it.
// It returns the log start offset after the call.
func (l *Log) DeleteRecordsBefore(offset int64) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return l.logStart.Load(), err
	}
	if hw := l.hw.Load(); offset > hw {
		return l.logStart.Load(), fmt.Errorf("delete records of %s before %d: beyond the high watermark %d: %w", l.tp, offset, hw, kerr.OffsetOutOfRange)
	}
	if offset <= l.logStart.Load() {
		return l.logStart.Load(), nil
	}
	if err := l.advanceLogStartLocked(offset); err != nil {
		return l.logStart.Load(), err
	}
	_, err := l.deleteSegmentsLocked(func(s, next *segment) (bool, error) {
		return next != nil && next.base <= l.logStart.Load(), nil
	})
	return l.logStart.Load(), err
}

// advanceLogStartLocked moves the log start offset forward and lets the
// epoch cache and producer state know.
func (l *Log) advanceLogStartLocked(offset int64) error {
	if offset <= l.logStart.Load() {
		return nil
	}
	l.logStart.Store(offset)
	if err := l.epochs.truncateFromStart(offset); err != nil {
		return err
	}
	l.psm.OnLogStartOffsetIncremented(offset)
	l.updateFirstUnstableLocked()
	return nil
}

// notifyTruncated tells the Options.OnTruncate hook the new log end offset.
// Caller holds mu, right after a truncation published its new end.
func (l *Log) notifyTruncated() {
	if l.opts.OnTruncate != nil {
		l.opts.OnTruncate(l.LogEndOffset())
	}
}
