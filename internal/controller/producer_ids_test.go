package controller

import (
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
)

func allocReq(id int32, epoch int64) *kmsg.AllocateProducerIDsRequest {
	r := kmsg.NewPtrAllocateProducerIDsRequest()
	r.BrokerID, r.BrokerEpoch = id, epoch
	return r
}

func TestAllocateProducerIDs(t *testing.T) {
	img := cluster(t, upBrokers(2)...)
	var blocks [][2]int64
	for i := 0; i < 3; i++ {
		id := int32(1 + i%2)
		recs, resp := decideAllocateProducerIDs(img, allocReq(id, 10+int64(id)))
		wantCode(t, "alloc", resp.ErrorCode, nil, nil, "")
		if resp.ProducerIDLen != ProducerIDBlockSize {
			t.Fatalf("block length %d", resp.ProducerIDLen)
		}
		img = apply(t, img, recs...)
		blocks = append(blocks, [2]int64{resp.ProducerIDStart, resp.ProducerIDStart + int64(resp.ProducerIDLen)})
	}
	for i := 1; i < len(blocks); i++ {
		if blocks[i][0] != blocks[i-1][1] {
			t.Fatalf("blocks %v are not consecutive", blocks)
		}
	}
	if img.NextProducerID() != blocks[2][1] {
		t.Fatalf("next producer id %d after blocks %v", img.NextProducerID(), blocks)
	}

	// Two decisions from the same image propose the same counter; the
	// replay rules refuse the second, so blocks never overlap.
	recs1, _ := decideAllocateProducerIDs(img, allocReq(1, 11))
	recs2, _ := decideAllocateProducerIDs(img, allocReq(2, 12))
	after := apply(t, img, recs1...)
	d := metadata.NewDelta(after)
	if err := d.Replay(recs2[0], after.Offset()+1); err == nil {
		t.Fatal("a second block from the same counter was accepted")
	}

	for _, tc := range []struct {
		name  string
		id    int32
		epoch int64
	}{{"unregistered", 9, 1}, {"stale epoch", 1, 5}} {
		recs, resp := decideAllocateProducerIDs(img, allocReq(tc.id, tc.epoch))
		if len(recs) != 0 {
			t.Fatalf("%s: records", tc.name)
		}
		wantCode(t, tc.name, resp.ErrorCode, nil, kerr.StaleBrokerEpoch, "")
	}

	exhausted := apply(t, img, &metadata.ProducerIdsRecord{BrokerID: 1, BrokerEpoch: 11, NextProducerID: math.MaxInt64 - 10})
	recs, resp := decideAllocateProducerIDs(exhausted, allocReq(1, 11))
	if len(recs) != 0 || resp.ErrorCode != kerr.UnknownServerError.Code {
		t.Fatalf("exhausted ids: %d records, code %d", len(recs), resp.ErrorCode)
	}
}
