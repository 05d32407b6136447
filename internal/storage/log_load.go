package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/storage/producerstate"
)

// Open opens (creating if needed) the log of tp in dir, Kafka's log loading:
// leftovers of interrupted operations are cleaned up (.deleted, .cleaned and
// temporary files removed, interrupted segment swaps completed); without the
// clean-shutdown marker every batch from the recovery point on is validated
// and the log is cut at the first bad one; indexes are rebuilt where needed;
// the leader epoch cache and the producer state (latest snapshot plus replay)
// are brought in line with the log.
func Open(dir string, tp TopicPartition, cfg LogConfig, opts Options) (*Log, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("open log %s: %w", tp, err)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	l := &Log{
		tp:     tp,
		logger: opts.Logger.With("topic", tp.Topic, "partition", tp.Partition),
		now:    opts.Now,
		opts:   opts,
	}
	l.dir.Store(&dir)
	l.cfg.Store(&cfg)
	if err := ensureDir(dir); err != nil {
		return nil, fmt.Errorf("open log %s: %w", tp, err)
	}
	if err := l.load(opts); err != nil {
		if segs := l.segs.Load(); segs != nil {
			for _, s := range *segs {
				s.release()
			}
		}
		return nil, fmt.Errorf("open log %s in %s: %w", tp, dir, err)
	}
	return l, nil
}

func (l *Log) load(opts Options) error {
	dir := l.Dir()
	cfg := l.Config()
	if err := l.cleanLeftovers(dir); err != nil {
		return err
	}
	segs, needRecovery, err := l.openSegments(dir, cfg)
	if err != nil {
		return err
	}
	l.setSegments(segs)

	var rebuildEpochs bool
	if l.epochs, err = loadEpochCache(dir); err != nil {
		if !errors.Is(err, ErrCorruptCheckpoint) {
			return err
		}
		l.logger.Warn("leader epoch checkpoint is corrupt; rebuilding it from the log", "error", err)
		l.epochs = &epochCache{path: filepath.Join(dir, LeaderEpochCheckpointFileName)}
		rebuildEpochs = true
	}
	if l.psm, err = producerstate.NewManager(dir, producerstate.Options{
		ProducerIDExpiration: opts.ProducerIDExpiration,
		Now:                  l.now,
		Logger:               l.logger,
	}); err != nil {
		return err
	}

	if len(segs) == 0 {
		s, err := l.newSegmentLocked(max(opts.LogStartOffset, 0))
		if err != nil {
			return err
		}
		segs = []*segment{s}
		l.setSegments(segs)
	}
	logStart := max(opts.LogStartOffset, segs[0].base)

	recoverFrom := len(segs)
	if !opts.HadCleanShutdown {
		recoverFrom = max(floorSegment(segs, opts.RecoveryPoint), 0)
	}
	recoverFrom = min(recoverFrom, needRecovery)
	recovered := recoverFrom < len(segs)
	if recovered {
		if err := l.recoverSegments(recoverFrom, logStart); err != nil {
			return err
		}
		segs = l.segments()
	}
	last := segs[len(segs)-1]
	var jitter int64
	if cfg.SegmentJitterMs > 0 {
		jitter = rand.Int64N(min(cfg.SegmentJitterMs, cfg.SegmentMs))
	}
	if recovered {
		last.jitterMs = jitter // recovery left it active with full indexes
	} else if err := last.loadAppendState(cfg, jitter); err != nil {
		return err
	}
	leo := last.nextOffset

	if logStart > leo {
		// Kafka's deleteSegmentsIfLogStartGreaterThanLogEnd: the data below
		// the log start offset is logically deleted already.
		l.logger.Warn("log start offset is beyond the log end; starting empty at the log start offset",
			"log_start_offset", logStart, "log_end_offset", leo)
		for _, s := range segs {
			if err := s.changeSuffix("", DeletedFileSuffix); err != nil {
				return err
			}
			s.deleted.Store(true)
			paths := s.paths()
			s.release()
			unlinkAll(l.logger, paths)
		}
		s, err := l.newSegmentLocked(logStart)
		if err != nil {
			return err
		}
		segs = []*segment{s}
		l.setSegments(segs)
		leo = logStart
		if err := l.psm.TruncateFullyAndStartAt(logStart); err != nil {
			return err
		}
	}
	l.logStart.Store(logStart)
	l.publishEnd()

	if rebuildEpochs {
		if err := l.rebuildEpochCache(); err != nil {
			return err
		}
	}
	if err := l.epochs.truncateFromEnd(leo); err != nil {
		return err
	}
	if err := l.epochs.truncateFromStart(logStart); err != nil {
		return err
	}

	if recovered {
		// The recovered state sits at the log end: keep it so the reload
		// below (and the next recovery) need not replay again.
		l.psm.UpdateMapEndOffset(leo)
		if err := l.psm.TakeSnapshot(); err != nil {
			return err
		}
	}
	if err := l.reloadProducerState(); err != nil {
		return err
	}
	hw := min(max(opts.HighWatermark, logStart), leo)
	l.hw.Store(hw)
	l.psm.OnHighWatermarkUpdated(hw)
	l.updateFirstUnstableLocked()

	if opts.HadCleanShutdown && !recovered {
		l.recoveryPoint.Store(leo)
	} else {
		l.recoveryPoint.Store(min(max(opts.RecoveryPoint, 0), leo))
	}
	l.lastFlushMs.Store(l.now().UnixMilli())

	id, ok, err := readPartitionMetadata(filepath.Join(dir, PartitionMetadataFileName))
	if err != nil {
		l.logger.Warn("ignoring unreadable partition metadata", "error", err)
	} else if ok {
		l.topicID, l.hasTopicID = id, true
	}
	return nil
}

