package server

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/storage"
)

// controllerClient reaches the active controller (controller.Channel).
type controllerClient interface {
	Send(ctx context.Context, req kmsg.Request) (kmsg.Response, error)
}

// metadataProgress is what the lifecycle needs from the quorum: how far
// this node has applied the metadata log.
type metadataProgress interface {
	AppliedOffset() uint64
	WaitForOffset(ctx context.Context, offset uint64) error
}

// Lifecycle timing. Heartbeats go out every broker.heartbeat.interval.ms
// while the broker runs; a fenced broker that just caught up, and a broker
// in controlled shutdown, heartbeat at once and then every fastHeartbeat, so
// that start-up and shutdown are not paced by the regular interval.
const (
	fastHeartbeat      = 50 * time.Millisecond
	registerBackoff    = 100 * time.Millisecond
	maxRegisterBackoff = 2 * time.Second
)

// lifecycle is the broker side of the broker's life in the cluster (Kafka's
// BrokerLifecycleManager): it registers the broker with the controller,
// heartbeats to keep its session, asks to be unfenced once it has caught up
// with the metadata log, and runs the controlled shutdown.
//
// The incarnation id is new for every process start: the controller tells a
// restarted broker from a duplicate by it.
type lifecycle struct {
	nodeID      int32
	clusterID   string
	rack        *string
	listeners   []kmsg.BrokerRegistrationRequestListener
	logDirs     [][16]byte
	incarnation metadata.Uuid
	interval    time.Duration
	requestTO   time.Duration

	ctl  controllerClient
	meta metadataProgress
	log  *slog.Logger

	epoch atomic.Int64 // of the current registration, -1 before the first

	shutdownAsk    chan struct{} // closed to begin the controlled shutdown
	shutdownOnce   sync.Once
	shutdownDone   chan struct{} // closed when the controller says ShouldShutDown
	shutdownDoneOn sync.Once
}

// newLifecycle prepares the lifecycle of broker nodeID, which advertises
// the given listeners.
func newLifecycle(cfg *config.Config, clusterID string, incarnation metadata.Uuid, ctl controllerClient, meta metadataProgress, logDirIDs [][16]byte, log *slog.Logger) (*lifecycle, error) {
	l := &lifecycle{
		nodeID:       cfg.NodeID,
		clusterID:    clusterID,
		logDirs:      logDirIDs,
		incarnation:  incarnation,
		interval:     time.Duration(cfg.BrokerHeartbeatIntervalMs) * time.Millisecond,
		ctl:          ctl,
		meta:         meta,
		log:          log,
		shutdownAsk:  make(chan struct{}),
		shutdownDone: make(chan struct{}),
	}
	l.epoch.Store(-1)
	if l.interval <= 0 {
		l.interval = 2 * time.Second
	}
	l.requestTO = max(time.Duration(cfg.BrokerSessionTimeoutMs)*time.Millisecond/2, time.Second)
	if cfg.BrokerRack != "" {
		rack := cfg.BrokerRack
		l.rack = &rack
	}
	for _, a := range cfg.AdvertisedListeners {
		proto, ok := securityProtocolCode(a.SecurityProtocol)
		if !ok {
			return nil, fmt.Errorf("listener %s: unknown security protocol %s", a.Name, a.SecurityProtocol)
		}
		rl := kmsg.NewBrokerRegistrationRequestListener()
		rl.Name, rl.Host, rl.Port, rl.SecurityProtocol = a.Name, a.Host, uint16(a.Port), proto
		l.listeners = append(l.listeners, rl)
	}
	return l, nil
}

// securityProtocolCode maps a protocol name to Kafka's SecurityProtocol id.
func securityProtocolCode(name string) (int16, bool) {
	switch name {
	case "PLAINTEXT":
		return metadata.SecurityPlaintext, true
	case "SSL":
		return metadata.SecuritySSL, true
	case "SASL_PLAINTEXT":
		return metadata.SecuritySASLPlaintext, true
	case "SASL_SSL":
		return metadata.SecuritySASLSSL, true
	}
	return 0, false
}

// run registers and heartbeats until ctx ends or the controller completes
// the controlled shutdown. A registration the controller forgets (a stale
// epoch after a failover that lost it, or a fencing followed by an
// unregistration) is redone with the same incarnation.
func (l *lifecycle) run(ctx context.Context) {
	for ctx.Err() == nil {
		epoch, err := l.register(ctx)
		if err != nil {
			return // ctx ended
		}
		if done := l.heartbeat(ctx, epoch); done {
			return
		}
	}
}

// register sends BrokerRegistration until the controller accepts it or ctx
// ends, and returns the broker epoch.
func (l *lifecycle) register(ctx context.Context) (int64, error) {
	backoff := registerBackoff
	for {
		req := kmsg.NewPtrBrokerRegistrationRequest()
		req.SetVersion(3)
		req.BrokerID = l.nodeID
		req.ClusterID = l.clusterID
		req.IncarnationID = l.incarnation
		req.Listeners = l.listeners
		req.Rack = l.rack
		req.LogDirs = l.logDirs
		req.PreviousBrokerEpoch = -1
		resp, err := l.send(ctx, req)
		var code int16
		if err == nil {
			r := resp.(*kmsg.BrokerRegistrationResponse)
			if r.ErrorCode == 0 {
				l.epoch.Store(r.BrokerEpoch)
				l.log.Info("broker registered", "broker_epoch", r.BrokerEpoch, "incarnation", l.incarnation)
				return r.BrokerEpoch, nil
			}
			code = r.ErrorCode
			err = kerr.ErrorForCode(code)
		}
		if ctx.Err() != nil {
			return -1, ctx.Err()
		}
		if code == kerr.InconsistentClusterID.Code {
			l.log.Error("broker registration refused: this node's cluster id differs from the controller's", "cluster_id", l.clusterID, "error", err)
		} else {
			l.log.Info("broker registration failed, retrying", "error", err, "retry_in", backoff)
		}
		if !sleepCtx(ctx, backoff) {
			return -1, ctx.Err()
		}
		backoff = min(2*backoff, maxRegisterBackoff)
	}
}

