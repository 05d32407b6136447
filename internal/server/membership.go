package server

import (
	"context"
	"log/slog"
	"net"
	"strconv"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/quorum"
)

// membership adds registered broker-only nodes to the metadata quorum as
// non-voters, so that they replicate the metadata log. It runs on every
// controller node and acts only while its quorum member leads. A broker's
// raft address is its endpoint on the inter-broker listener (the node's
// server sniffs raft connections there), so the listener name must be the
// same on every node, as Kafka requires of inter.broker.listener.name.
type membership struct {
	q        *quorum.Quorum
	listener string
	voters   map[int32]bool
	log      *slog.Logger

	kick   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

func newMembership(q *quorum.Quorum, cfg *config.Config, log *slog.Logger) *membership {
	ctx, cancel := context.WithCancel(context.Background())
	m := &membership{
		q: q, listener: cfg.InterBrokerListenerName, voters: map[int32]bool{}, log: log,
		kick: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{}),
	}
	for _, v := range cfg.QuorumVoters {
		m.voters[v.ID] = true
	}
	changes := q.LeaderChanges()
	go m.run(ctx, changes)
	return m
}

// Name implements metadata.Publisher.
func (m *membership) Name() string { return "quorum-membership" }

// OnMetadataUpdate implements metadata.Publisher: it only wakes the
// membership goroutine, which does the raft work off the publisher path.
func (m *membership) OnMetadataUpdate(*metadata.Delta, *metadata.Image) {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

func (m *membership) run(ctx context.Context, changes <-chan struct{}) {
	defer close(m.done)
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-changes:
			if !ok {
				return // the quorum closed
			}
		case <-m.kick:
		}
		m.reconcile()
	}
}

// reconcile adds every registered broker that is not in the raft
// configuration (or is there with another address) as a non-voter.
func (m *membership) reconcile() {
	if !m.q.IsLeader() {
		return
	}
	servers, err := m.q.Servers()
	if err != nil {
		return
	}
	known := map[int32]string{}
	for _, s := range servers {
		known[s.ID] = s.Addr
	}
	for _, b := range m.q.Image().Brokers() {
		if m.voters[b.ID] {
			continue
		}
		addr := ""
		for _, e := range b.Endpoints {
			if e.Name == m.listener {
				addr = net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port)))
			}
		}
		if addr == "" || known[b.ID] == addr {
			continue
		}
		if err := m.q.AddNonVoter(b.ID, addr); err != nil {
			m.log.Warn("adding broker to the metadata quorum failed", "broker", b.ID, "addr", addr, "error", err)
			continue
		}
		m.log.Info("broker added to the metadata quorum as a non-voter", "broker", b.ID, "addr", addr)
	}
}

// close stops the membership goroutine.
func (m *membership) close() {
	m.cancel()
	<-m.done
}