// cleanLeftovers removes what interrupted operations left in dir, as Kafka's
// log loader does: temporary files, files of deleted segments, unfinished
// cleaner output; and it completes interrupted segment swaps.
func (l *Log) cleanLeftovers(dir string) error {
	des, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	minCleaned := int64(math.MaxInt64)
	var swaps []string
	for _, de := range des {
		name := de.Name()
		path := filepath.Join(dir, name)
		switch {
		case !de.Type().IsRegular():
		case strings.HasSuffix(name, tmpFileSuffix), strings.HasSuffix(name, DeletedFileSuffix):
			if err := removeIfExists(path); err != nil {
				return err
			}
		case strings.HasSuffix(name, CleanedFileSuffix):
			if off, ok := parseOffsetFileName(strings.TrimSuffix(name, CleanedFileSuffix), filepath.Ext(strings.TrimSuffix(name, CleanedFileSuffix))); ok {
				minCleaned = min(minCleaned, off)
			}
			l.logger.Info("removing unfinished cleaner output", "file", name)
			if err := removeIfExists(path); err != nil {
				return err
			}
		case strings.HasSuffix(name, SwapFileSuffix):
			swaps = append(swaps, name)
		}
	}
	type swapSeg struct {
		base, next int64
	}
	var valid []swapSeg
	validBase := make(map[int64]bool)
	for _, name := range swaps {
		inner := strings.TrimSuffix(name, SwapFileSuffix)
		off, ok := parseOffsetFileName(inner, filepath.Ext(inner))
		if !ok || off >= minCleaned {
			// The cleaning that made it did not finish (Kafka's rule).
			if err := removeIfExists(filepath.Join(dir, name)); err != nil {
				return err
			}
			continue
		}
		if filepath.Ext(inner) != LogFileSuffix {
			continue // renamed with its .log below
		}
		next, err := scanNextOffset(filepath.Join(dir, name), off)
		if err != nil {
			return err
		}
		valid = append(valid, swapSeg{off, next})
		validBase[off] = true
	}
	if len(valid) == 0 {
		for _, name := range swaps {
			if err := removeIfExists(filepath.Join(dir, name)); err != nil {
				return err
			}
		}
		return nil
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, s := range valid {
		lo, hi = min(lo, s.base), max(hi, s.next)
	}
	l.logger.Info("completing an interrupted segment swap", "from_offset", lo, "to_offset", hi)
	// Delete the segments the swap replaces: those starting in [lo, hi).
	des, err = os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, de := range des {
		name := de.Name()
		for _, suf := range []string{LogFileSuffix, IndexFileSuffix, TimeIndexFileSuffix, TxnIndexFileSuffix} {
			if off, ok := parseOffsetFileName(name, suf); ok && off >= lo && off < hi {
				if err := removeIfExists(filepath.Join(dir, name)); err != nil {
					return err
				}
			}
		}
	}
	for _, name := range swaps {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err != nil {
			continue
		}
		inner := strings.TrimSuffix(name, SwapFileSuffix)
		if off, ok := parseOffsetFileName(inner, filepath.Ext(inner)); !ok || !validBase[off] {
			if err := removeIfExists(p); err != nil {
				return err
			}
			continue
		}
		if err := os.Rename(p, strings.TrimSuffix(p, SwapFileSuffix)); err != nil {
			return err
		}
	}
	return syncDir(dir)
}

// scanNextOffset returns the offset after the last whole batch of a segment
// file (base if it has none).
func scanNextOffset(path string, base int64) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	sc := newHeaderScanner(f, 0, st.Size())
	defer sc.release()
	next := base
	for sc.next() {
		next = sc.h.NextOffset()
	}
	return next, nil
}

