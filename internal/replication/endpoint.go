package replication

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/storage"
)

// Source is where a partition is fetched from: a broker of this cluster
// (Cluster "") or of another one (a mirror's source cluster). Partitions of
// one Source share that Source's fetchers and their connections.
type Source struct {
	// Cluster is "" for this cluster; a mirror names its source cluster,
	// so that broker ids of different clusters never share a fetcher.
	Cluster string
	// BrokerID is the source broker's node id.
	BrokerID int32
	// Addr is the broker's host:port.
	Addr string
}

// String names the source in logs.
func (s Source) String() string {
	if s.Cluster == "" {
		return fmt.Sprintf("broker %d (%s)", s.BrokerID, s.Addr)
	}
	return fmt.Sprintf("%s broker %d (%s)", s.Cluster, s.BrokerID, s.Addr)
}

// Endpoint is the far side of a fetcher: the broker it fetches from. A
// fetcher uses its Endpoint from one goroutine, one call at a time, and
// closes it after any error (then asks the Manager's NewEndpoint for a new
// one).
type Endpoint interface {
	// Fetch sends a Fetch request and returns the response. An error means
	// the request failed as a whole (the connection broke, ctx ended);
	// per-partition errors are in the response.
	Fetch(ctx context.Context, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error)
	// EarliestLatest returns the log start and log end offsets of the
	// partitions on the source (for a consumer endpoint, the end is what a
	// consumer may read), in the order asked, for the resolution of
	// OFFSET_OUT_OF_RANGE. Per-partition failures are in OffsetRange.Err.
	EarliestLatest(ctx context.Context, parts []PartitionRef) ([]OffsetRange, error)
	// Close releases the endpoint's connection.
	Close() error
}

// PartitionRef names a partition in a request to an Endpoint.
type PartitionRef struct {
	TopicPartition storage.TopicPartition
	// TopicID is the topic's id, zero if unknown.
	TopicID [16]byte
	// LeaderEpoch is the leader epoch the fetcher believes current (sent as
	// CurrentLeaderEpoch so that a stale source is detected); -1 for none.
	LeaderEpoch int32
}

// OffsetRange is a partition's log start and end offset on the source.
type OffsetRange struct {
	Start, End int64
	// Err, when not nil, wraps the Kafka error the source answered for the
	// partition; Start and End are then meaningless.
	Err error
}
