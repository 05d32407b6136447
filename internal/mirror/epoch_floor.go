package mirror

import (
	"context"
	"time"

	"github.com/kmirror/kmirror/internal/metadata"
)

// This file keeps the epoch invariant of a mirrored partition (KIP-1279):
//
//	while a partition mirrors, its metadata leader epoch is >= the greatest
//	source leader epoch among the batches its log holds.
//
// Consumers learn leader epochs from fetched batches and from committed
// offsets, and KIP-320 clients treat an epoch above the partition's metadata
// leader epoch as a sign of stale metadata: they refresh and wait until the
// metadata catches up, which on a mirror it never would by itself (its own
// leader epochs do not follow the source's elections). So when the mirror
// appends a batch whose epoch is above the partition's leader epoch — rare:
// the source elected a new leader, or mirroring just began from a source
// whose epochs are ahead — the driver asks the controller to raise the
// leader epoch to it (Channel.BumpLeaderEpoch; same leader, same ISR).
//
// The new epoch is a leadership change: the manager replaces the driver
// with one for the new epoch, which carries on MIRRORING from the log end.
// Appends of the old driver's fetch target are fenced by its epoch from
// then on, so the handover is clean. The epoch cache is not touched: a
// mirrored partition records only source epochs there (see
// broker.Partition.keepsSourceEpochsLocked), and STOPPING still bumps the
// epoch above every mirrored one before its barrier.

// raiseLeaderEpoch asks, once per driver and in the background, that the
// partition's leader epoch become at least epoch. A later call with a
// higher epoch raises the target of a bump still in flight. It never
// blocks: it runs on the fetcher's goroutine.
func (d *driver) raiseLeaderEpoch(epoch int32) {
	if epoch <= d.leaderEpoch {
		return
	}
	for {
		cur := d.epochWant.Load()
		if epoch <= cur || d.epochWant.CompareAndSwap(cur, epoch) {
			break
		}
	}
	if !d.epochBumping.CompareAndSwap(false, true) {
		return
	}
	// The driver's own goroutine holds a count of the wait group while the
	// driver lives, so this Add cannot race the manager's Wait.
	d.m.wg.Add(1)
	go func() {
		defer d.m.wg.Done()
		d.bumpLeaderEpoch()
	}()
}

// bumpLeaderEpoch raises the leader epoch to epochWant through the
// controller, retrying until it succeeds or the driver ends (which the
// successful bump itself causes, through the metadata).
func (d *driver) bumpLeaderEpoch() {
	backoff := 100 * time.Millisecond
	for d.ctx.Err() == nil {
		want := d.epochWant.Load()
		if d.m.deps.Controller == nil {
			d.log.Warn("no controller to raise the leader epoch through", "mirrored_epoch", want)
			return
		}
		ctx, cancel := context.WithTimeout(d.ctx, d.m.cfg.RequestTimeout)
		e, err := d.m.deps.Controller.BumpLeaderEpoch(ctx, metadata.Uuid(d.topicID), d.tp.Partition, want)
		cancel()
		if err == nil {
			d.log.Info("leader epoch raised to the mirrored epochs", "mirrored_epoch", want, "new_leader_epoch", e)
			return
		}
		if d.ctx.Err() != nil {
			return
		}
		d.log.Warn("raising the leader epoch to the mirrored epochs failed; retrying", "mirrored_epoch", want, "error", err, "backoff", backoff)
		if !d.sleep(backoff) {
			return
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// checkEpochFloor raises the leader epoch if the log already holds batches
// of a higher epoch (a log mirrored before this leadership, or by a broker
// that did not keep the invariant).
func (d *driver) checkEpochFloor() {
	if l := d.part.Log(); l != nil {
		if e, ok := l.LatestEpoch(); ok {
			d.raiseLeaderEpoch(e)
		}
	}
}
