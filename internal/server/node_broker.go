package server

import (
	"context"
	"fmt"
	"slices"

	"github.com/kmirror/kmirror/internal/broker"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/wire"
)

// startBroker starts the broker over the node's logs and metadata, registers
// it with the controller, waits until the controller has unfenced it and the
// broker has applied that change, and then
// serves the broker's APIs on every listener that is not a controller
// listener (Kafka too opens its client listeners only once unfenced).
func (n *Node) startBroker(ctx context.Context) error {
	// Followers fetch from their leaders' inter-broker listener, secured
	// as that listener requires.
	replicaDial, err := n.dialOptions(n.cfg.InterBrokerListenerName)
	if err != nil {
		return err
	}
	// A new incarnation id for every start: the controller tells a
	// restarted broker by it, and the broker knows its own registration.
	incarnation := metadata.RandomUuid()
	b, err := broker.New(broker.Config{
		NodeID: n.cfg.NodeID,
		Cfg:    n.cfg,
		Logger: n.log,
		Now:    n.opts.now,
	}, broker.Deps{
		Logs:               n.logs,
		Metadata:           n.quorum,
		Controller:         n.channel,
		ClusterID:          n.clusterID,
		ReplicaDialOptions: replicaDial,
		Incarnation:        incarnation,
	})
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	n.broker = b
	if err := b.Start(ctx); err != nil {
		return fmt.Errorf("start broker: %w", err)
	}

	dirIDs, err := logDirIDs(n.cfg.LogDirs)
	if err != nil {
		return err
	}
	n.life, err = newLifecycle(n.cfg, n.clusterID, incarnation, n.channel, n.quorum, dirIDs, n.log.With("component", "lifecycle"))
	if err != nil {
		return err
	}
	n.metrics.setStage(stageUnfence)
	watch := newUnfenceWatch(n.cfg.NodeID, n.life.epoch.Load)
	n.quorum.AddPublisher(watch)
	lifeCtx, cancel := context.WithCancel(context.Background())
	n.lifeCancel, n.lifeDone = cancel, make(chan struct{})
	go func() {
		defer close(n.lifeDone)
		n.life.run(lifeCtx)
	}()
	select {
	case <-watch.ready:
	case <-ctx.Done():
		return fmt.Errorf("waiting for the controller to unfence broker %d: %w", n.cfg.NodeID, ctx.Err())
	}

	n.metrics.setStage(stageServices)
	coords, err := n.startCoordinators()
	if err != nil {
		return err
	}
	services := append([]wire.Service{b, b.SecurityService()}, coords...)
	mirrorServices, err := n.startMirror()
	if err != nil {
		return fmt.Errorf("mirror: %w", err)
	}
	services = append(services, mirrorServices...)
	for _, l := range n.net.listeners {
		if slices.Contains(n.cfg.ControllerListenerNames, l.name) {
			continue
		}
		l.ep.quota = b // before enable publishes the endpoint
		if err := l.ep.enable(services...); err != nil {
			return err
		}
	}
	return nil
}
