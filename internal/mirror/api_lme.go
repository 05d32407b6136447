package mirror

import (
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/mirror/mirrorstate"
	"github.com/kmirror/kmirror/internal/wire"
)

// handleReadLastMirroredEpochs answers another cluster's question: for each
// partition, the greatest leader epoch of the asking cluster that this
// cluster's copy holds (recorded when this cluster failed over from a
// mirror of the asker). Any broker answers: keys whose coordinator is
// another broker are asked there (with the local-only tag, so that the
// question is forwarded at most once).
func (c *Coordinator) handleReadLastMirroredEpochs(ctx context.Context, _ *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req, ok := kreq.(*wire.ReadLastMirroredEpochsRequest)
	if !ok {
		return nil, fmt.Errorf("ReadLastMirroredEpochs handler got %T", kreq)
	}
	img := c.meta.Image()
	resp := &wire.ReadLastMirroredEpochsResponse{Version: req.Version}
	localOnly := isLocalOnly(req.UnknownTags)
	_, stateTopicExists := img.Topic(mirrorstate.Topic)
	n := c.Partitions()

	// slot is one answer to fill, found by its position.
	type slot struct{ t, p int }
	remote := map[int32][]slot{} // coordinator broker → partitions to ask it
	for ti, rt := range req.Topics {
		t := wire.ReadLastMirroredEpochsResponseTopic{TopicID: rt.TopicID, Name: rt.Name}
		topic, terr := resolveTopic(img, rt.TopicID, rt.Name)
		id := rt.TopicID
		if topic != nil {
			id = topic.ID
		}
		for _, p := range rt.Partitions {
			rp := wire.ReadLastMirroredEpochsResponsePartition{Partition: p, LastMirroredEpoch: -1, EndOffset: -1}
			switch {
			case terr != nil:
				rp.ErrorCode = wire.ErrorCode(terr)
			case !hasPartition(topic, p):
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case !stateTopicExists:
				// No mirror ever ran here: nothing was recorded.
			default:
				k := mirrorstate.LMEKey{TopicID: id, Partition: p}
				sp := mirrorstate.LMEPartitionFor(k.TopicID, k.Partition, n)
				leader, err := stateLeader(img, mirrorstate.Topic, sp)
				switch {
				case err != nil:
					rp.ErrorCode = wire.ErrorCode(err)
				case leader == c.cfg.NodeID || localOnly:
					e, end, err := c.ReadLME(ctx, k, req.ClusterID)
					rp.ErrorCode, rp.LastMirroredEpoch, rp.EndOffset = wire.ErrorCode(err), e, end
				default:
					remote[leader] = append(remote[leader], slot{ti, len(t.Partitions)})
				}
			}
			t.Partitions = append(t.Partitions, rp)
		}
		if topic != nil {
			t.TopicID = topic.ID
		}
		resp.Topics = append(resp.Topics, t)
	}

	var wg sync.WaitGroup
	var mu sync.Mutex
	for leader, slots := range remote {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fwd := &wire.ReadLastMirroredEpochsRequest{ClusterID: req.ClusterID}
			setLocalOnly(&fwd.UnknownTags)
			for _, s := range slots {
				t := resp.Topics[s.t]
				fwd.Topics = append(fwd.Topics, wire.ReadLastMirroredEpochsRequestTopic{
					TopicID: t.TopicID, Name: t.Name, Partitions: []int32{t.Partitions[s.p].Partition},
				})
			}
			ans, err := c.forwardLME(ctx, img, leader, fwd)
			mu.Lock()
			defer mu.Unlock()
			for i, s := range slots {
				rp := &resp.Topics[s.t].Partitions[s.p]
				switch {
				case err != nil:
					rp.ErrorCode = wire.ErrorCode(err)
				case i < len(ans.Topics) && len(ans.Topics[i].Partitions) == 1:
					a := ans.Topics[i].Partitions[0]
					rp.ErrorCode, rp.LastMirroredEpoch, rp.EndOffset = a.ErrorCode, a.LastMirroredEpoch, a.EndOffset
				default:
					rp.ErrorCode = kerr.UnknownServerError.Code
				}
			}
		}()
	}
	wg.Wait()
	return resp, nil
}

// forwardLME asks the broker coordinating some LME keys.
func (c *Coordinator) forwardLME(ctx context.Context, img *metadata.Image, broker int32, req *wire.ReadLastMirroredEpochsRequest) (*wire.ReadLastMirroredEpochsResponse, error) {
	addr, err := brokerAddr(img, broker, c.cfg.InterBrokerListener)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	kresp, err := c.conns.request(ctx, addr, req)
	if err != nil {
		return nil, fmt.Errorf("ask broker %d for last mirrored epochs: %v: %w", broker, err, kerr.CoordinatorNotAvailable)
	}
	resp, ok := kresp.(*wire.ReadLastMirroredEpochsResponse)
	if !ok {
		return nil, errNotKmirror
	}
	if resp.ErrorCode != 0 {
		return nil, kerr.ErrorForCode(resp.ErrorCode)
	}
	return resp, nil
}

// resolveTopic finds a topic by id, or by name when the id is zero.
func resolveTopic(img *metadata.Image, id [16]byte, name string) (*metadata.TopicImage, error) {
	if id != ([16]byte{}) {
		t, ok := img.TopicByID(metadata.Uuid(id))
		if !ok {
			return nil, fmt.Errorf("topic id %s: %w", metadata.Uuid(id), kerr.UnknownTopicID)
		}
		return t, nil
	}
	t, ok := img.Topic(name)
	if !ok {
		return nil, fmt.Errorf("topic %q: %w", name, kerr.UnknownTopicOrPartition)
	}
	return t, nil
}

func hasPartition(t *metadata.TopicImage, p int32) bool {
	if t == nil {
		return false
	}
	_, ok := t.Partition(p)
	return ok
}