// openSegments opens every segment file of dir. needRecovery is the index of
// the first segment whose files fail a sanity check that only recovery can
// repair (a corrupt transaction index, missing indexes), or len(segs).
func (l *Log) openSegments(dir string, cfg LogConfig) (segs []*segment, needRecovery int, err error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, 0, err
	}
	var bases []int64
	for _, de := range des {
		if off, ok := parseOffsetFileName(de.Name(), LogFileSuffix); ok && de.Type().IsRegular() {
			bases = append(bases, off)
		}
	}
	slices.Sort(bases)
	now := l.now()
	for _, b := range bases {
		s, err := openSegment(dir, b, cfg, now, l.logger)
		if err != nil {
			for _, o := range segs {
				o.release()
			}
			return nil, 0, err
		}
		segs = append(segs, s)
	}
	// Remove index files whose .log is gone (Kafka does the same).
	for _, de := range des {
		name := de.Name()
		for _, suf := range []string{IndexFileSuffix, TimeIndexFileSuffix, TxnIndexFileSuffix} {
			if off, ok := parseOffsetFileName(name, suf); ok {
				if _, found := slices.BinarySearch(bases, off); !found {
					l.logger.Info("removing index file without a segment", "file", name)
					if err := removeIfExists(filepath.Join(dir, name)); err != nil {
						return segs, 0, err
					}
				}
			}
		}
	}
	needRecovery = len(segs)
	for i, s := range segs {
		if err := s.txn.SanityCheck(); err != nil {
			l.logger.Warn("transaction index is corrupt; recovering from its segment", "segment", s.base, "error", err)
			needRecovery = min(needRecovery, i)
			continue
		}
		_, offErr := os.Stat(s.offPath)
		_, timeErr := os.Stat(s.timePath)
		if offErr != nil || timeErr != nil {
			// Kafka recovers a segment whose index is missing: its bytes are
			// checked while the indexes are rebuilt.
			l.logger.Info("index files missing; recovering from their segment", "segment", s.base)
			needRecovery = min(needRecovery, i)
		}
	}
	return segs, needRecovery, nil
}

