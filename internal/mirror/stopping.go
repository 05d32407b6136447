package mirror

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/mirror/mirrorstate"
	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/storage"
)

// stopping is STOPPING's job, the failover of one partition. Its steps run
// in this order and each is idempotent, so that a leader that dies half
// way leaves a state its successor completes by running them all again:
//
//  1. remove the partition from the fetchers (no more mirrored appends);
//  2. bump the leader epoch above every epoch in the log (the source's),
//     through the controller, unless the current one already is: the
//     driver is then replaced by the new leader epoch's, which starts this
//     job again and skips the bump;
//  3. truncate to the last stable offset: a transaction the source had not
//     finished is cut off;
//  4. persist the Last Mirrored Epoch (the greatest epoch left, and the log
//     end offset, which is where the barrier goes) for a later mirror in the
//     opposite direction;
//  5. append one MIRROR_PID_RESET control batch in the new epoch, which
//     drops every producer's state on every replica.
//
// A log that ends with a MIRROR_PID_RESET exactly at the end offset of the
// persisted LME had all five steps done (by a leader that died before
// persisting STOPPED, or by this one, whose wait for the barrier's commit
// ended before the in-sync replicas had it): nothing is redone, so the log
// holds exactly one barrier of this failover, and STOPPED waits until the
// barrier is committed. A barrier copied from the source (a source
// that failed over itself) cannot be mistaken for it: the LME's end offset
// is where this failover's barrier was appended.
//
// logSource is the source cluster the log holds data of, "" when the
// partition's state does not say (it never reached MIRRORING, or its state
// record was lost). Without one, an empty log has no source epochs or
// producer states to leave behind and only step 1 runs; a log with data
// gets every step (its LME record names no source).
func (d *driver) stopping(ctx context.Context, logSource string) Event {
	backoff := 100 * time.Millisecond
	for {
		err := d.stopOnce(ctx, logSource)
		if err == nil {
			d.pauseAt(ctx, pauseBarrierAppended)
			return Event{Kind: EvStopped}
		}
		if ctx.Err() != nil {
			return Event{}
		}
		if errors.Is(err, errWaitNewEpoch) {
			// The driver of the new epoch carries on.
			<-ctx.Done()
			return Event{}
		}
		d.stats.setError(err.Error())
		d.log.Warn("failover step failed; retrying", "error", err, "backoff", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return Event{}
		case <-t.C:
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// errWaitNewEpoch means the leader epoch was bumped: this driver's
// leadership is over.
var errWaitNewEpoch = errors.New("leader epoch bumped; waiting for the new leadership")

func (d *driver) stopOnce(ctx context.Context, logSource string) error {
	// 1.
	d.source.stopFetching(d)
	log := d.part.Log()
	if log == nil {
		return fmt.Errorf("%s has no local log", d.tp)
	}
	if logSource == "" && log.LogEndOffset() <= log.LogStartOffset() {
		return nil
	}
	d.pauseAt(ctx, pauseFetchersRemoved)
	if cur := d.part.LeaderEpoch(); cur != d.leaderEpoch {
		return errWaitNewEpoch
	}
	lmeKey := mirrorstate.LMEKey{TopicID: d.topicID, Partition: d.tp.Partition}
	rctx, cancel := context.WithTimeout(ctx, d.m.cfg.RequestTimeout)
	_, lmeEnd, err := d.m.deps.Store.ReadLME(rctx, lmeKey, logSource)
	cancel()
	if err != nil {
		return fmt.Errorf("read the last mirrored epoch of %s: %w", d.tp, err)
	}
	if last, ok, err := d.lastBatch(); err != nil {
		return err
	} else if ok && lmeEnd >= 0 && last.BaseOffset == lmeEnd && d.isBarrier() {
		// The barrier is in the log (appended by this leader, whose wait
		// for it ended early, or by a predecessor); STOPPED needs it
		// committed, or an election could lose it and leave the source's
		// producers in a writable partition.
		rctx, cancel := context.WithTimeout(ctx, d.m.cfg.RequestTimeout)
		err := d.part.WaitCommittedInEpoch(rctx, last.BaseOffset+1, d.leaderEpoch)
		cancel()
		if err != nil {
			return fmt.Errorf("wait for the in-sync replicas of %s to have the failover barrier at %d: %w", d.tp, last.BaseOffset, err)
		}
		d.log.Info("failover already complete in the log: the barrier follows the last mirrored epoch and is committed", "offset", last.BaseOffset)
		return nil
	}
	// 2.
	if latest, ok := log.LatestEpoch(); ok && d.leaderEpoch <= latest {
		if d.m.deps.Controller == nil {
			return errors.New("no controller to bump the leader epoch through")
		}
		rctx, cancel := context.WithTimeout(ctx, d.m.cfg.RequestTimeout)
		e, err := d.m.deps.Controller.BumpLeaderEpoch(rctx, metadata.Uuid(d.topicID), d.tp.Partition, latest+1)
		cancel()
		if err != nil {
			return fmt.Errorf("bump the leader epoch of %s above %d: %w", d.tp, latest, err)
		}
		d.log.Info("leader epoch bumped above the mirrored epochs", "latest_mirrored_epoch", latest, "new_leader_epoch", e)
		return errWaitNewEpoch
	}
	// 3.
	cut := failoverCut(log)
	if leo := log.LogEndOffset(); cut < leo {
		d.log.Info("truncating the failed-over partition to its last stable offset", "offset", cut, "log_end_offset", leo)
		if err := d.part.TruncateInEpoch(cut, d.leaderEpoch); err != nil {
			return fmt.Errorf("truncate %s to %d: %w", d.tp, cut, err)
		}
	}
	// 4.
	lme, end := int32(-1), log.LogEndOffset()
	if e, ok := log.LatestEpoch(); ok {
		lme = e
	}
	rctx, cancel = context.WithTimeout(ctx, d.m.cfg.RequestTimeout)
	err = d.m.deps.Store.WriteLME(rctx, LMEWrite{
		Key:   lmeKey,
		Value: mirrorstate.LMEValue{Mirror: d.key.Mirror, SourceClusterID: logSource, LastMirroredEpoch: lme, EndOffset: end},
	})
	cancel()
	if err != nil {
		return fmt.Errorf("persist the last mirrored epoch of %s: %w", d.tp, err)
	}
	d.pauseAt(ctx, pauseLMEPersisted)
	// 5.
	rctx, cancel = context.WithTimeout(ctx, d.m.cfg.RequestTimeout)
	info, err := d.part.AppendInEpoch(rctx, record.BuildMirrorPIDReset(d.m.cfg.Now().UnixMilli(), d.leaderEpoch, logSource),
		storage.OriginCoordinator, d.leaderEpoch)
	cancel()
	if err != nil {
		return fmt.Errorf("append the MIRROR_PID_RESET barrier to %s: %w", d.tp, err)
	}
	if info.FirstOffset != end {
		// Only the mirror appends to a failing-over partition; anything
		// else is a bug worth seeing.
		d.log.Error("the failover barrier landed after the last mirrored epoch's end", "offset", info.FirstOffset, "expected", end)
	}
	d.log.Info("failover barrier appended", "offset", info.FirstOffset)
	return nil
}

// failoverCut is where STOPPING cuts a log: the first offset of its
// oldest open transaction (a transaction the source had not finished), or
// its end with none. An open transaction that began below the log start —
// retention, or a source log start inside its first batch — cuts at the
// log start, not below it. DescribeMirrors reports it, so that an operator
// sees what a failover now would drop.
func failoverCut(log *storage.Log) int64 {
	cut := log.LogEndOffset()
	for _, p := range log.ActiveProducers() {
		if p.CurrentTxnFirstOffset >= 0 {
			cut = min(cut, p.CurrentTxnFirstOffset)
		}
	}
	return max(cut, log.LogStartOffset())
}

// lastBatch returns the header of the log's last batch.
func (d *driver) lastBatch() (record.Header, bool, error) {
	b, ok, err := d.lastBatchBytes()
	if err != nil || !ok {
		return record.Header{}, ok, err
	}
	h, err := record.ParseHeader(b)
	return h, err == nil, err
}

// isBarrier reports whether the log's last batch is a MIRROR_PID_RESET.
func (d *driver) isBarrier() bool {
	b, ok, err := d.lastBatchBytes()
	if err != nil || !ok {
		return false
	}
	ct, err := record.ControlTypeOf(b)
	return err == nil && ct == record.ControlMirrorPIDReset
}

// lastBatchBytes reads the log's last batch.
func (d *driver) lastBatchBytes() ([]byte, bool, error) {
	log := d.part.Log()
	if log == nil {
		return nil, false, fmt.Errorf("%s has no local log", d.tp)
	}
	leo := log.LogEndOffset()
	if leo <= log.LogStartOffset() {
		return nil, false, nil
	}
	res, err := d.part.Read(leo-1, 1<<16, storage.FetchLogEnd, true)
	if err != nil {
		return nil, false, fmt.Errorf("read the last batch of %s: %w", d.tp, err)
	}
	defer res.Release()
	buf, err := res.Bytes()
	if err != nil {
		return nil, false, fmt.Errorf("read the last batch of %s: %w", d.tp, err)
	}
	var last []byte
	for rest := buf; len(rest) > 0; {
		b, next, err := record.NextBatch(rest)
		if err != nil {
			break
		}
		last, rest = b, next
	}
	if last == nil {
		return nil, false, nil
	}
	return append([]byte(nil), last...), true, nil
}
