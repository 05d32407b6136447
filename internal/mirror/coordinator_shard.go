package mirror

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/coordinator"
	"github.com/kmirror/kmirror/internal/mirror/mirrorstate"
)

// stateShard is the mirror coordinator's state for one partition of
// __mirror_state: the latest value of every key, as the replay of the log
// gives it.
//
// Invariant: states and lmes equal the replay of the partition's log up to
// the last committed write (the coordinator runtime's rule); an entry's
// StateEpoch only grows, and its LeaderEpoch never decreases, because writes
// that would break either are refused before anything is written.
type stateShard struct {
	ctx    coordinator.ShardContext[*stateShard]
	c      *Coordinator
	states map[mirrorstate.PartitionKey]mirrorstate.PartitionValue
	lmes   map[mirrorstate.LMEKey]mirrorstate.LMEValue
}

func (c *Coordinator) newShard(ctx coordinator.ShardContext[*stateShard]) *stateShard {
	return &stateShard{
		ctx:    ctx,
		c:      c,
		states: map[mirrorstate.PartitionKey]mirrorstate.PartitionValue{},
		lmes:   map[mirrorstate.LMEKey]mirrorstate.LMEValue{},
	}
}

// Replay implements coordinator.Shard.
func (s *stateShard) Replay(r coordinator.LoggedRecord) error {
	k, err := mirrorstate.DecodeKey(r.Key)
	if err != nil {
		return err
	}
	switch k.Type {
	case mirrorstate.TypePartitionState:
		if r.Value == nil {
			delete(s.states, k.Partition)
			return nil
		}
		v, err := mirrorstate.DecodePartitionValue(r.Value)
		if err != nil {
			return err
		}
		s.states[k.Partition] = v
	case mirrorstate.TypeLastMirroredEpoch:
		if r.Value == nil {
			delete(s.lmes, k.LME)
			return nil
		}
		v, err := mirrorstate.DecodeLMEValue(r.Value)
		if err != nil {
			return err
		}
		s.lmes[k.LME] = v
	}
	return nil
}

// ReplayMarker implements coordinator.Shard: the mirror coordinator writes
// no transactions.
func (s *stateShard) ReplayMarker(int64, coordinator.Marker) error { return nil }

// Loaded implements coordinator.Shard: records of mirrors that no longer
// exist (deleted while no node led this partition) are removed. Every
// record was written while its mirror existed in the writer's metadata, and
// that metadata is older than the leadership this load follows, so a mirror
// missing from the image now was deleted, not created too recently to show.
func (s *stateShard) Loaded() {
	gone := s.deletedMirrors()
	if len(gone) == 0 {
		return
	}
	s.ctx.Logger.Info("removing the records of deleted mirrors", "mirrors", gone)
	s.ctx.Timers.Schedule("cleanup", s.ctx.Clock.Now(), tombstoneMirrorsOp(gone))
}

// Unloaded implements coordinator.Shard: nothing waits on the shard.
func (s *stateShard) Unloaded() {}

// deletedMirrors lists the mirrors with records here that the current
// image does not have.
func (s *stateShard) deletedMirrors() []string {
	exists := map[string]bool{}
	for _, m := range s.c.meta.Image().Mirrors() {
		exists[m] = true
	}
	var gone []string
	add := func(m string) {
		if !exists[m] && !slices.Contains(gone, m) {
			gone = append(gone, m)
		}
	}
	for k := range s.states {
		add(k.Mirror)
	}
	for _, v := range s.lmes {
		add(v.Mirror)
	}
	slices.Sort(gone)
	return gone
}

// tombstoneMirrorsOp removes every record of the mirrors.
func tombstoneMirrorsOp(mirrors []string) coordinator.Op[*stateShard] {
	return func(s *stateShard) (coordinator.Result, error) {
		var recs []coordinator.Record
		var states []mirrorstate.PartitionKey
		var lmes []mirrorstate.LMEKey
		for k := range s.states {
			if slices.Contains(mirrors, k.Mirror) {
				states = append(states, k)
				recs = append(recs, coordinator.Record{Key: mirrorstate.EncodePartitionKey(k)})
			}
		}
		for k, v := range s.lmes {
			if slices.Contains(mirrors, v.Mirror) {
				lmes = append(lmes, k)
				recs = append(recs, coordinator.Record{Key: mirrorstate.EncodeLMEKey(k)})
			}
		}
		return coordinator.Result{
			Records: recs,
			Apply: func(int64) {
				for _, k := range states {
					delete(s.states, k)
				}
				for _, k := range lmes {
					delete(s.lmes, k)
				}
			},
		}, nil
	}
}

