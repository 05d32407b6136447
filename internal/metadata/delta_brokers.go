package metadata

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// broker returns the registration of id as the delta sees it.
func (d *Delta) broker(id int32) (*BrokerRegistration, bool) {
	if reg, ok := d.brokers[id]; ok {
		return reg, reg != nil
	}
	if reg, ok := d.base.brokers[id]; ok {
		return &reg, true
	}
	return nil, false
}

func (d *Delta) replayRegisterBroker(x *RegisterBrokerRecord, off uint64) error {
	if x.ID < 0 {
		return replayErr(x, off, kerr.InvalidRequest, "broker id %d is negative", x.ID)
	}
	seen := map[string]bool{}
	for _, e := range x.Endpoints {
		if e.Name == "" || seen[e.Name] {
			return replayErr(x, off, kerr.InvalidRequest, "broker %d: endpoint name %q empty or repeated", x.ID, e.Name)
		}
		seen[e.Name] = true
	}
	reg := x.BrokerRegistration
	reg.Endpoints = slices.Clone(x.Endpoints)
	reg.Features = slices.Clone(x.Features)
	d.brokers[x.ID] = &reg
	return nil
}

// currentBroker returns the registration of id if it has epoch epoch.
func (d *Delta) currentBroker(r Record, off uint64, id int32, epoch int64) (*BrokerRegistration, error) {
	reg, ok := d.broker(id)
	if !ok {
		return nil, replayErr(r, off, kerr.BrokerIDNotRegistered, "broker %d is not registered", id)
	}
	if reg.Epoch != epoch {
		return nil, replayErr(r, off, kerr.StaleBrokerEpoch, "broker %d has epoch %d, record names %d", id, reg.Epoch, epoch)
	}
	return reg, nil
}

func (d *Delta) replayUnregisterBroker(x *UnregisterBrokerRecord, off uint64) error {
	if _, err := d.currentBroker(x, off, x.BrokerID, x.BrokerEpoch); err != nil {
		return err
	}
	if _, inBase := d.base.brokers[x.BrokerID]; inBase {
		d.brokers[x.BrokerID] = nil
	} else {
		delete(d.brokers, x.BrokerID)
	}
	return nil
}

// replayFencing applies a fencing or controlled-shutdown change to the
// registration of id at epoch (FenceBroker, UnfenceBroker and
// BrokerRegistrationChange records).
func (d *Delta) replayFencing(r Record, off uint64, id int32, epoch int64, fence FencingChange, shutdown ShutdownChange) error {
	if fence < FencingUnfence || fence > FencingFence {
		return replayErr(r, off, kerr.InvalidRequest, "broker %d: fencing change %d is not -1, 0 or 1", id, fence)
	}
	if shutdown != ShutdownUnchanged && shutdown != ShutdownStarted {
		return replayErr(r, off, kerr.InvalidRequest, "broker %d: controlled shutdown change %d is not 0 or 1", id, shutdown)
	}
	cur, err := d.currentBroker(r, off, id, epoch)
	if err != nil {
		return err
	}
	reg := *cur
	switch fence {
	case FencingFence:
		reg.Fenced = true
	case FencingUnfence:
		reg.Fenced = false
	}
	if shutdown == ShutdownStarted {
		reg.InControlledShutdown = true
	}
	d.brokers[id] = &reg
	return nil
}