// heartbeat sends heartbeats for registration epoch until ctx ends (false),
// the controlled shutdown completes (true), or the registration must be
// redone (false with ctx alive).
func (l *lifecycle) heartbeat(ctx context.Context, epoch int64) (done bool) {
	// The broker epoch is the offset of the registration record: the
	// controller unfences the broker once it reports having applied it.
	caughtUp := make(chan struct{})
	waitCtx, stopWait := context.WithCancel(ctx)
	defer stopWait()
	go func() {
		if l.meta.WaitForOffset(waitCtx, uint64(max(epoch, 0))) == nil {
			close(caughtUp)
		}
	}()

	fenced, shuttingDown := true, false
	next := time.NewTimer(0)
	defer next.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-next.C:
		case <-caughtUp:
			caughtUp = nil // heartbeat now, once
		case <-l.shutdownAskCh(shuttingDown):
			shuttingDown = true
		}
		req := kmsg.NewPtrBrokerHeartbeatRequest()
		req.SetVersion(1)
		req.BrokerID = l.nodeID
		req.BrokerEpoch = epoch
		req.CurrentMetadataOffset = int64(l.meta.AppliedOffset())
		req.WantShutdown = shuttingDown
		resp, err := l.send(ctx, req)
		if ctx.Err() != nil {
			return false
		}
		wait := l.interval
		switch {
		case err != nil:
			l.log.Warn("broker heartbeat failed", "error", err)
		case resp.(*kmsg.BrokerHeartbeatResponse).ErrorCode != 0:
			code := resp.(*kmsg.BrokerHeartbeatResponse).ErrorCode
			if code == kerr.StaleBrokerEpoch.Code || code == kerr.BrokerIDNotRegistered.Code {
				l.log.Warn("broker registration lost, registering again", "error", kerr.ErrorForCode(code))
				return false
			}
			l.log.Warn("broker heartbeat refused", "error", kerr.ErrorForCode(code))
		default:
			r := resp.(*kmsg.BrokerHeartbeatResponse)
			if r.ShouldShutdown {
				l.shutdownDoneOn.Do(func() { close(l.shutdownDone) })
				return true
			}
			if fenced && !r.IsFenced {
				l.log.Info("broker unfenced", "broker_epoch", epoch)
			}
			fenced = r.IsFenced
		}
		if shuttingDown || (fenced && caughtUp == nil) {
			wait = fastHeartbeat
		}
		next.Reset(wait)
	}
}

// shutdownAskCh returns the channel that starts the controlled shutdown,
// or nil (never ready) once it has started.
func (l *lifecycle) shutdownAskCh(started bool) <-chan struct{} {
	if started {
		return nil
	}
	return l.shutdownAsk
}

// beginShutdown starts the controlled shutdown: the next heartbeats ask to
// shut down, and shutdownDone closes when the controller agrees (it has
// moved leadership away).
func (l *lifecycle) beginShutdown() {
	l.shutdownOnce.Do(func() { close(l.shutdownAsk) })
}

func (l *lifecycle) send(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, l.requestTO)
	defer cancel()
	return l.ctl.Send(ctx, req)
}

// sleepCtx waits d or until ctx ends; false when ctx ended.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// logDirIDs returns the directory ids of the log directories, as the broker
// registration reports them.
func logDirIDs(dirs []string) ([][16]byte, error) {
	var out [][16]byte
	for _, d := range dirs {
		mp, err := storage.ReadMetaProperties(d)
		if err != nil {
			return nil, fmt.Errorf("read meta.properties: %w", err)
		}
		if mp.DirectoryID == "" {
			continue
		}
		id, err := storage.ParseUUID(mp.DirectoryID)
		if err != nil {
			return nil, fmt.Errorf("%s: directory.id %q: %w", d, mp.DirectoryID, err)
		}
		out = append(out, id)
	}
	return out, nil
}

// unfenceWatch is a metadata publisher that tells when this node's image
// shows the broker's current registration unfenced. Registered after the
// broker's replica manager, it sees each image only once the replica manager
// has applied it, so when it fires the broker serves what clients will ask
// for (its partitions have their leaders back).
type unfenceWatch struct {
	id    int32
	epoch func() int64
	ready chan struct{}
	once  sync.Once
}

func newUnfenceWatch(id int32, epoch func() int64) *unfenceWatch {
	return &unfenceWatch{id: id, epoch: epoch, ready: make(chan struct{})}
}

// Name implements metadata.Publisher.
func (w *unfenceWatch) Name() string { return "broker-unfence-watch" }

// OnMetadataUpdate implements metadata.Publisher.
func (w *unfenceWatch) OnMetadataUpdate(_ *metadata.Delta, img *metadata.Image) {
	reg, ok := img.Broker(w.id)
	if ok && !reg.Fenced && reg.Epoch == w.epoch() {
		w.once.Do(func() { close(w.ready) })
	}
}
