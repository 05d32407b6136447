package controller

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
)

// ProducerIDBlockSize is the number of producer ids AllocateProducerIds
// hands a broker at a time (Kafka's block size).
const ProducerIDBlockSize = 1000

// decideAllocateProducerIDs hands the broker the next block of producer ids:
// [next, next+ProducerIDBlockSize) where next is the image's counter, and
// the ProducerIdsRecord that moves the counter past it. The replay rules
// refuse a counter that does not move forward, so two blocks never overlap
// even if two proposals were computed from the same image. The broker must
// be registered with the epoch it names (STALE_BROKER_EPOCH otherwise, as
// Kafka answers both cases).
func decideAllocateProducerIDs(img *metadata.Image, req *kmsg.AllocateProducerIDsRequest) ([]metadata.Record, *kmsg.AllocateProducerIDsResponse) {
	resp := req.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
	resp.Version = req.Version
	if err := checkBrokerEpoch(img, req.BrokerID, req.BrokerEpoch); err != nil {
		resp.ErrorCode = codeOf(err)
		return nil, resp
	}
	next := img.NextProducerID()
	if next < 0 || next > math.MaxInt64-ProducerIDBlockSize {
		resp.ErrorCode = kerr.UnknownServerError.Code
		return nil, resp
	}
	resp.ProducerIDStart = next
	resp.ProducerIDLen = ProducerIDBlockSize
	return []metadata.Record{&metadata.ProducerIdsRecord{
		BrokerID: req.BrokerID, BrokerEpoch: req.BrokerEpoch, NextProducerID: next + ProducerIDBlockSize,
	}}, resp
}

// checkBrokerEpoch checks that broker id is registered with epoch.
func checkBrokerEpoch(img *metadata.Image, id int32, epoch int64) error {
	b, ok := img.Broker(id)
	if !ok {
		return errf(kerr.StaleBrokerEpoch, "No broker registration found for broker id %d", id)
	}
	if b.Epoch != epoch {
		return errf(kerr.StaleBrokerEpoch, "Expected broker epoch %d, but got broker epoch %d", b.Epoch, epoch)
	}
	return nil
}

// allocateProducerIDs is the driver of AllocateProducerIds: the block is
// the broker's only once its record has committed.
func (c *Controller) allocateProducerIDs(req *kmsg.AllocateProducerIDsRequest) (kmsg.Response, error) {
	var resp *kmsg.AllocateProducerIDsResponse
	err := c.decide(func(v *view) error {
		var recs []metadata.Record
		recs, resp = decideAllocateProducerIDs(v.img, req)
		if len(recs) == 0 {
			return nil
		}
		if _, err := c.propose(recs); err != nil {
			resp.ErrorCode = codeOf(proposeError(err))
			resp.ProducerIDStart, resp.ProducerIDLen = 0, 0
		}
		return nil
	})
	if err != nil {
		return errorResponse(req, err)
	}
	return resp, nil
}
