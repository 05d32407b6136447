package server

import (
	"context"
	"strconv"
	"time"

	"github.com/kmirror/kmirror/internal/mirror"
	"github.com/kmirror/kmirror/internal/mirror/mirrorconfig"
	"github.com/kmirror/kmirror/internal/wire"
)

// mirrorNode is a broker's part of cluster mirroring: the mirror
// coordinator on __mirror_state, the state store that reaches the
// coordinator of each key, the manager that drives the mirrored partitions
// the broker leads, and DescribeMirrors.
type mirrorNode struct {
	coord    *mirror.Coordinator
	store    *mirror.RoutedStore
	manager  *mirror.Manager
	describe *mirror.Describer
}

// MirrorManager returns the node's mirror manager (nil on a node without
// the broker role).
func (n *Node) MirrorManager() *mirror.Manager {
	if n.mirror == nil {
		return nil
	}
	return n.mirror.manager
}

// startMirror builds and starts the mirror data plane over the node's
// broker and returns the services to serve on the broker listeners. The
// coordinator and the manager follow the metadata as publishers.
func (n *Node) startMirror() ([]wire.Service, error) {
	b := n.broker
	cfg := n.cfg
	reqTimeout := time.Duration(cfg.ReplicaSocketTimeoutMs) * time.Millisecond
	// Every connection of the mirror to this cluster's brokers (state
	// reads and writes, forwarded last-mirrored-epoch reads, DescribeMirrors
	// fan-out, the periodic sync) uses the inter-broker listener, secured
	// as that listener requires.
	interBroker, err := n.dialOptions(cfg.InterBrokerListenerName)
	if err != nil {
		return nil, err
	}
	dialAs := func(clientID string) mirror.Dialer {
		return func(ctx context.Context, addr string) (*wire.Conn, error) {
			return wire.Dial(ctx, "tcp", addr, clientID, interBroker...)
		}
	}
	node := strconv.Itoa(int(cfg.NodeID))
	coord := mirror.NewCoordinator(mirror.CoordinatorConfig{
		NodeID:                 cfg.NodeID,
		InterBrokerListener:    cfg.InterBrokerListenerName,
		TopicPartitions:        cfg.MirrorStateTopicNumPartitions,
		TopicReplicationFactor: cfg.MirrorStateTopicReplicationFactor,
		RequestTimeout:         reqTimeout,
		Logger:                 n.log.With("component", "mirror-coordinator"),
	}, b.CoordinatorHost(), n.quorum, dialAs("kmirror-mirror-coordinator-"+node))
	store := mirror.NewRoutedStore(cfg.NodeID, cfg.InterBrokerListenerName, n.quorum, coord, cfg.MirrorStateTopicNumPartitions,
		dialAs("kmirror-mirror-store-"+node))
	rm := b.Replicas()
	mgr, err := mirror.NewManager(mirror.ManagerConfig{
		NodeID:                       cfg.NodeID,
		ClusterID:                    n.clusterID,
		SupportUncleanLeaderElection: cfg.MirrorSupportUncleanLeaderElection,
		MetadataRefreshInterval:      time.Duration(cfg.MirrorMetadataRefreshIntervalMs) * time.Millisecond,
		StallTimeout:                 time.Duration(cfg.MirrorStallTimeoutMs) * time.Millisecond,
		NumFetchers:                  int(cfg.NumReplicaFetchers),
		FetchMaxBytes:                cfg.ReplicaFetchResponseMaxBytes,
		FetchPartitionMaxBytes:       cfg.ReplicaFetchMaxBytes,
		FetchMaxWait:                 time.Duration(cfg.ReplicaFetchWaitMaxMs) * time.Millisecond,
		FetchBackoff:                 time.Duration(cfg.ReplicaFetchBackoffMs) * time.Millisecond,
		RequestTimeout:               reqTimeout,
		Logger:                       n.log.With("component", "mirror"),
		Now:                          n.opts.now,
	}, mirror.ManagerDeps{
		Partitions:   rm,
		Store:        store,
		Controller:   n.channel,
		ClientOpts:   mirrorconfig.SourceClientOpts,
		Secrets:      mirrorconfig.SecretCodecOf(n.cfg),
		ThrottleRate: func() int64 { return rm.Config().MirrorReplicationThrottledRate },
		Sync: mirror.SyncDeps{
			Controller:          n.channel,
			Dial:                dialAs("kmirror-mirror-sync-" + node),
			InterBrokerListener: cfg.InterBrokerListenerName,
		},
	})
	if err != nil {
		store.Close()
		return nil, err
	}
	describe := mirror.NewDescriber(cfg.NodeID, cfg.InterBrokerListenerName, n.quorum, mgr, store, dialAs("kmirror-mirror-describe-"+node), reqTimeout)
	n.quorum.AddPublisher(coord)
	coord.Start()
	n.quorum.AddPublisher(mgr)
	n.mirror = &mirrorNode{coord: coord, store: store, manager: mgr, describe: describe}
	return []wire.Service{coord, describe}, nil
}

// closeMirror stops the mirror data plane before the coordinators and the
// broker it appends through: drivers and fetchers first, then the
// coordinator.
func (n *Node) closeMirror() {
	if n.mirror == nil {
		return
	}
	n.mirror.manager.Close()
	n.mirror.describe.Close()
	n.mirror.store.Close()
	n.mirror.coord.Close()
	n.mirror = nil
}
