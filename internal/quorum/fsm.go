package quorum

import (
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/kmirror/kmirror/internal/metadata"
)

// stateMachine is the raft FSM: it applies each committed entry (one
// metadata.EncodeBatch) to the image. raft calls Apply, Snapshot and Restore
// from one goroutine; readers use the atomics.
//
// Invariants:
//   - An entry is applied atomically: every record replays, or the entry is
//     rejected as a whole and the image does not change. Replay is
//     deterministic, so every node accepts and rejects the same entries.
//   - image.Offset() is the index of the last accepted entry with records;
//     applied is the index of the last entry seen (accepted or not), which
//     is what WaitForOffset waits for.
type stateMachine struct {
	log   *slog.Logger
	image atomic.Pointer[metadata.Image]

	applied   atomic.Uint64
	appliedMu sync.Mutex
	appliedCh chan struct{} // closed and replaced when applied moves

	disp *dispatcher
}

func newStateMachine(log *slog.Logger, disp *dispatcher) *stateMachine {
	sm := &stateMachine{log: log, appliedCh: make(chan struct{}), disp: disp}
	sm.image.Store(metadata.EmptyImage())
	return sm
}

// applyResult is the FSM's response to an entry, read by Propose.
type applyResult struct {
	err error
}

// Apply implements raft.FSM.
func (sm *stateMachine) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	res := sm.applyEntry(l.Index, l.Data)
	sm.setApplied(l.Index)
	return res
}

func (sm *stateMachine) applyEntry(index uint64, data []byte) applyResult {
	rs, err := metadata.DecodeBatch(data)
	if err != nil {
		sm.log.Error("metadata log entry does not decode; skipped", "offset", index, "err", err)
		return applyResult{fmt.Errorf("metadata log entry %d: %w", index, err)}
	}
	cur := sm.image.Load()
	d := metadata.NewDelta(cur)
	for _, r := range rs {
		if err := d.Replay(r, index); err != nil {
			sm.log.Warn("metadata log entry rejected", "offset", index, "records", len(rs), "err", err)
			return applyResult{err}
		}
	}
	img := d.Apply()
	sm.image.Store(img)
	sm.disp.enqueue(rs, index, img)
	return applyResult{}
}

func (sm *stateMachine) setApplied(index uint64) {
	sm.applied.Store(index)
	sm.appliedMu.Lock()
	close(sm.appliedCh)
	sm.appliedCh = make(chan struct{})
	sm.appliedMu.Unlock()
}

// appliedChan returns a channel that is closed when applied next moves.
func (sm *stateMachine) appliedChan() <-chan struct{} {
	sm.appliedMu.Lock()
	defer sm.appliedMu.Unlock()
	return sm.appliedCh
}

// Snapshot implements raft.FSM. Images are immutable, so capturing the
// pointer is the whole snapshot; Persist encodes it on raft's snapshot
// goroutine while Apply carries on.
func (sm *stateMachine) Snapshot() (raft.FSMSnapshot, error) {
	return &fsmSnapshot{img: sm.image.Load(), applied: sm.applied.Load(), log: sm.log}, nil
}

// Restore implements raft.FSM: it replaces the image with the one in the
// snapshot and tells publishers everything that differs.
func (sm *stateMachine) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	img, applied, err := readSnapshot(rc)
	if err != nil {
		return fmt.Errorf("restore metadata snapshot: %w", err)
	}
	sm.image.Store(img)
	sm.disp.reset(img)
	sm.setApplied(applied)
	sm.log.Info("metadata image restored from snapshot", "offset", img.Offset(), "applied", applied,
		"topics", img.NumTopics(), "brokers", len(img.Brokers()))
	return nil
}

type fsmSnapshot struct {
	img     *metadata.Image
	applied uint64
	log     *slog.Logger
}

// Persist implements raft.FSMSnapshot.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := writeSnapshot(sink, s.img, s.applied); err != nil {
		sink.Cancel()
		return fmt.Errorf("write metadata snapshot: %w", err)
	}
	if err := sink.Close(); err != nil {
		return fmt.Errorf("close metadata snapshot: %w", err)
	}
	s.log.Info("metadata snapshot written", "offset", s.img.Offset(), "applied", s.applied, "id", sink.ID())
	return nil
}

// Release implements raft.FSMSnapshot.
func (s *fsmSnapshot) Release() {}
