package mirror

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/mirror/mirrorstate"
	"github.com/kmirror/kmirror/internal/wire"
)

// APIs are the mirror coordinator's Kafka APIs: ReadMirrorStates (100) and
// WriteMirrorStates (101) for this cluster's brokers, and
// ReadLastMirroredEpochs (104) for other clusters mirroring from this one.
func (c *Coordinator) APIs() []wire.API {
	return []wire.API{
		{Key: wire.KeyReadMirrorStates, MinVersion: 0, MaxVersion: 0, Handle: c.handleReadMirrorStates},
		{Key: wire.KeyWriteMirrorStates, MinVersion: 0, MaxVersion: 0, Handle: c.handleWriteMirrorStates},
		{Key: wire.KeyReadLastMirroredEpochs, MinVersion: 0, MaxVersion: 0, Handle: c.handleReadLastMirroredEpochs},
	}
}

func (c *Coordinator) handleReadMirrorStates(ctx context.Context, _ *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req, ok := kreq.(*wire.ReadMirrorStatesRequest)
	if !ok {
		return nil, fmt.Errorf("ReadMirrorStates handler got %T", kreq)
	}
	keys := make([]mirrorstate.PartitionKey, len(req.Partitions))
	for i, p := range req.Partitions {
		keys[i] = mirrorstate.PartitionKey{Mirror: p.MirrorName, TopicID: p.TopicID, Partition: p.Partition}
	}
	states, errs := c.ReadStates(ctx, keys)
	resp := &wire.ReadMirrorStatesResponse{Version: req.Version}
	for i, p := range req.Partitions {
		rp := wire.ReadMirrorStatesResponsePartition{
			MirrorName: p.MirrorName, TopicID: p.TopicID, Partition: p.Partition,
			State: wire.MirrorStateUnknown, LeaderEpoch: -1, UpdateMillis: -1,
		}
		if err := errs[i]; err != nil {
			rp.ErrorCode, rp.ErrorMessage = wire.ErrorCode(err), wire.ErrorMessage(err)
		} else if st := states[i]; st.Found {
			v := st.Value
			rp.State, rp.StateEpoch, rp.LeaderEpoch, rp.UpdateMillis = v.State, v.StateEpoch, v.LeaderEpoch, v.UpdateMillis
			if v.LastError != "" {
				s := v.LastError
				rp.LastError = &s
			}
			setStringTag(&rp.UnknownTags, tagSourceCluster, v.SourceClusterID)
		}
		resp.Partitions = append(resp.Partitions, rp)
	}
	return resp, nil
}

func (c *Coordinator) handleWriteMirrorStates(ctx context.Context, _ *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req, ok := kreq.(*wire.WriteMirrorStatesRequest)
	if !ok {
		return nil, fmt.Errorf("WriteMirrorStates handler got %T", kreq)
	}
	states := make([]StateWrite, len(req.Partitions))
	for i, p := range req.Partitions {
		states[i] = stateWriteFromWire(p)
	}
	lmes := make([]LMEWrite, len(req.LastMirroredEpochs))
	for i, l := range req.LastMirroredEpochs {
		lmes[i] = LMEWrite{
			Key: mirrorstate.LMEKey{TopicID: l.TopicID, Partition: l.Partition},
			Value: mirrorstate.LMEValue{Mirror: l.MirrorName, SourceClusterID: l.SourceClusterID,
				LastMirroredEpoch: l.LastMirroredEpoch, EndOffset: l.EndOffset},
		}
	}
	errs, lmeErr := c.WriteStates(ctx, states, lmes)
	resp := &wire.WriteMirrorStatesResponse{Version: req.Version, ErrorCode: wire.ErrorCode(lmeErr)}
	for i, p := range req.Partitions {
		resp.Partitions = append(resp.Partitions, wire.WriteMirrorStatesResponsePartition{
			MirrorName: p.MirrorName, TopicID: p.TopicID, Partition: p.Partition,
			ErrorCode: wire.ErrorCode(errs[i]), ErrorMessage: wire.ErrorMessage(errs[i]),
		})
	}
	return resp, nil
}

// stateWriteFromWire converts a request partition.
func stateWriteFromWire(p wire.WriteMirrorStatesRequestPartition) StateWrite {
	w := StateWrite{
		Key: mirrorstate.PartitionKey{Mirror: p.MirrorName, TopicID: p.TopicID, Partition: p.Partition},
		Value: mirrorstate.PartitionValue{State: p.State, StateEpoch: p.StateEpoch,
			SourceClusterID: stringTag(p.UnknownTags, tagSourceCluster)},
		LeaderEpoch: p.LeaderEpoch,
	}
	if p.LastError != nil {
		w.Value.LastError = *p.LastError
	}
	return w
}

// stateWriteToWire converts a write for a request.
func stateWriteToWire(w StateWrite) wire.WriteMirrorStatesRequestPartition {
	p := wire.WriteMirrorStatesRequestPartition{
		MirrorName: w.Key.Mirror, TopicID: w.Key.TopicID, Partition: w.Key.Partition,
		State: w.Value.State, StateEpoch: w.Value.StateEpoch, LeaderEpoch: w.LeaderEpoch,
	}
	if w.Value.LastError != "" {
		s := w.Value.LastError
		p.LastError = &s
	}
	setStringTag(&p.UnknownTags, tagSourceCluster, w.Value.SourceClusterID)
	return p
}

// errNotKmirror is wrapped when a peer answers with the wrong type.
var errNotKmirror = fmt.Errorf("unexpected response: %w", kerr.UnknownServerError)