// recoverSegments validates segments[from:] (see segment.recover), rebuilding
// their indexes, the leader epochs they carry and the producer state, and
// deletes every segment after the first one that had to be cut.
func (l *Log) recoverSegments(from int, logStart int64) error {
	segs := l.segments()
	cfg := l.Config()
	base := segs[from].base
	if err := l.psm.TruncateAndReload(min(logStart, base), base); err != nil {
		return err
	}
	if err := l.replayProducerState(l.psm.MapEndOffset(), base); err != nil {
		return err
	}
	minOffset := segs[0].base
	if from > 0 {
		next, err := segs[from-1].readNextOffset()
		if err != nil {
			return err
		}
		minOffset = next
	}
	for i := from; i < len(segs); i++ {
		s := segs[i]
		cut, reason, err := s.recover(minOffset, int64(cfg.SegmentIndexBytes), func(h record.Header, batch []byte) error {
			return l.recoverBatch(s, h, batch)
		})
		if err != nil {
			return fmt.Errorf("recover segment %s: %w", s.name(), err)
		}
		switch {
		case reason != nil:
			l.logger.Warn("found invalid bytes in segment during recovery; truncating",
				"file", s.name(), "position", s.size.Load(), "bytes_truncated", cut, "reason", reason)
		case cut > 0:
			l.logger.Info("cut the zero-filled tail of a segment during recovery",
				"file", s.name(), "position", s.size.Load(), "bytes_truncated", cut)
		}
		minOffset = s.nextOffset
		if reason != nil && i+1 < len(segs) {
			for _, d := range segs[i+1:] {
				l.logger.Warn("deleting segment after a corrupt point", "file", d.name())
				if err := d.changeSuffix("", DeletedFileSuffix); err != nil {
					return err
				}
				d.deleted.Store(true)
				paths := d.paths()
				d.release()
				unlinkAll(l.logger, paths)
			}
			segs = segs[:i+1]
			l.setSegments(segs)
		}
		if i+1 < len(segs) {
			if err := s.seal(); err != nil {
				return err
			}
		}
	}
	return nil
}

// recoverBatch applies a batch met by recovery: its leader epoch and its
// producer state, and an aborted transaction it completes to the segment's
// transaction index.
func (l *Log) recoverBatch(s *segment, h record.Header, batch []byte) error {
	if h.PartitionLeaderEpoch >= 0 {
		if e, ok := l.epochs.latest(); !ok || h.PartitionLeaderEpoch > e.Epoch {
			if _, err := l.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset); err != nil {
				return err
			}
		}
	}
	ctl, ce := controlInfo(h, batch, l.logger)
	a := l.psm.NewAppend(producerstate.OriginReplication)
	if err := a.Add(h, ctl, ce); err != nil {
		l.logger.Warn("producer state refused a recovered batch", "offset", h.BaseOffset, "error", err)
		return nil
	}
	l.psm.Commit(a)
	return l.indexCompletedTxns(a)
}

// indexCompletedTxns writes the aborted transactions an append completed to
// the transaction index of the segment holding each marker. Call it right
// after committing the append.
func (l *Log) indexCompletedTxns(a *producerstate.Append) error {
	for _, ct := range a.CompletedTxns() {
		if !ct.Aborted {
			continue
		}
		segs := l.segments()
		i := floorSegment(segs, ct.MarkerOffset)
		if i < 0 {
			continue
		}
		at := producerstate.AbortedTxn{
			ProducerID:       ct.ProducerID,
			FirstOffset:      ct.FirstOffset,
			LastOffset:       ct.MarkerOffset,
			LastStableOffset: l.psm.LastStableOffsetAfter(ct),
		}
		if err := segs[i].txn.Append(at); err != nil {
			return fmt.Errorf("append to transaction index: %w", err)
		}
	}
	return nil
}

// controlInfo returns what producer state needs of a batch: for a control
// batch its type and, for a transaction marker, the coordinator epoch. An
// undecodable control record (which no valid writer produces) is logged and
// yields a type the producer state ignores.
func controlInfo(h record.Header, batch []byte, logger *slog.Logger) (record.ControlType, int32) {
	if !h.IsControl() || h.NumRecords == 0 {
		return -1, -1
	}
	ctl, err := record.ControlTypeOf(batch)
	if err != nil {
		logger.Warn("undecodable control batch", "offset", h.BaseOffset, "error", err)
		return controlUnknown, -1
	}
	if ctl == record.ControlAbort || ctl == record.ControlCommit {
		m, err := record.ParseEndTxnMarker(batch)
		if err != nil {
			logger.Warn("undecodable transaction marker", "offset", h.BaseOffset, "error", err)
			return controlUnknown, -1
		}
		return ctl, m.CoordinatorEpoch
	}
	return ctl, -1
}

