package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
)

func hbReq(id int32, epoch, offset int64, wantFence, wantShutdown bool) *kmsg.BrokerHeartbeatRequest {
	r := kmsg.NewPtrBrokerHeartbeatRequest()
	r.Version = 1
	r.BrokerID, r.BrokerEpoch, r.CurrentMetadataOffset = id, epoch, offset
	r.WantFence, r.WantShutdown = wantFence, wantShutdown
	return r
}

func TestHeartbeatTransitions(t *testing.T) {
	id := metadata.Uuid{0: 6, 15: 1}
	// Broker 1 leads p0 (ISR 1,2); p1 is offline with ISR [1].
	base := func(t *testing.T, b1 broker) *metadata.Image {
		img := cluster(t, b1, broker{id: 2})
		leader := int32(1)
		if b1.fenced {
			leader = 2
		}
		isr0 := []int32{1, 2}
		if b1.fenced {
			isr0 = []int32{2}
		}
		return withTopic(t, img, "t", id,
			partition(leader, []int32{1, 2}, isr0),
			partition(-1, []int32{1}, []int32{1}))
	}
	in := heartbeatInput{registrationOffset: 5, shutdownOffset: -1, lowestActiveOffset: noActiveOffset}
	for _, tc := range []struct {
		name                     string
		b1                       broker
		req                      *kmsg.BrokerHeartbeatRequest
		in                       heartbeatInput
		next                     brokerState
		fenced, shutdown, caught bool
		leader0, leader1         int32
		wantCS                   bool
	}{
		{"fenced and caught up: unfenced, leads its offline partition", broker{id: 1, fenced: true}, hbReq(1, 11, 5, false, false), in, stateUnfenced, false, false, true, 2, 1, false},
		{"fenced, behind its registration", broker{id: 1, fenced: true}, hbReq(1, 11, 4, false, false), in, stateFenced, true, false, false, 2, -1, false},
		{"fenced, wants to stay fenced", broker{id: 1, fenced: true}, hbReq(1, 11, 9, true, false), in, stateFenced, true, false, true, 2, -1, false},
		{"fenced, wants to shut down", broker{id: 1, fenced: true}, hbReq(1, 11, 9, false, true), in, stateShutdownNow, true, true, true, 2, -1, false},
		{"unfenced, keeps going", broker{id: 1}, hbReq(1, 11, 9, false, false), in, stateUnfenced, false, false, true, 1, -1, false},
		{"unfenced, asks to be fenced", broker{id: 1}, hbReq(1, 11, 9, true, false), in, stateFenced, true, false, true, 2, -1, false},
		{"unfenced leader asks to shut down", broker{id: 1}, hbReq(1, 11, 9, false, true), in, stateControlledShutdown, false, false, true, 2, -1, true},
		{"in controlled shutdown, still leading", broker{id: 1, shutdown: true}, hbReq(1, 11, 9, false, true),
			heartbeatInput{registrationOffset: 5, shutdownOffset: 8, lowestActiveOffset: 7}, stateControlledShutdown, false, false, true, 1, -1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := base(t, tc.b1)
			v := testView(t, img, nil)
			recs, next, resp := decideHeartbeat(v, tc.req, tc.in)
			wantCode(t, tc.name, resp.ErrorCode, nil, nil, "")
			if next != tc.next || resp.IsFenced != tc.fenced || resp.ShouldShutdown != tc.shutdown || resp.IsCaughtUp != tc.caught {
				t.Fatalf("next %v fenced %v shutdown %v caught up %v", next, resp.IsFenced, resp.ShouldShutdown, resp.IsCaughtUp)
			}
			after := apply(t, img, recs...)
			b, _ := after.Broker(1)
			if b.Fenced != tc.fenced && !tc.shutdown || b.InControlledShutdown != tc.wantCS {
				t.Fatalf("registration after heartbeat %+v", b)
			}
			tp, _ := after.Topic("t")
			if tp.Partitions[0].Leader != tc.leader0 || tp.Partitions[1].Leader != tc.leader1 {
				t.Fatalf("leaders after heartbeat: p0 %d p1 %d, want %d %d", tp.Partitions[0].Leader, tp.Partitions[1].Leader, tc.leader0, tc.leader1)
			}
		})
	}
}

func TestHeartbeatShutdownCompletes(t *testing.T) {
	img := cluster(t, broker{id: 1, shutdown: true}, broker{id: 2})
	img = withTopic(t, img, "t", metadata.Uuid{0: 6, 15: 2}, partition(2, []int32{1, 2}, []int32{2}))
	// Broker 1 leads nothing, but broker 2 has not seen the shutdown record.
	_, next, resp := decideHeartbeat(testView(t, img, nil), hbReq(1, 11, 9, false, true),
		heartbeatInput{registrationOffset: 1, shutdownOffset: 7, lowestActiveOffset: 6})
	if next != stateControlledShutdown || resp.ShouldShutdown {
		t.Fatalf("shutdown granted before the other brokers saw it: next %v", next)
	}
	// Now it has.
	recs, next, resp := decideHeartbeat(testView(t, img, nil), hbReq(1, 11, 9, false, true),
		heartbeatInput{registrationOffset: 1, shutdownOffset: 7, lowestActiveOffset: 7})
	if next != stateShutdownNow || !resp.ShouldShutdown || !resp.IsFenced {
		t.Fatalf("next %v, response %+v", next, resp)
	}
	if b, _ := apply(t, img, recs...).Broker(1); !b.Fenced {
		t.Fatal("a broker allowed to shut down is not fenced")
	}
	// A leader that asks to stop and leads nothing stops at once.
	img2 := cluster(t, upBrokers(2)...)
	_, next, resp = decideHeartbeat(testView(t, img2, nil), hbReq(2, 12, 9, false, true), heartbeatInput{shutdownOffset: -1, lowestActiveOffset: noActiveOffset})
	if next != stateShutdownNow || !resp.ShouldShutdown {
		t.Fatalf("idle broker shutdown: next %v", next)
	}
}

func TestHeartbeatStaleEpoch(t *testing.T) {
	img := cluster(t, upBrokers(1)...)
	for _, req := range []*kmsg.BrokerHeartbeatRequest{hbReq(1, 99, 0, false, false), hbReq(7, 1, 0, false, false)} {
		recs, _, resp := decideHeartbeat(testView(t, img, nil), req, heartbeatInput{})
		if len(recs) != 0 {
			t.Fatal("records for a stale heartbeat")
		}
		wantCode(t, "stale", resp.ErrorCode, nil, kerr.StaleBrokerEpoch, "")
	}
}
