package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/metrics"
	"github.com/kmirror/kmirror/internal/quorum"
)

// nodeMetrics is a node's metrics listener (metrics.listener): its own
// registry, the HTTP server of /metrics, /healthz and /readyz, and what
// /readyz needs. The listener starts first in Start, so that /healthz
// answers while logs are recovered and /readyz says what the node waits
// for, and stops first in teardown, before the parts its collectors read.
type nodeMetrics struct {
	reg *prometheus.Registry
	srv *metrics.Server // nil when disabled or the default port was taken

	// stage is what Start is doing, nil once it has finished.
	stage atomic.Pointer[string]
	// parts is what the readiness check reads once Start has finished;
	// nil before.
	parts atomic.Pointer[readyParts]
}

// readyParts are the parts of a started node that decide its readiness.
type readyParts struct {
	nodeID int32
	quorum *quorum.Quorum
	// life is the broker's lifecycle, nil on a controller-only node.
	life *lifecycle
}

// Start stages /readyz reports while the node starts.
const (
	stageLogs     = "loading the log directories"
	stageQuorum   = "joining the metadata quorum"
	stageUnfence  = "waiting for the controller to unfence the broker"
	stageServices = "starting the coordinators and mirroring"
)

// startMetrics binds metrics.listener and serves it. A listener set
// explicitly must bind, or Start fails (as for Kafka listeners); the
// default one (localhost:9644) is skipped with a warning when the port is
// taken, so that several nodes started with defaults on one machine (tests,
// the demo) still start.
func (n *Node) startMetrics() error {
	m := &nodeMetrics{reg: metrics.NewRegistry()}
	n.metrics = m
	m.setStage(stageLogs)
	addr := n.cfg.MetricsListener
	if addr == "" {
		return nil
	}
	srv, err := metrics.Listen(addr, m.reg, n.ready, n.log.With("component", "metrics"))
	if err != nil {
		if n.cfg.Source("metrics.listener") == config.SourceDefault {
			n.log.Warn("metrics listener not started: its default address is taken; set metrics.listener to serve metrics elsewhere",
				"addr", addr, "error", err)
			return nil
		}
		return err
	}
	m.srv = srv
	return nil
}

// setStage records what Start does now, for /readyz.
func (m *nodeMetrics) setStage(s string) {
	if m != nil {
		m.stage.Store(&s)
	}
}

// metricsStarted registers the collectors of the node's parts and makes
// /readyz follow the started node.
func (n *Node) metricsStarted() {
	m := n.metrics
	if m == nil {
		return
	}
	cs := []prometheus.Collector{n.net.requests, n.quorum.Collector()}
	if n.controller != nil {
		cs = append(cs, n.controller.Collector())
	}
	if n.broker != nil {
		cs = append(cs, n.logs.Collector(), n.broker.Collector())
		n.net.requests.setFetchErrors(n.broker.FetchErrorCounts)
	}
	if n.mirror != nil {
		cs = append(cs, n.mirror.manager.Collector())
	}
	for _, c := range cs {
		if err := m.reg.Register(c); err != nil {
			n.log.Error("metrics collector not registered", "error", err)
		}
	}
	m.parts.Store(&readyParts{nodeID: n.cfg.NodeID, quorum: n.quorum, life: n.life})
	m.stage.Store(nil)
}

// closeMetrics stops the metrics listener.
func (n *Node) closeMetrics() {
	if n.metrics == nil || n.metrics.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := n.metrics.srv.Close(ctx); err != nil {
		n.log.Warn("closing the metrics listener", "error", err)
	}
	n.metrics.srv = nil
}

// MetricsAddr returns the bound address of the metrics listener, nil when
// it does not run.
func (n *Node) MetricsAddr() net.Addr {
	if n.metrics == nil || n.metrics.srv == nil {
		return nil
	}
	return n.metrics.srv.Addr()
}

// Registry returns the node's Prometheus registry (nil before Start).
func (n *Node) Registry() *prometheus.Registry {
	if n.metrics == nil {
		return nil
	}
	return n.metrics.reg
}

// errShuttingDown is /readyz's answer once Shutdown has begun.
var errShuttingDown = errors.New("shutting down")

// ready is the /readyz check: the node has finished starting (its logs are
// loaded, it has caught up with the metadata log and, for a broker, the
// controller has unfenced it), it still knows a quorum leader, and a
// broker's current registration is unfenced in its metadata.
func (n *Node) ready() error {
	if n.closing.Err() != nil {
		return errShuttingDown
	}
	m := n.metrics
	if s := m.stage.Load(); s != nil {
		return fmt.Errorf("starting: %s", *s)
	}
	p := m.parts.Load()
	if p == nil {
		return errors.New("starting")
	}
	if _, _, ok := p.quorum.Leader(); !ok {
		return errors.New("the metadata quorum has no leader this node knows of")
	}
	if p.life == nil {
		return nil
	}
	epoch := p.life.epoch.Load()
	reg, ok := p.quorum.Image().Broker(p.nodeID)
	switch {
	case !ok || epoch < 0:
		return fmt.Errorf("broker %d is not registered", p.nodeID)
	case reg.Epoch != epoch:
		return fmt.Errorf("broker %d is registering again (epoch %d in the metadata, %d registered)", p.nodeID, reg.Epoch, epoch)
	case reg.Fenced:
		return fmt.Errorf("broker %d is fenced", p.nodeID)
	}
	return nil
}
