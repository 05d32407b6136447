package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
)

// FuzzRequests feeds arbitrary request bodies, decoded by kmsg for every
// API key and version the broker serves, to the broker's handlers: no
// request may panic a handler, and every streamed response must encode
// and release. The body is what a client controls after the header.
func FuzzRequests(f *testing.F) {
	e := newEnv(f, map[string]string{"num.partitions": "2"})
	e.createTopic("fz", 2, nil)
	e.mustProduce("fz", 0, makeBatch(f, plainBatch(), "a", "b"))
	e.mustProduce("fz", 1, makeBatch(f, batchOpts{pid: 9, epoch: 0, seq: 0, txn: false}, "c"))
	apis := e.b.APIs()
	// Seeds: a valid request of each API at its newest version.
	seeds := []kmsg.Request{
		&kmsg.ProduceRequest{Version: 11, Acks: 1, TimeoutMillis: 100, Topics: []kmsg.ProduceRequestTopic{{Topic: "fz", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: makeBatch(f, plainBatch(), "seed")}}}}},
		fetchReq(17, fetchPart{id: e.topicID("fz"), maxBytes: 100, curEpoch: -1, lastEpoch: -1}),
		fetchReq(11, fp("fz", 1, 0)),
		&kmsg.ListOffsetsRequest{Version: 8, ReplicaID: -1, Topics: []kmsg.ListOffsetsRequestTopic{{Topic: "fz", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Timestamp: -3, CurrentLeaderEpoch: -1}}}}},
		metadataReq(12, true, "fz", "fz-new"),
		&kmsg.DescribeConfigsRequest{Version: 4, IncludeSynonyms: true, Resources: []kmsg.DescribeConfigsRequestResource{{ResourceType: 2, ResourceName: "fz"}, {ResourceType: 4, ResourceName: "1"}}},
		&kmsg.DeleteRecordsRequest{Version: 2, Topics: []kmsg.DeleteRecordsRequestTopic{{Topic: "fz", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 1}}}}},
		&kmsg.OffsetForLeaderEpochRequest{Version: 4, ReplicaID: -1, Topics: []kmsg.OffsetForLeaderEpochRequestTopic{{Topic: "fz", Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{{CurrentLeaderEpoch: 0, LeaderEpoch: 0}}}}},
		&kmsg.InitProducerIDRequest{Version: 5, ProducerID: -1, ProducerEpoch: -1},
		&kmsg.DescribeLogDirsRequest{Version: 4},
		&kmsg.DescribeProducersRequest{Topics: []kmsg.DescribeProducersRequestTopic{{Topic: "fz", Partitions: []int32{1}}}},
		&kmsg.DescribeClusterRequest{Version: 1, EndpointType: 1},
		&kmsg.ElectLeadersRequest{Version: 2, ElectionType: 1, Topics: []kmsg.ElectLeadersRequestTopic{{Topic: "fz", Partitions: []int32{0, 1}}}, TimeoutMillis: 100},
		&wire.ListMirrorsRequest{},
		&wire.AddTopicsToMirrorRequest{MirrorName: "m", Topics: []wire.MirrorTopicsRequestTopic{{Name: "fz"}}, TimeoutMillis: 10},
	}
	for _, s := range seeds {
		f.Add(s.Key(), s.GetVersion(), s.AppendTo(nil))
	}
	f.Fuzz(func(t *testing.T, key, version int16, body []byte) {
		var api *wire.API
		for i := range apis {
			if apis[i].Key == key {
				api = &apis[i]
			}
		}
		if api == nil || version < api.MinVersion || version > api.MaxVersion {
			return
		}
		req := kmsg.RequestForKey(key)
		if wire.IsMirrorKey(key) {
			req = wire.NewMirrorRequest(key)
		}
		req.SetVersion(version)
		if err := req.ReadFrom(body); err != nil {
			return // the server closes the connection; the handler never sees it
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		resp, err := api.Handle(ctx, e.rc, req)
		if err != nil || resp == nil {
			return
		}
		switch r := resp.(type) {
		case *wire.StreamResponse:
			streamBytes(t, r)
			r.Done()
		case kmsg.Response:
			r.AppendTo(nil)
		}
	})
}
