package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/auth"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/wire"
)

// TestRequestTimeQuota checks request_percentage's arithmetic: the
// handling time a client's requests take, in percent of one thread over
// the measured window, against the quota; the throttle is how far over,
// relative to the quota, times the window, at most one window sample.
func TestRequestTimeQuota(t *testing.T) {
	d := metadata.NewDelta(metadata.EmptyImage())
	entity := metadata.QuotaEntity{{Type: metadata.QuotaEntityClientID, Name: "busy"}}
	if err := d.Replay(&metadata.ClientQuotaRecord{Entity: entity, Key: "request_percentage", Value: 10}, 1); err != nil {
		t.Fatal(err)
	}
	img := d.Apply()
	q := newClientQuotas(11, 1) // Kafka's defaults: 11 samples of 1 s
	rc := func(client string) *wire.RequestContext {
		return &wire.RequestContext{Header: wire.RequestHeader{ClientID: &client}, Principal: wire.AnonymousPrincipal}
	}
	now := time.Unix(1_000_000, 0)

	// 50 ms of handling in a window of at least 10 s is 0.5 %: within 10 %.
	if th := q.recordRequestTime(img, rc("busy"), 50*time.Millisecond, now); th != 0 {
		t.Fatalf("0.5%% of a 10%% quota throttled %v", th)
	}
	// Another 1.45 s: 15 % over 10 s, half again over the quota: a
	// throttle of half the 10 s window, bounded by one 1 s sample.
	if th := q.recordRequestTime(img, rc("busy"), 1450*time.Millisecond, now); th != time.Second {
		t.Fatalf("15%% of a 10%% quota throttled %v, want the 1 s bound", th)
	}
	// A client without a quota is never throttled.
	if th := q.recordRequestTime(img, rc("idle"), time.Hour, now); th != 0 {
		t.Fatalf("a client without a quota throttled %v", th)
	}

	// Under a larger window bound the throttle is the formula's: with
	// 1.5 s in 10 s against a 12 % quota, (15-12)/12 of 10 s = 2.5 s,
	// bounded by a 5 s sample.
	d = metadata.NewDelta(img)
	if err := d.Replay(&metadata.ClientQuotaRecord{Entity: entity, Key: "request_percentage", Value: 12}, 2); err != nil {
		t.Fatal(err)
	}
	img = d.Apply()
	q = newClientQuotas(3, 5) // window ≥ 10 s
	if th := q.recordRequestTime(img, rc("busy"), 1500*time.Millisecond, now); th != 2500*time.Millisecond {
		t.Fatalf("15%% of a 12%% quota throttled %v, want 2.5 s", th)
	}
}

// TestRequestQuotaExemptions runs over every API key the authorizer knows:
// exactly the inter-broker APIs (those that need CLUSTER_ACTION) and a
// follower's fetch are left out of request quotas, so that a new client
// API cannot slip out of them and a new inter-broker API cannot be
// throttled by a client quota.
func TestRequestQuotaExemptions(t *testing.T) {
	for _, r := range auth.Requirements() {
		req := kmsg.RequestForKey(r.Key)
		if req == nil {
			continue // a kmirror mirror API: not in kmsg's table
		}
		op, ok := r.ClusterCheck()
		want := ok && op == kmsg.ACLOperationClusterAction
		if got := requestQuotaExempt(req); got != want {
			t.Errorf("%s: exempt %v, want %v", wire.APIName(r.Key), got, want)
		}
	}
	follower := kmsg.NewPtrFetchRequest()
	follower.Version, follower.ReplicaState.ID = 15, 2
	consumer := kmsg.NewPtrFetchRequest()
	consumer.Version, consumer.ReplicaState.ID = 15, -1
	old := kmsg.NewPtrFetchRequest()
	old.Version, old.ReplicaID = 11, 3
	for _, tc := range []struct {
		name string
		req  *kmsg.FetchRequest
		want bool
	}{{"a follower's fetch (v15)", follower, true}, {"a consumer's fetch", consumer, false}, {"a follower's fetch (v11)", old, true}} {
		if got := requestQuotaExempt(tc.req); got != tc.want {
			t.Errorf("%s: exempt %v, want %v", tc.name, got, tc.want)
		}
	}
}
