package mirror

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/auth"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/mirror/mirrorstate"
)

// SyncController is what the periodic sync writes through: the active
// controller (controller.Channel). SendForMirror carries
// IncrementalAlterConfigs (topic configs) and CreatePartitions as the
// mirror's own writes, which its read-only topics take; Send carries
// DeleteAcls; CreateSyncedACLs creates ACLs under their synced ids.
type SyncController interface {
	Send(ctx context.Context, req kmsg.Request) (kmsg.Response, error)
	SendForMirror(ctx context.Context, mirror string, req kmsg.Request) (kmsg.Response, error)
	CreateSyncedACLs(ctx context.Context, mirror string, bindings []auth.Binding) ([]error, error)
}

// SyncDeps are what the periodic sync needs from the node. Without a
// Controller no sync runs.
type SyncDeps struct {
	// Controller writes configs, partitions and ACLs.
	Controller SyncController
	// Dial connects to this cluster's brokers on InterBrokerListener, for
	// the group coordinators and partition leaders the offset sync asks
	// (nil: plain TCP).
	Dial Dialer
	// InterBrokerListener is the listener the sync reaches other brokers
	// (and this one) on.
	InterBrokerListener string
}

// syncOwnerPartition is the __mirror_state partition whose leader runs a
// mirror's periodic sync: the partition of the key (mirror, zero topic id,
// partition -1), which no mirrored partition has.
func syncOwnerPartition(mirror string, partitions int32) int32 {
	return mirrorstate.PartitionFor(mirror, [16]byte{}, -1, partitions)
}

// syncOwner returns the broker that runs a mirror's sync in img, -1 when
// __mirror_state or its partition's leader is missing.
func syncOwner(img *metadata.Image, mirror string) int32 {
	t, ok := img.Topic(mirrorstate.Topic)
	if !ok || len(t.Partitions) == 0 {
		return -1
	}
	ps, ok := t.Partition(syncOwnerPartition(mirror, int32(len(t.Partitions))))
	if !ok {
		return -1
	}
	return ps.Leader
}

// syncRunner runs the periodic sync of every mirror whose owner partition
// this broker leads: exactly one broker of the cluster per mirror (for a
// moment two, while leadership moves; every sync step is idempotent).
// It is part of the Manager and follows its metadata updates.
type syncRunner struct {
	m    *Manager
	log  *slog.Logger
	pool *connPool

	mu      sync.Mutex
	closed  bool
	running map[string]*mirrorSync
}

func newSyncRunner(m *Manager) *syncRunner {
	if m.deps.Sync.Controller == nil {
		return nil
	}
	return &syncRunner{
		m: m, log: m.log.With("component", "mirror-sync"),
		pool:    newConnPool(m.deps.Sync.Dial, "kmirror-mirror-sync"),
		running: map[string]*mirrorSync{},
	}
}

// update starts the syncs this broker now owns, restarts those whose
// mirror's properties changed (a new source client), and stops the others.
// It does not block.
func (r *syncRunner) update(delta *metadata.Delta, img *metadata.Image) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	changed := delta.ChangedMirrors()
	mirrors := img.Mirrors()
	for _, name := range mirrors {
		own := syncOwner(img, name) == r.m.cfg.NodeID
		old := r.running[name]
		switch {
		case !own && old != nil:
			old.stop()
			delete(r.running, name)
			r.log.Info("mirror sync handed over", "mirror", name)
		case own && (old == nil || slices.Contains(changed, name)):
			if old != nil {
				old.stop()
			}
			s := newMirrorSync(r, name, maps.Clone(img.Configs(metadata.ConfigResource{Type: metadata.ResourceMirror, Name: name})), old)
			r.running[name] = s
			s.start()
		}
	}
	for name, s := range r.running {
		if !slices.Contains(mirrors, name) {
			s.stop()
			delete(r.running, name)
		}
	}
}

// status returns the sync status of a mirror this broker runs.
func (r *syncRunner) status(mirror string) ([]syncKindStatus, bool) {
	if r == nil {
		return nil, false
	}
	r.mu.Lock()
	s := r.running[mirror]
	r.mu.Unlock()
	if s == nil {
		return nil, false
	}
	return s.statuses(), true
}

// close stops every sync; the Manager's wait group waits for them.
func (r *syncRunner) close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.closed = true
	for name, s := range r.running {
		s.stop()
		delete(r.running, name)
	}
	r.mu.Unlock()
	r.pool.close()
}
