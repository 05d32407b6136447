package server

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// minControlledShutdownWait is the least time a broker gives the
// controller to move leadership away; the bound is otherwise
// broker.session.timeout.ms, after which the controller would fence the
// silent broker anyway (so waiting longer, with the controllers perhaps gone,
// gains nothing).
const minControlledShutdownWait = time.Second

// Shutdown stops the node gracefully: it stops accepting connections, runs
// the broker's controlled shutdown (heartbeats asking to shut down until the
// controller has moved leadership away, at most broker.session.timeout.ms),
// closes client
// connections, then stops the broker, the controller, the quorum and last
// the log manager (clean-shutdown markers, producer snapshots, checkpoints).
//
// If ctx ends, or Shutdown is called again, the remaining waits are skipped
// and the node stops as fast as it can; a second call returns when the first
// one has finished (or its own ctx ends). Shutdown of a node that was never
// started, or whose Start failed, does nothing.
func (n *Node) Shutdown(ctx context.Context) error {
	first := false
	n.shutdownOnce.Do(func() { first = true })
	if !first {
		n.hurryUp()
		select {
		case <-n.stopped:
			return n.shutdownErr
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	defer close(n.stopped)
	stop := context.AfterFunc(ctx, n.hurryUp)
	defer stop()
	n.closeStart()

	n.startMu.Lock()
	defer n.startMu.Unlock()
	if !n.started {
		n.started = true // a later Start must not bring the node up
		return nil
	}
	if n.net == nil {
		return nil // Start failed and tore everything down
	}
	n.log.Info("kmirror node shutting down")
	n.shutdownErr = n.teardown(false)
	n.log.Info("kmirror node stopped", "error", n.shutdownErr)
	return n.shutdownErr
}

// hurryUp makes a running shutdown skip its remaining waits.
func (n *Node) hurryUp() {
	n.hurryOnce.Do(func() { close(n.hurry) })
}

// teardown stops whatever Start started, in reverse order. With hurry (a
// failed start) there is no controlled shutdown.
func (n *Node) teardown(hurry bool) error {
	var errs []error
	n.closeMetrics()
	if n.net != nil {
		n.net.closeListeners()
	}
	if n.life != nil && !hurry && n.cfg.ControlledShutdownEnable {
		n.controlledShutdown()
	}
	if n.net != nil {
		n.net.closeConns()
	}
	if n.lifeCancel != nil {
		n.lifeCancel()
		<-n.lifeDone
	}
	n.closeMirror()
	n.closeCoordinators()
	if n.broker != nil {
		if err := n.broker.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close broker: %w", err))
		}
	}
	if n.channel != nil {
		n.channel.Close()
	}
	if n.controller != nil {
		if err := n.controller.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close controller: %w", err))
		}
	}
	// The quorum stops before the logs: publishers (the broker's replica
	// manager) must not get metadata to apply to closed logs.
	if n.quorum != nil {
		if err := n.quorum.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close metadata quorum: %w", err))
		}
	}
	if n.logs != nil {
		if err := n.logs.Shutdown(); err != nil {
			errs = append(errs, fmt.Errorf("shut down log manager: %w", err))
		}
	}
	if n.stream != nil {
		n.stream.Close()
	}
	if n.net != nil {
		n.net.waitHandoffs()
	}
	n.net, n.life, n.lifeCancel, n.broker, n.channel, n.controller, n.logs, n.quorum, n.stream =
		nil, nil, nil, nil, nil, nil, nil, nil, nil
	return errors.Join(errs...)
}

// controlledShutdown asks the controller to let the broker go and waits
// until it agrees, the bound passes, the heartbeat loop ends, or the
// shutdown is hurried.
func (n *Node) controlledShutdown() {
	n.life.beginShutdown()
	bound := max(time.Duration(n.cfg.BrokerSessionTimeoutMs)*time.Millisecond, minControlledShutdownWait)
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-n.life.shutdownDone:
		n.log.Info("controlled shutdown complete")
	case <-n.lifeDone:
	case <-n.hurry:
		n.log.Warn("controlled shutdown skipped")
	case <-t.C:
		n.log.Warn("controlled shutdown timed out; stopping anyway", "timeout", bound)
	}
}
