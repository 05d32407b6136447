package mirror

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/mirror/mirrorstate"
)

// The local operations of the coordinator: what the API handlers and the
// in-process state store call. Keys are grouped by their partition of
// __mirror_state; a key whose partition this node does not lead gets
// NOT_COORDINATOR (or COORDINATOR_LOAD_IN_PROGRESS while it loads).

// ReadStates returns the persisted state of each key (errs[i] non-nil when
// key i could not be read here).
func (c *Coordinator) ReadStates(ctx context.Context, keys []mirrorstate.PartitionKey) ([]StoredState, []error) {
	out := make([]StoredState, len(keys))
	errs := make([]error, len(keys))
	n := c.Partitions()
	groups := map[int32][]int{}
	for i, k := range keys {
		p := mirrorstate.PartitionFor(k.Mirror, k.TopicID, k.Partition, n)
		groups[p] = append(groups[p], i)
	}
	for p, idx := range groups {
		ks := make([]mirrorstate.PartitionKey, len(idx))
		for j, i := range idx {
			ks[j] = keys[i]
		}
		res := make([]StoredState, len(idx))
		err := c.rt.Read(ctx, p, readStates(ks, res))
		for j, i := range idx {
			out[i], errs[i] = res[j], coordErr(err, p)
		}
	}
	return out, errs
}

// WriteStates persists state transitions and LMEs that this node
// coordinates, each in one batch per __mirror_state partition. errs has one
// result per state; lmeErr is the first failure among the LMEs (they have no
// result of their own on the wire).
func (c *Coordinator) WriteStates(ctx context.Context, states []StateWrite, lmes []LMEWrite) (errs []error, lmeErr error) {
	errs = make([]error, len(states))
	n := c.Partitions()
	type group struct {
		states []int
		lmes   []LMEWrite
	}
	groups := map[int32]*group{}
	get := func(p int32) *group {
		g := groups[p]
		if g == nil {
			g = &group{}
			groups[p] = g
		}
		return g
	}
	for i, w := range states {
		g := get(mirrorstate.PartitionFor(w.Key.Mirror, w.Key.TopicID, w.Key.Partition, n))
		g.states = append(g.states, i)
	}
	for _, l := range lmes {
		g := get(mirrorstate.LMEPartitionFor(l.Key.TopicID, l.Key.Partition, n))
		g.lmes = append(g.lmes, l)
	}
	now := c.nowMs()
	for p, g := range groups {
		ws := make([]StateWrite, len(g.states))
		for j, i := range g.states {
			ws[j] = states[i]
		}
		res := make([]error, len(ws))
		var gl error
		err := coordErr(c.rt.Write(ctx, p, writeOp(ws, g.lmes, now, res, &gl)), p)
		for j, i := range g.states {
			if err != nil {
				errs[i] = err
			} else {
				errs[i] = res[j]
			}
		}
		if len(g.lmes) > 0 && lmeErr == nil {
			if err != nil {
				lmeErr = err
			} else {
				lmeErr = gl
			}
		}
	}
	return errs, lmeErr
}

// ReadLME returns the Last Mirrored Epoch this node holds for a partition
// and the asking cluster, (-1, -1) if none.
func (c *Coordinator) ReadLME(ctx context.Context, k mirrorstate.LMEKey, askingCluster string) (epoch int32, end int64, err error) {
	p := mirrorstate.LMEPartitionFor(k.TopicID, k.Partition, c.Partitions())
	err = c.rt.Read(ctx, p, lookupLME(k, askingCluster, &epoch, &end))
	return epoch, end, coordErr(err, p)
}

// coordErr names the partition in a runtime error, keeping its Kafka code.
func coordErr(err error, p int32) error {
	if err == nil {
		return nil
	}
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		err = fmt.Errorf("%w: %w", err, kerr.RequestTimedOut)
	}
	return fmt.Errorf("%s partition %d: %w", mirrorstate.Topic, p, err)
}
