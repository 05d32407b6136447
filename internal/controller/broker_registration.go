package controller

import (
	"fmt"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
)

// registerInput is what a registration decision needs besides the image
// and the request.
type registerInput struct {
	// clusterID is the cluster's id; "" skips the check.
	clusterID string
	// sessionAlive says whether the registered broker with this id (if any)
	// still has a live session: unfenced and heard from within the session
	// timeout.
	sessionAlive bool
	// newEpoch is the epoch a new incarnation gets.
	newEpoch int64
}

// decideRegisterBroker validates a BrokerRegistration request and returns
// the records that (re-)register the broker and the broker epoch to answer.
//
// A new incarnation (a restarted broker, or one never seen) gets newEpoch
// and starts fenced; it is unfenced by a heartbeat once it has caught up
// with its registration. A new incarnation while the old one's session is
// alive is DUPLICATE_BROKER_REGISTRATION (two processes with one id); if
// the old one was still unfenced but its session had expired, its
// partitions move away first, as if it had been fenced. The same
// incarnation registering again (a retried request) keeps its epoch and
// state and updates listeners, rack and features.
//
// Each feature the broker lists must support the level the cluster has
// finalized (UNSUPPORTED_VERSION otherwise). Unlike Kafka, a finalized
// feature the broker does not list is not held against it: kmirror's
// brokers and controllers are one binary.
func decideRegisterBroker(v *view, req *kmsg.BrokerRegistrationRequest, in registerInput) ([]metadata.Record, int64, error) {
	img := v.img
	if in.clusterID != "" && req.ClusterID != in.clusterID {
		return nil, -1, errf(kerr.InconsistentClusterID, "Expected cluster ID %s, but got cluster ID %s", in.clusterID, req.ClusterID)
	}
	if req.BrokerID < 0 {
		return nil, -1, errf(kerr.InvalidRegistration, "Broker id %d is negative.", req.BrokerID)
	}
	if req.IsMigratingZkBroker {
		return nil, -1, errf(kerr.BrokerIDNotRegistered, "Controller does not support registering ZK brokers.")
	}
	inc := metadata.Uuid(req.IncarnationID)
	existing, registered := img.Broker(req.BrokerID)
	if registered && in.sessionAlive && existing.IncarnationID != inc {
		return nil, -1, errf(kerr.DuplicateBrokerRegistration, "Another broker is registered with that broker id (%d).", req.BrokerID)
	}

	reg := metadata.BrokerRegistration{ID: req.BrokerID, IncarnationID: inc}
	if req.Rack != nil {
		reg.Rack = *req.Rack
	}
	seen := map[string]bool{}
	for _, l := range req.Listeners {
		if l.Name == "" || seen[l.Name] {
			return nil, -1, errf(kerr.InvalidRegistration, "Listener name %q is empty or repeated.", l.Name)
		}
		if l.SecurityProtocol < metadata.SecurityPlaintext || l.SecurityProtocol > metadata.SecuritySASLSSL {
			return nil, -1, errf(kerr.InvalidRegistration, "Listener %s has unknown security protocol %d.", l.Name, l.SecurityProtocol)
		}
		seen[l.Name] = true
		reg.Endpoints = append(reg.Endpoints, metadata.Endpoint{Name: l.Name, Host: l.Host, Port: l.Port, SecurityProtocol: l.SecurityProtocol})
	}
	finalized := img.Features()
	for _, f := range req.Features {
		if f.MinSupportedVersion > f.MaxSupportedVersion {
			return nil, -1, errf(kerr.InvalidRegistration, "Feature %s has an empty range [%d, %d].", f.Name, f.MinSupportedVersion, f.MaxSupportedVersion)
		}
		if level, ok := finalized[f.Name]; ok && level != 0 && (level < f.MinSupportedVersion || level > f.MaxSupportedVersion) {
			return nil, -1, errf(kerr.UnsupportedVersion, "Unable to register because the broker does not support version %d of %s. It wants a version between %d and %d, inclusive.",
				level, f.Name, f.MinSupportedVersion, f.MaxSupportedVersion)
		}
		reg.Features = append(reg.Features, metadata.BrokerFeature{Name: f.Name, MinSupported: f.MinSupportedVersion, MaxSupported: f.MaxSupportedVersion})
	}

	var recs []metadata.Record
	if registered && existing.IncarnationID == inc {
		reg.Epoch = existing.Epoch
		reg.Fenced = existing.Fenced
		reg.InControlledShutdown = existing.InControlledShutdown
	} else {
		if in.newEpoch <= 0 {
			return nil, -1, fmt.Errorf("register broker %d: epoch %d is not positive", req.BrokerID, in.newEpoch)
		}
		reg.Epoch = in.newEpoch
		reg.Fenced = true
		if registered && !existing.Fenced {
			recs = append(recs, brokerOutChanges(img, v.cfg, req.BrokerID)...)
		}
	}
	recs = append(recs, &metadata.RegisterBrokerRecord{BrokerRegistration: reg})
	return recs, reg.Epoch, nil
}