// controlUnknown is passed to producer state for a control batch whose type
// cannot be read; producer state ignores unknown control types on replay.
const controlUnknown = record.ControlType(math.MaxInt16)

// reloadProducerState is Kafka's rebuildProducerState: reload the latest
// snapshot within [logStart, logEnd] and replay the log after it. Caller
// holds mu (or owns the log exclusively).
func (l *Log) reloadProducerState() error {
	leo := l.LogEndOffset()
	if err := l.psm.TruncateAndReload(l.logStart.Load(), leo); err != nil {
		return err
	}
	return l.replayProducerState(l.psm.MapEndOffset(), leo)
}

// replayBatchesPerAppend bounds how many batches one producer-state append
// collects during replay.
const replayBatchesPerAppend = 4096

// replayProducerState applies the batches of [from, to) to the producer
// state (OriginReplication, no transaction index updates: those entries are
// already in the trusted segments' indexes).
func (l *Log) replayProducerState(from, to int64) error {
	if from >= to {
		return nil
	}
	segs := l.segments()
	i := max(floorSegment(segs, from), 0)
	a := l.psm.NewAppend(producerstate.OriginReplication)
	n := 0
	flushAppend := func() {
		if n > 0 {
			l.psm.Commit(a)
			a, n = l.psm.NewAppend(producerstate.OriginReplication), 0
		}
	}
	for ; i < len(segs) && segs[i].base < to; i++ {
		s := segs[i]
		size := s.size.Load()
		start := int64(0)
		if from > s.base {
			p, _, found, err := s.translate(from, size)
			if err != nil {
				return err
			}
			if !found {
				continue
			}
			start = p
		}
		sc := newHeaderScanner(s.log, start, size)
		for sc.next() {
			h := sc.h
			if h.BaseOffset >= to {
				break
			}
			ctl, ce := record.ControlType(-1), int32(-1)
			if h.IsControl() {
				batch := make([]byte, h.Size())
				if _, err := s.log.ReadAt(batch, sc.batchPos); err != nil {
					sc.release()
					return fmt.Errorf("read control batch at %d of %s: %w", h.BaseOffset, s.name(), err)
				}
				ctl, ce = controlInfo(h, batch, l.logger)
			}
			if err := a.Add(h, ctl, ce); err != nil {
				l.logger.Warn("producer state refused a replayed batch", "offset", h.BaseOffset, "error", err)
				a, n = l.psm.NewAppend(producerstate.OriginReplication), 0
				continue
			}
			n++
			if n >= replayBatchesPerAppend {
				flushAppend()
			}
		}
		err := sc.Err()
		sc.release()
		if err != nil {
			return fmt.Errorf("replay %s: %w", s.name(), err)
		}
	}
	flushAppend()
	if l.psm.MapEndOffset() < to {
		l.psm.UpdateMapEndOffset(to)
	}
	return nil
}

// rebuildEpochCache recreates the leader epoch cache from the batches'
// partition leader epochs, for a lost or corrupt checkpoint.
func (l *Log) rebuildEpochCache() error {
	for _, s := range l.segments() {
		sc := newHeaderScanner(s.log, 0, s.size.Load())
		for sc.next() {
			h := sc.h
			if h.PartitionLeaderEpoch < 0 {
				continue
			}
			if e, ok := l.epochs.latest(); !ok || h.PartitionLeaderEpoch > e.Epoch {
				if _, err := l.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset); err != nil {
					sc.release()
					return err
				}
			}
		}
		err := sc.Err()
		sc.release()
		if err != nil {
			return err
		}
	}
	return l.epochs.write()
}
