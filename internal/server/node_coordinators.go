package server

import (
	"context"
	"strconv"

	"github.com/kmirror/kmirror/internal/group"
	"github.com/kmirror/kmirror/internal/txn"
	"github.com/kmirror/kmirror/internal/wire"
)

// coordinators are the log-backed coordinators a broker hosts: the group
// coordinator on __consumer_offsets, the transaction coordinator on
// __transaction_state, and the receiving side of WriteTxnMarkers.
type coordinators struct {
	groups  *group.Coordinator
	txns    *txn.Coordinator
	markers *txn.MarkerService
}

// startCoordinators builds and starts the coordinators over the node's
// broker. They serve once the broker's listeners are enabled with the
// services returned here.
func (n *Node) startCoordinators() ([]wire.Service, error) {
	// The transaction coordinator reaches other brokers (WriteTxnMarkers) on their
	// inter-broker listener, secured as that listener requires.
	dialOpts, err := n.dialOptions(n.cfg.InterBrokerListenerName)
	if err != nil {
		return nil, err
	}
	clientID := "kmirror-txn-coordinator-" + strconv.Itoa(int(n.cfg.NodeID))
	b := n.broker
	gcfg := group.FromBrokerConfig(n.cfg)
	gcfg.Logger = n.log.With("component", "group")
	groups := group.New(gcfg, group.Deps{Host: b.CoordinatorHost(), Metadata: n.quorum})

	// Markers for __consumer_offsets partitions go through the group
	// coordinator (it owns those partitions' pending offsets); all others
	// are appended by the broker as partition leader.
	markers := txn.NewMarkerService(b, groups)
	markers.SetLogger(n.log.With("component", "txn-markers"))

	tcfg := txn.FromBrokerConfig(n.cfg)
	tcfg.Logger = n.log.With("component", "txn")
	txns := txn.New(tcfg, txn.Deps{
		Host:                   b.CoordinatorHost(),
		Metadata:               n.quorum,
		ProducerIDs:            b,
		Markers:                markers,
		Groups:                 groups,
		OffsetsTopicPartitions: n.cfg.OffsetsTopicNumPartitions,
		Dial: func(ctx context.Context, addr string) (*wire.Conn, error) {
			return wire.Dial(ctx, "tcp", addr, clientID, dialOpts...)
		},
	})
	groups.SetTransactionResolver(txns)
	b.SetTransactionCoordinator(txns)
	groups.Start()
	txns.Start()
	n.coord = &coordinators{groups: groups, txns: txns, markers: markers}
	return []wire.Service{groups, txns, markers}, nil
}

// closeCoordinators stops the coordinators before the broker: the
// transaction coordinator's marker jobs append through the broker.
func (n *Node) closeCoordinators() {
	if n.coord == nil {
		return
	}
	if n.broker != nil {
		n.broker.SetTransactionCoordinator(nil)
	}
	n.coord.txns.Close()
	n.coord.groups.Close()
	n.coord = nil
}