// registerBroker is the driver of BrokerRegistration. A new incarnation's
// epoch is the metadata offset its record is expected at: one past the
// last applied entry. Decisions are serialised and each waits for its
// entry, so the record lands at that offset unless raft itself appends an
// entry in between (a membership change, a new term's no-op), in which case
// the epoch is a little below the record's offset. Either way epochs of one
// broker strictly increase and no two registrations share one, which is
// what brokers and fencing records rely on.
func (c *Controller) registerBroker(req *kmsg.BrokerRegistrationRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.BrokerRegistrationResponse)
	resp.Version = req.Version
	resp.BrokerEpoch = -1
	err := c.decide(func(v *view) error {
		now := c.now()
		in := registerInput{
			clusterID: c.clusterID,
			newEpoch:  int64(max(v.img.Offset(), c.q.AppliedOffset())) + 1,
		}
		if reg, ok := v.img.Broker(req.BrokerID); ok {
			in.sessionAlive = sessionAlive(reg, c.sessions[req.BrokerID], now, c.sessionTimeout)
		}
		recs, epoch, err := decideRegisterBroker(v, req, in)
		if err != nil {
			resp.ErrorCode = codeOf(err)
			c.log.Info("broker registration refused", "broker", req.BrokerID, "err", err)
			return nil
		}
		off, err := c.propose(recs)
		if err != nil {
			resp.ErrorCode = codeOf(proposeError(err))
			return nil
		}
		if err := c.ensureReplica(req); err != nil {
			resp.ErrorCode = codeOf(proposeError(err))
			return nil
		}
		s := c.sessions[req.BrokerID]
		if s == nil || epoch == in.newEpoch {
			s = &session{metadataOffset: -1, shutdownOffset: -1}
			c.sessions[req.BrokerID] = s
		}
		s.lastContact = now
		s.registrationOffset = int64(off)
		resp.BrokerEpoch = epoch
		c.log.Info("broker registered", "broker", req.BrokerID, "epoch", epoch, "incarnation", metadata.Uuid(req.IncarnationID), "offset", off)
		return nil
	})
	if err != nil {
		return errorResponse(req, err)
	}
	return resp, nil
}

// ensureReplica makes a registered broker that is not a controller a
// non-voting member of the metadata quorum, so that the metadata log
// reaches it: its raft address is its inter-broker listener (the server
// tells raft from Kafka traffic on that port). Voters, and non-voters
// already known at that address, are left alone. A failure is answered to
// the broker, which registers again (the same incarnation keeps its epoch).
func (c *Controller) ensureReplica(req *kmsg.BrokerRegistrationRequest) error {
	servers, err := c.q.Servers()
	if err != nil {
		return err
	}
	addr := raftAddress(req, c.cfg.InterBrokerListenerName)
	for _, s := range servers {
		if s.ID == req.BrokerID && (s.Voter || s.Addr == addr) {
			return nil
		}
	}
	if addr == "" {
		c.log.Warn("broker has no listener to replicate the metadata log to", "broker", req.BrokerID)
		return nil
	}
	if err := c.q.AddNonVoter(req.BrokerID, addr); err != nil {
		return err
	}
	c.log.Info("broker added to the metadata quorum as a non-voter", "broker", req.BrokerID, "addr", addr)
	return nil
}

// raftAddress is the host:port of the broker's listener named listener,
// else of its first listener ("" with none).
func raftAddress(req *kmsg.BrokerRegistrationRequest, listener string) string {
	for _, l := range req.Listeners {
		if l.Name == listener {
			return net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))
		}
	}
	if len(req.Listeners) > 0 {
		l := req.Listeners[0]
		return net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))
	}
	return ""
}