// StateWrite is one transition to persist.
type StateWrite struct {
	Key         mirrorstate.PartitionKey
	Value       mirrorstate.PartitionValue
	LeaderEpoch int32
}

// LMEWrite is one Last Mirrored Epoch to persist.
type LMEWrite struct {
	Key   mirrorstate.LMEKey
	Value mirrorstate.LMEValue
}

// checkStateWrite says whether a state write may replace what the shard
// holds: its state epoch must be above the stored one and its leader epoch
// not below, and its mirror must exist.
func (s *stateShard) checkStateWrite(w StateWrite) error {
	if !w.Value.State.Valid() {
		return fmt.Errorf("mirror %s partition %d: state %d: %w", w.Key.Mirror, w.Key.Partition, int8(w.Value.State), kerr.InvalidRequest)
	}
	if !s.c.mirrorExists(w.Key.Mirror) {
		return fmt.Errorf("mirror %q does not exist (yet) on the coordinator: %w", w.Key.Mirror, kerr.ResourceNotFound)
	}
	if old, ok := s.states[w.Key]; ok {
		if w.Value.StateEpoch <= old.StateEpoch {
			return fmt.Errorf("mirror %s partition %d: state epoch %d is not above the stored %d: %w",
				w.Key.Mirror, w.Key.Partition, w.Value.StateEpoch, old.StateEpoch, kerr.FencedStateEpoch)
		}
		if w.LeaderEpoch < old.LeaderEpoch {
			return fmt.Errorf("mirror %s partition %d: leader epoch %d is older than the stored %d: %w",
				w.Key.Mirror, w.Key.Partition, w.LeaderEpoch, old.LeaderEpoch, kerr.FencedLeaderEpoch)
		}
	}
	return nil
}

// writeOp persists the states that pass their checks and all LMEs (which
// are refused together if their mirror is unknown); errs receives one
// result per state, lmeErr the LMEs' result.
func writeOp(states []StateWrite, lmes []LMEWrite, nowMs int64, errs []error, lmeErr *error) coordinator.Op[*stateShard] {
	return func(s *stateShard) (coordinator.Result, error) {
		var recs []coordinator.Record
		type accepted struct {
			k mirrorstate.PartitionKey
			v mirrorstate.PartitionValue
		}
		var ok []accepted
		for i, w := range states {
			if err := s.checkStateWrite(w); err != nil {
				errs[i] = err
				continue
			}
			errs[i] = nil
			v := w.Value
			v.LeaderEpoch = w.LeaderEpoch
			v.UpdateMillis = nowMs
			recs = append(recs, coordinator.Record{Key: mirrorstate.EncodePartitionKey(w.Key), Value: mirrorstate.EncodePartitionValue(v)})
			ok = append(ok, accepted{w.Key, v})
		}
		*lmeErr = nil
		for _, l := range lmes {
			if !s.c.mirrorExists(l.Value.Mirror) {
				*lmeErr = fmt.Errorf("mirror %q does not exist (yet) on the coordinator: %w", l.Value.Mirror, kerr.ResourceNotFound)
			}
		}
		var lmeOK []LMEWrite
		if *lmeErr == nil {
			for _, l := range lmes {
				l.Value.UpdateMillis = nowMs
				recs = append(recs, coordinator.Record{Key: mirrorstate.EncodeLMEKey(l.Key), Value: mirrorstate.EncodeLMEValue(l.Value)})
				lmeOK = append(lmeOK, l)
			}
		}
		return coordinator.Result{
			Records: recs,
			Apply: func(int64) {
				for _, a := range ok {
					s.states[a.k] = a.v
				}
				for _, l := range lmeOK {
					s.lmes[l.Key] = l.Value
				}
			},
		}, nil
	}
}

// StoredState is a partition's persisted state as the coordinator holds it.
type StoredState struct {
	Value mirrorstate.PartitionValue
	// Found is false when no state was ever written (UNKNOWN).
	Found bool
}

// readStates copies the stored states of keys into out.
func readStates(keys []mirrorstate.PartitionKey, out []StoredState) func(*stateShard) error {
	return func(s *stateShard) error {
		for i, k := range keys {
			v, ok := s.states[k]
			out[i] = StoredState{Value: v, Found: ok}
		}
		return nil
	}
}

// lookupLME returns the LME of a partition if it was recorded for
// sourceCluster, the cluster that asks.
func lookupLME(k mirrorstate.LMEKey, sourceCluster string, epoch *int32, end *int64) func(*stateShard) error {
	return func(s *stateShard) error {
		*epoch, *end = -1, -1
		if v, ok := s.lmes[k]; ok && v.SourceClusterID == sourceCluster {
			*epoch, *end = v.LastMirroredEpoch, v.EndOffset
		}
		return nil
	}
}
