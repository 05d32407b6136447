package quorum

import (
	"log/slog"
	"sync"

	"github.com/kmirror/kmirror/internal/metadata"
)

// dispatcher hands metadata changes to publishers from one goroutine, in log
// order, so that a slow publisher never holds up raft.
//
// The FSM never waits for publishers: it replays each accepted entry's
// records into a pending delta (whose base is the last image published) and
// moves on. When the dispatcher goroutine is free, it takes the pending
// delta and the latest image and publishes them, so several entries are
// coalesced into one delta. The pending delta is bounded by the size of the
// image (it holds at most one state per topic, partition, config, ...), not
// by the number of entries, so a stalled publisher costs memory
// proportional to the metadata, and raft apply never blocks for more than a
// replay.
//
// Invariant: pending.Apply() equals img, and pending.Base() is the image of
// the previous publication, so every publisher sees an unbroken chain:
// each delta's Base() is the img it received last.
type dispatcher struct {
	log *slog.Logger

	mu      sync.Mutex
	pending *metadata.Delta
	img     *metadata.Image
	added   []metadata.Publisher

	wake chan struct{} // capacity 1: "something to do"
	stop chan struct{}
	done chan struct{}

	// pubs is owned by the dispatcher goroutine.
	pubs []metadata.Publisher
}

func newDispatcher(log *slog.Logger) *dispatcher {
	empty := metadata.EmptyImage()
	return &dispatcher{
		log:     log,
		pending: metadata.NewDelta(empty),
		img:     empty,
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
}

func (d *dispatcher) start() { go d.run() }

// close stops the goroutine after the publication in progress, if any.
func (d *dispatcher) close() {
	close(d.stop)
	<-d.done
}

func (d *dispatcher) signal() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// enqueue adds an accepted entry (records at index, producing img).
func (d *dispatcher) enqueue(rs []metadata.Record, index uint64, img *metadata.Image) {
	d.mu.Lock()
	for _, r := range rs {
		if err := d.pending.Replay(r, index); err != nil {
			// Cannot happen: the FSM replayed the same records onto an equal
			// state. Recover by describing the difference directly.
			d.log.Error("metadata publisher delta diverged; rebuilding it", "offset", index, "err", err)
			d.pending = metadata.Diff(d.pending.Base(), img)
			break
		}
	}
	d.img = img
	d.mu.Unlock()
	d.signal()
}

// reset replaces the state with img (a snapshot was restored): the next
// publication is the difference from the last published image.
func (d *dispatcher) reset(img *metadata.Image) {
	d.mu.Lock()
	d.pending = metadata.Diff(d.pending.Base(), img)
	d.img = img
	d.mu.Unlock()
	d.signal()
}

// add registers a publisher; its first update is the whole current image.
func (d *dispatcher) add(p metadata.Publisher) {
	d.mu.Lock()
	d.added = append(d.added, p)
	d.mu.Unlock()
	d.signal()
}

func (d *dispatcher) run() {
	defer close(d.done)
	for {
		select {
		case <-d.stop:
			return
		case <-d.wake:
		}
		d.mu.Lock()
		delta, img, added := d.pending, d.img, d.added
		d.added = nil
		changed := delta.HasChanges() || delta.Offset() != delta.Base().Offset()
		if changed {
			d.pending = metadata.NewDelta(img)
		}
		d.mu.Unlock()

		if changed {
			for _, p := range d.pubs {
				p.OnMetadataUpdate(delta, img)
			}
		}
		for _, p := range added {
			d.log.Info("metadata publisher added", "publisher", p.Name(), "offset", img.Offset())
			p.OnMetadataUpdate(metadata.Diff(metadata.EmptyImage(), img), img)
			d.pubs = append(d.pubs, p)
		}
	}
}
