package txn

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/wire"
)

func markersRequest(version int16, markers ...kmsg.WriteTxnMarkersRequestMarker) *kmsg.WriteTxnMarkersRequest {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = version
	req.Markers = markers
	return req
}

func marker(pid int64, epoch int16, commit bool, coordEpoch int32, tps ...storage.TopicPartition) kmsg.WriteTxnMarkersRequestMarker {
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = pid, epoch, commit, coordEpoch
	for _, g := range groupByTopic(tps) {
		t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		t.Topic, t.Partitions = g.topic, g.partitions
		m.Topics = append(m.Topics, t)
	}
	return m
}

// codes flattens a WriteTxnMarkers response: "pid/topic-partition" → error.
func codes(resp *kmsg.WriteTxnMarkersResponse) map[string]error {
	out := map[string]error{}
	for _, m := range resp.Markers {
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				out[fmt.Sprintf("%d/%s-%d", m.ProducerID, t.Topic, p.Partition)] = kerr.ErrorForCode(p.ErrorCode)
			}
		}
	}
	return out
}

func TestMarkerServiceWritesMarkers(t *testing.T) {
	data := newDataLogs(t)
	svc := NewMarkerService(data, data)
	var mu sync.Mutex
	var written []string
	svc.OnMarkerWritten(func(pid int64, topic string, partition int32) {
		mu.Lock()
		written = append(written, fmt.Sprintf("%d/%s-%d", pid, topic, partition))
		mu.Unlock()
	})
	apis := map[int16]wire.API{}
	for _, a := range svc.APIs() {
		apis[a.Key] = a
	}
	a0, a1, o2 := tp("a", 0), tp("a", 1), tp(OffsetsTopic, 2)
	if err := data.produce(a0, 7, 0, 0, "v"); err != nil {
		t.Fatal(err)
	}
	for _, version := range []int16{0, 1} {
		resp := callAPI(t, apis, markersRequest(version,
			marker(7, 0, true, 3, a0, a1, o2),
			marker(8, 2, false, 3, a1),
		)).(*kmsg.WriteTxnMarkersResponse)
		want := map[string]error{"7/a-0": nil, "7/a-1": nil, "7/" + OffsetsTopic + "-2": nil, "8/a-1": nil}
		if got := codes(resp); !reflect.DeepEqual(got, want) {
			t.Errorf("v%d: %v", version, got)
		}
	}
	if ms := data.markers(a0); len(ms) != 2 || !ms[0].commit || ms[0].pid != 7 || ms[0].coordinatorEpoch != 3 {
		t.Errorf("a-0 markers: %+v", ms)
	}
	// The markers of one request are appended concurrently: any order.
	kinds := map[string]int{}
	for _, m := range data.markers(a1) {
		kinds[fmt.Sprintf("%d/%d/%v", m.pid, m.epoch, m.commit)]++
	}
	if want := map[string]int{"7/0/true": 2, "8/2/false": 2}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("a-1 markers: %v", kinds)
	}
	if calls := data.groupCalls(); len(calls) != 2 || calls[0] != (groupCall{2, 7, 0, 3, true}) {
		t.Errorf("group completions: %+v", calls)
	}
	if got := data.values(a0, true); len(got) != 1 {
		t.Errorf("committed data: %v", got)
	}
	mu.Lock()
	if len(written) != 8 {
		t.Errorf("OnMarkerWritten calls: %v", written)
	}
	mu.Unlock()
}

func TestMarkerServiceErrors(t *testing.T) {
	data := newDataLogs(t)
	svc := NewMarkerService(data, data)
	a0, a1, o1 := tp("a", 0), tp("a", 1), tp(OffsetsTopic, 1)
	// A producer at epoch 3 in a-1: a marker of epoch 2 is a zombie's.
	if err := data.produce(a1, 7, 3, 0, "v"); err != nil {
		t.Fatal(err)
	}
	data.failWith(a0, fmt.Errorf("moved: %w", kerr.NotLeaderForPartition))
	data.failWith(o1, fmt.Errorf("loading: %w", kerr.CoordinatorLoadInProgress))
	resp := svc.WriteMarkers(context.Background(), markersRequest(1,
		marker(7, 2, true, 0, a0, a1, o1),
		marker(-1, 0, true, 0, a1),
	))
	want := map[string]error{
		"7/a-0":                    kerr.NotLeaderForPartition,
		"7/a-1":                    kerr.InvalidProducerEpoch,
		"7/" + OffsetsTopic + "-1": kerr.NotLeaderForPartition,
		"-1/a-1":                   kerr.InvalidRequest,
	}
	if got := codes(resp); !reflect.DeepEqual(got, want) {
		t.Errorf("errors: %v", got)
	}
	// Without a group coordinator, __consumer_offsets markers are retried.
	resp = NewMarkerService(data, nil).WriteMarkers(context.Background(), markersRequest(1, marker(7, 3, true, 0, tp(OffsetsTopic, 0))))
	if got := codes(resp); got["7/"+OffsetsTopic+"-0"] != kerr.NotLeaderForPartition {
		t.Errorf("no group coordinator: %v", got)
	}
}
