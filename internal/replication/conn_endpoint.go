package replication

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/wire"
)

// ConnEndpoint is an Endpoint over one wire.Conn to a broker that speaks
// Kafka: a follower's connection to its leader's inter-broker listener.
type ConnEndpoint struct {
	conn      *wire.Conn
	replicaID int32
}

// listOffsetsVersion is the ListOffsets version ConnEndpoint sends: v4 and
// later carry CurrentLeaderEpoch, which fences a stale answer.
const listOffsetsVersion = 7

// DialEndpoint connects to addr, secured by opts (TLS, SASL: how the node
// reaches the leader's inter-broker listener). replicaID is sent in
// ListOffsets (a follower's node id makes "latest" the leader's log end
// offset rather than its high watermark; -1 asks as a consumer).
func DialEndpoint(ctx context.Context, addr, clientID string, replicaID int32, opts ...wire.DialOption) (*ConnEndpoint, error) {
	c, err := wire.Dial(ctx, "tcp", addr, clientID, opts...)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return &ConnEndpoint{conn: c, replicaID: replicaID}, nil
}

// Fetch implements Endpoint.
func (e *ConnEndpoint) Fetch(ctx context.Context, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	resp, err := e.conn.Request(ctx, req)
	if err != nil {
		return nil, err
	}
	fr, ok := resp.(*kmsg.FetchResponse)
	if !ok {
		return nil, fmt.Errorf("fetch answered with %T", resp)
	}
	return fr, nil
}

// EarliestLatest implements Endpoint with two ListOffsets requests (a
// partition may appear only once per request): the earliest and the latest
// offset.
func (e *ConnEndpoint) EarliestLatest(ctx context.Context, parts []PartitionRef) ([]OffsetRange, error) {
	starts, err := e.listOffsets(ctx, parts, -2)
	if err != nil {
		return nil, err
	}
	ends, err := e.listOffsets(ctx, parts, -1)
	if err != nil {
		return nil, err
	}
	out := make([]OffsetRange, len(parts))
	for i := range parts {
		out[i] = OffsetRange{Start: starts[i].offset, End: ends[i].offset, Err: starts[i].err}
		if out[i].Err == nil {
			out[i].Err = ends[i].err
		}
	}
	return out, nil
}

type listedOffset struct {
	offset int64
	err    error
}

// listOffsets asks for every partition's offset at timestamp ts.
func (e *ConnEndpoint) listOffsets(ctx context.Context, parts []PartitionRef, ts int64) ([]listedOffset, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = listOffsetsVersion
	req.ReplicaID = e.replicaID
	index := map[storage.TopicPartition]int{}
	for i, p := range parts {
		index[p.TopicPartition] = i
		var rt *kmsg.ListOffsetsRequestTopic
		for j := range req.Topics {
			if req.Topics[j].Topic == p.TopicPartition.Topic {
				rt = &req.Topics[j]
			}
		}
		if rt == nil {
			t := kmsg.NewListOffsetsRequestTopic()
			t.Topic = p.TopicPartition.Topic
			req.Topics = append(req.Topics, t)
			rt = &req.Topics[len(req.Topics)-1]
		}
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p.TopicPartition.Partition, ts, p.LeaderEpoch
		rt.Partitions = append(rt.Partitions, rp)
	}
	resp, err := e.conn.Request(ctx, req)
	if err != nil {
		return nil, err
	}
	lr, ok := resp.(*kmsg.ListOffsetsResponse)
	if !ok {
		return nil, fmt.Errorf("list offsets answered with %T", resp)
	}
	out := make([]listedOffset, len(parts))
	for i := range out {
		out[i].err = fmt.Errorf("list offsets of %s: no answer: %w", parts[i].TopicPartition, kerr.UnknownServerError)
	}
	for _, t := range lr.Topics {
		for _, p := range t.Partitions {
			i, ok := index[storage.TopicPartition{Topic: t.Topic, Partition: p.Partition}]
			if !ok {
				continue
			}
			if p.ErrorCode != 0 {
				out[i] = listedOffset{err: fmt.Errorf("list offsets of %s: %w", parts[i].TopicPartition, kerr.ErrorForCode(p.ErrorCode))}
				continue
			}
			out[i] = listedOffset{offset: p.Offset}
		}
	}
	return out, nil
}

// Close implements Endpoint.
func (e *ConnEndpoint) Close() error { return e.conn.Close() }
