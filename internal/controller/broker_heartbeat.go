package controller

import (
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
)

// brokerState is where a broker stands with the controller (Kafka's
// BrokerControlState).
type brokerState int8

const (
	// stateFenced brokers lead nothing and are not offered to clients.
	stateFenced brokerState = iota
	// stateUnfenced brokers serve.
	stateUnfenced
	// stateControlledShutdown brokers are moving their leadership away
	// before they stop.
	stateControlledShutdown
	// stateShutdownNow brokers may stop: they are fenced.
	stateShutdownNow
)

func (s brokerState) String() string {
	switch s {
	case stateFenced:
		return "fenced"
	case stateUnfenced:
		return "unfenced"
	case stateControlledShutdown:
		return "controlled-shutdown"
	case stateShutdownNow:
		return "shutdown-now"
	}
	return "unknown"
}

// heartbeatInput is what a heartbeat decision needs besides the image and
// the request.
type heartbeatInput struct {
	// registrationOffset is the metadata offset of the broker's
	// registration record (or an upper bound of it): the broker has caught
	// up once its metadata reaches it.
	registrationOffset int64
	// shutdownOffset is the offset of the record that put the broker in
	// controlled shutdown.
	shutdownOffset int64
	// lowestActiveOffset is the least metadata offset reported by the
	// other active brokers, math.MaxInt64 when there are none.
	lowestActiveOffset int64
}

// currentState reads a broker's state from its registration.
func currentState(reg metadata.BrokerRegistration) brokerState {
	switch {
	case reg.Fenced:
		return stateFenced
	case reg.InControlledShutdown:
		return stateControlledShutdown
	}
	return stateUnfenced
}

// decideHeartbeat applies a BrokerHeartbeat to the broker's state and
// returns the records of any transition, the next state and the response.
// The transitions are Kafka's:
//
//   - fenced: a shutdown request is granted at once; otherwise the broker is
//     unfenced when it does not ask to stay fenced and its metadata has
//     reached its registration; leaderless partitions it replicates then
//     elect leaders;
//   - unfenced: asking to be fenced fences it (moving its leadership and
//     ISR places away); asking to shut down starts a controlled shutdown
//     that moves its leadership away, or, leading nothing, lets it stop at
//     once (fenced);
//   - controlled shutdown: it may stop (and is fenced) once it leads
//     nothing and every other active broker has seen the record that
//     started the shutdown.
func decideHeartbeat(v *view, req *kmsg.BrokerHeartbeatRequest, in heartbeatInput) ([]metadata.Record, brokerState, *kmsg.BrokerHeartbeatResponse) {
	resp := req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
	resp.Version = req.Version
	img := v.img
	if err := checkBrokerEpoch(img, req.BrokerID, req.BrokerEpoch); err != nil {
		resp.ErrorCode = codeOf(err)
		return nil, stateFenced, resp
	}
	reg, _ := img.Broker(req.BrokerID)
	cur := currentState(reg)
	caughtUp := req.CurrentMetadataOffset >= in.registrationOffset
	next := cur
	switch cur {
	case stateFenced:
		switch {
		case req.WantShutdown:
			next = stateShutdownNow
		case !req.WantFence && caughtUp:
			next = stateUnfenced
		}
	case stateUnfenced:
		switch {
		case req.WantFence && req.WantShutdown:
			next = stateShutdownNow
		case req.WantFence:
			next = stateFenced
		case req.WantShutdown && leadsAny(img, req.BrokerID):
			next = stateControlledShutdown
		case req.WantShutdown:
			next = stateShutdownNow
		}
	case stateControlledShutdown:
		if !leadsAny(img, req.BrokerID) && in.shutdownOffset <= in.lowestActiveOffset {
			next = stateShutdownNow
		}
	}

	var recs []metadata.Record
	if next != cur {
		switch next {
		case stateUnfenced:
			recs = unfenceRecords(v, reg)
		case stateControlledShutdown:
			recs = append(brokerOutChanges(img, v.cfg, reg.ID), &metadata.BrokerRegistrationChangeRecord{
				BrokerID: reg.ID, BrokerEpoch: reg.Epoch, InControlledShutdown: metadata.ShutdownStarted,
			})
		case stateFenced, stateShutdownNow:
			if !reg.Fenced {
				recs = fenceRecords(v, reg)
			}
		}
	}
	resp.IsCaughtUp = caughtUp
	resp.IsFenced = next == stateFenced || next == stateShutdownNow
	resp.ShouldShutdown = next == stateShutdownNow
	return recs, next, resp
}

// fenceRecords fences a registered broker: its partitions elect other
// leaders and it leaves their ISRs, then the registration is fenced.
func fenceRecords(v *view, reg metadata.BrokerRegistration) []metadata.Record {
	return append(brokerOutChanges(v.img, v.cfg, reg.ID), &metadata.BrokerRegistrationChangeRecord{
		BrokerID: reg.ID, BrokerEpoch: reg.Epoch, Fenced: metadata.FencingFence,
	})
}

// unfenceRecords unfences a registered broker and lets leaderless
// partitions it replicates elect it (or another usable replica).
func unfenceRecords(v *view, reg metadata.BrokerRegistration) []metadata.Record {
	recs := []metadata.Record{&metadata.BrokerRegistrationChangeRecord{
		BrokerID: reg.ID, BrokerEpoch: reg.Epoch, Fenced: metadata.FencingUnfence,
	}}
	return append(recs, brokerInChanges(v.img, v.cfg, reg.ID)...)
}

// noActiveOffset is lowestActiveOffset when no other broker is active.
const noActiveOffset = math.MaxInt64

// brokerHeartbeat is the driver of BrokerHeartbeat: it keeps the broker's
// session alive and proposes the records of any state transition.
func (c *Controller) brokerHeartbeat(req *kmsg.BrokerHeartbeatRequest) (kmsg.Response, error) {
	var resp *kmsg.BrokerHeartbeatResponse
	err := c.decide(func(v *view) error {
		now := c.now()
		s := c.sessions[req.BrokerID]
		if s == nil {
			s = &session{metadataOffset: -1, registrationOffset: int64(v.img.Offset()), shutdownOffset: -1}
		}
		in := heartbeatInput{
			registrationOffset: s.registrationOffset,
			shutdownOffset:     s.shutdownOffset,
			lowestActiveOffset: lowestActiveOffset(v.img, c.sessions, req.BrokerID),
		}
		var recs []metadata.Record
		var next brokerState
		recs, next, resp = decideHeartbeat(v, req, in)
		if resp.ErrorCode != 0 {
			return nil
		}
		if len(recs) > 0 {
			off, err := c.propose(recs)
			if err != nil {
				resp.ErrorCode = codeOf(proposeError(err))
				return nil
			}
			if next == stateControlledShutdown {
				s.shutdownOffset = int64(off)
			}
			c.log.Info("broker state changed", "broker", req.BrokerID, "state", next.String(), "partition_changes", len(recs)-1)
		}
		s.lastContact = now
		s.metadataOffset = req.CurrentMetadataOffset
		c.sessions[req.BrokerID] = s
		return nil
	})
	if err != nil {
		return errorResponse(req, err)
	}
	return resp, nil
}
