package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
)

func regReq(id int32, incarnation byte) *kmsg.BrokerRegistrationRequest {
	r := kmsg.NewPtrBrokerRegistrationRequest()
	r.Version = 4
	r.BrokerID = id
	r.ClusterID = "cluster-a"
	r.IncarnationID = [16]byte{0: 0x22, 15: incarnation}
	l := kmsg.NewBrokerRegistrationRequestListener()
	// Port 1 on loopback refuses connections: a test broker added to the
	// quorum as a non-voter is simply unreachable.
	l.Name, l.Host, l.Port, l.SecurityProtocol = "PLAINTEXT", "127.0.0.1", 1, 0
	r.Listeners = append(r.Listeners, l)
	r.Rack = ptr("rack-a")
	f := kmsg.NewBrokerRegistrationRequestFeature()
	f.Name, f.MinSupportedVersion, f.MaxSupportedVersion = metadata.MetadataVersionFeature, 1, 20
	r.Features = append(r.Features, f)
	return r
}

func TestRegisterBroker(t *testing.T) {
	img := apply(t, metadata.EmptyImage(), &metadata.FeatureLevelRecord{Name: metadata.MetadataVersionFeature, Level: 7})

	recs, epoch, err := decideRegisterBroker(testView(t, img, nil), regReq(1, 1), registerInput{clusterID: "cluster-a", newEpoch: 42})
	wantErr(t, "first registration", err, nil)
	if epoch != 42 {
		t.Fatalf("epoch %d, want the new epoch 42", epoch)
	}
	img = apply(t, img, recs...)
	b, ok := img.Broker(1)
	if !ok || !b.Fenced || b.Epoch != 42 || b.Rack != "rack-a" || len(b.Endpoints) != 1 || b.Endpoints[0].Port != 1 {
		t.Fatalf("registration %+v: want fenced, epoch 42, rack and listener", b)
	}

	// The same incarnation again keeps its epoch and state.
	img = apply(t, img, &metadata.BrokerRegistrationChangeRecord{BrokerID: 1, BrokerEpoch: 42, Fenced: metadata.FencingUnfence})
	recs, epoch, err = decideRegisterBroker(testView(t, img, nil), regReq(1, 1), registerInput{sessionAlive: true, newEpoch: 50})
	wantErr(t, "same incarnation", err, nil)
	if epoch != 42 {
		t.Fatalf("re-registration epoch %d, want 42 kept", epoch)
	}
	if b, _ := apply(t, img, recs...).Broker(1); b.Fenced {
		t.Fatal("re-registration of the same incarnation fenced the broker")
	}

	// Another incarnation while the session lives is a duplicate.
	_, _, err = decideRegisterBroker(testView(t, img, nil), regReq(1, 2), registerInput{sessionAlive: true, newEpoch: 50})
	wantErr(t, "duplicate", err, kerr.DuplicateBrokerRegistration)

	// Once the session expired, the new incarnation replaces it.
	recs, epoch, err = decideRegisterBroker(testView(t, img, nil), regReq(1, 2), registerInput{newEpoch: 50})
	wantErr(t, "restart", err, nil)
	if b, _ := apply(t, img, recs...).Broker(1); epoch != 50 || b.Epoch != 50 || !b.Fenced || b.IncarnationID != (metadata.Uuid{0: 0x22, 15: 2}) {
		t.Fatalf("new incarnation: epoch %d, registration %+v", epoch, b)
	}

	for _, tc := range []struct {
		name string
		req  func() *kmsg.BrokerRegistrationRequest
		in   registerInput
		want *kerr.Error
	}{
		{"cluster id", func() *kmsg.BrokerRegistrationRequest { return regReq(2, 1) }, registerInput{clusterID: "other", newEpoch: 9}, kerr.InconsistentClusterID},
		{"negative id", func() *kmsg.BrokerRegistrationRequest { return regReq(-1, 1) }, registerInput{newEpoch: 9}, kerr.InvalidRegistration},
		{"zk broker", func() *kmsg.BrokerRegistrationRequest { r := regReq(2, 1); r.IsMigratingZkBroker = true; return r }, registerInput{newEpoch: 9}, kerr.BrokerIDNotRegistered},
		{"listener twice", func() *kmsg.BrokerRegistrationRequest {
			r := regReq(2, 1)
			r.Listeners = append(r.Listeners, r.Listeners[0])
			return r
		}, registerInput{newEpoch: 9}, kerr.InvalidRegistration},
		{"bad protocol", func() *kmsg.BrokerRegistrationRequest {
			r := regReq(2, 1)
			r.Listeners[0].SecurityProtocol = 9
			return r
		}, registerInput{newEpoch: 9}, kerr.InvalidRegistration},
		{"unsupported feature level", func() *kmsg.BrokerRegistrationRequest {
			r := regReq(2, 1)
			r.Features[0].MaxSupportedVersion = 6
			return r
		}, registerInput{newEpoch: 9}, kerr.UnsupportedVersion},
	} {
		_, _, err := decideRegisterBroker(testView(t, img, nil), tc.req(), tc.in)
		wantErr(t, tc.name, err, tc.want)
	}
}

func TestRegisterNewIncarnationMovesLeadership(t *testing.T) {
	// Broker 1 restarted before its session was noticed as expired: it is
	// still unfenced and leads p0, whose ISR has broker 2 too.
	img := cluster(t, upBrokers(2)...)
	id := metadata.Uuid{0: 4, 15: 1}
	img = withTopic(t, img, "t", id, partition(1, []int32{1, 2}, []int32{1, 2}))
	recs, _, err := decideRegisterBroker(testView(t, img, nil), regReq(1, 9), registerInput{newEpoch: 99})
	wantErr(t, "register", err, nil)
	after := apply(t, img, recs...)
	tp, _ := after.Topic("t")
	if st := tp.Partitions[0]; st.Leader != 2 || len(st.ISR) != 1 || st.LeaderEpoch != 1 {
		t.Fatalf("partition after re-registration %+v: want leader 2, ISR [2], epoch 1", st)
	}
}
