package storage

import "fmt"

// DeleteOldSegments applies retention: with cleanup.policy delete, segments
// whose largest timestamp is older than retention.ms and the oldest segments
// beyond retention.bytes; with any policy, segments wholly below the log
// start offset. Only segments entirely below the high watermark are deleted;
// if every segment goes, an empty one is first rolled at the log end. It
// returns how many segments were deleted.
func (l *Log) DeleteOldSegments() (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return 0, err
	}
	cfg := l.Config()
	total := 0
	if cfg.CleanupPolicy.Delete {
		if cfg.RetentionMs >= 0 {
			nowMs := l.now().UnixMilli()
			n, err := l.deleteSegmentsLocked(func(s, _ *segment) (bool, error) {
				ts, err := s.largestTimestamp()
				return err == nil && nowMs-ts > cfg.RetentionMs, err
			})
			total += n
			if err != nil {
				return total, err
			}
		}
		if cfg.RetentionBytes >= 0 {
			diff := l.Size() - cfg.RetentionBytes
			n, err := l.deleteSegmentsLocked(func(s, _ *segment) (bool, error) {
				if size := s.size.Load(); diff-size >= 0 {
					diff -= size
					return true, nil
				}
				return false, nil
			})
			total += n
			if err != nil {
				return total, err
			}
		}
	}
	n, err := l.deleteSegmentsLocked(func(s, next *segment) (bool, error) {
		return next != nil && next.base <= l.logStart.Load(), nil
	})
	return total + n, err
}

// deleteSegmentsLocked deletes the longest prefix of segments for which
// pred holds and whose data is entirely below the high watermark (Kafka's
// deleteOldSegments). The last segment is never deleted while empty.
func (l *Log) deleteSegmentsLocked(pred func(s, next *segment) (bool, error)) (int, error) {
	segs := l.segments()
	hw := l.hw.Load()
	n := 0
	for i, s := range segs {
		var next *segment
		upper := l.LogEndOffset()
		if i+1 < len(segs) {
			next = segs[i+1]
			upper = next.base
		}
		if next == nil && s.size.Load() == 0 {
			break
		}
		if hw < upper {
			break
		}
		ok, err := pred(s, next)
		if err != nil {
			return 0, fmt.Errorf("retention of %s: %w", l.tp, err)
		}
		if !ok {
			break
		}
		n++
	}
	if n == 0 {
		return 0, nil
	}
	if n == len(segs) {
		if err := l.rollLocked(l.LogEndOffset(), true); err != nil {
			return 0, fmt.Errorf("retention of %s: %w", l.tp, err)
		}
		segs = l.segments()
	}
	drop := segs[:n]
	rest := append([]*segment(nil), segs[n:]...)
	l.setSegments(rest)
	l.removeSegmentsLocked(drop)
	l.logger.Info("deleted segments by retention", "segments", n, "new_first_offset", rest[0].base)
	if err := l.advanceLogStartLocked(rest[0].base); err != nil {
		return n, err
	}
	if err := l.psm.DeleteSnapshotsBefore(rest[0].base); err != nil {
		l.logger.Warn("deleting producer snapshots", "error", err)
	}
	return n, nil
}
