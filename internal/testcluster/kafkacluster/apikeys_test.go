package kafkacluster_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/internal/testcluster/kafkacluster"
	"github.com/kmirror/kmirror/internal/wire"
)

// TestMirrorKeysUnusedByKafka reads the ApiVersions of a real Apache Kafka
// 4.4 broker and of a kmirror node and fails on any key kmirror serves for
// an API other than Kafka's: the mirror APIs must live on keys Kafka does
// not use, and kmirror's Kafka keys must be Kafka's APIs. It also checks
// that only kmirror advertises the mirror feature that sources are probed
// for.
func TestMirrorKeysUnusedByKafka(t *testing.T) {
	kc := kafkacluster.Start(t)
	kafka := readApiVersions(t, kc.Addr(1))
	// The controller listener serves the quorum's APIs, which brokers do
	// not advertise: Kafka uses those keys too.
	kafkaController := readApiVersions(t, kc.ControllerAddr(1))
	kmirror := readApiVersions(t, testcluster.Start(t).Nodes()[0].Addr())

	kafkaKeys := map[int16]kmsg.ApiVersionsResponseApiKey{}
	listing := map[int16]string{}
	for listener, av := range map[string]*kmsg.ApiVersionsResponse{"broker": kafka, "controller": kafkaController} {
		for _, k := range av.ApiKeys {
			kafkaKeys[k.ApiKey] = k
			listing[k.ApiKey] += fmt.Sprintf(" %s:v%d-%d", listener, k.MinVersion, k.MaxVersion)
		}
	}
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(listing)) {
		lines = append(lines, fmt.Sprintf("%d %s%s", k, kmsg.NameForKey(k), listing[k]))
	}
	maxKafka := slices.Max(slices.Collect(maps.Keys(kafkaKeys)))
	t.Logf("Apache Kafka %s advertises %d keys, the highest %d:\n%s", kafkacluster.Version, len(kafkaKeys), maxKafka, strings.Join(lines, "\n"))

	if wire.MinMirrorKey <= maxKafka {
		t.Errorf("the mirror keys start at %d, not above Kafka's highest key %d", wire.MinMirrorKey, maxKafka)
	}
	for k := wire.MinMirrorKey; k <= wire.MaxMirrorKey; k++ {
		if n := kmsg.NameForKey(k); n != "" && n != "Unknown" {
			t.Errorf("mirror key %d (%s) is %s in franz-go's kmsg", k, wire.APIName(k), n)
		}
	}
	served := map[int16]bool{}
	for _, k := range kmirror.ApiKeys {
		served[k.ApiKey] = true
		kk, inKafka := kafkaKeys[k.ApiKey]
		switch {
		case wire.IsMirrorKey(k.ApiKey) && inKafka:
			t.Errorf("kmirror serves %s on key %d, which Kafka serves as %s", wire.APIName(k.ApiKey), k.ApiKey, kmsg.NameForKey(kk.ApiKey))
		case !wire.IsMirrorKey(k.ApiKey) && wire.APIName(k.ApiKey) != kmsg.NameForKey(k.ApiKey):
			t.Errorf("kmirror serves %s on Kafka's key %d (%s)", wire.APIName(k.ApiKey), k.ApiKey, kmsg.NameForKey(k.ApiKey))
		}
	}
	for k := wire.MinMirrorKey; k <= wire.MaxMirrorKey; k++ {
		if !served[k] {
			t.Errorf("kmirror does not advertise mirror key %d (%s)", k, wire.APIName(k))
		}
	}

	if f, ok := feature(kmirror, wire.MirrorFeature); !ok || f.MinVersion > wire.MirrorFeatureVersion || f.MaxVersion < wire.MirrorFeatureVersion {
		t.Errorf("kmirror's ApiVersions: feature %s = %+v (present %v), want versions %d", wire.MirrorFeature, f, ok, wire.MirrorFeatureVersion)
	}
	if f, ok := feature(kafka, wire.MirrorFeature); ok {
		t.Errorf("Kafka advertises %s: %+v", wire.MirrorFeature, f)
	}
}

// readApiVersions sends ApiVersions (at the client's highest version, so
// with SupportedFeatures) to addr alone.
func readApiVersions(t *testing.T, addr string) *kmsg.ApiVersionsResponse {
	t.Helper()
	cl := newClient(t, kgo.SeedBrokers(addr))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "kmirror-test", "1"
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatalf("ApiVersions of %s: %v", addr, err)
	}
	av := resp.(*kmsg.ApiVersionsResponse)
	if av.ErrorCode != 0 || av.Version < 3 {
		t.Fatalf("ApiVersions of %s: error %d, version %d", addr, av.ErrorCode, av.Version)
	}
	return av
}

func feature(av *kmsg.ApiVersionsResponse, name string) (kmsg.ApiVersionsResponseSupportedFeature, bool) {
	for _, f := range av.SupportedFeatures {
		if f.Name == name {
			return f, true
		}
	}
	return kmsg.ApiVersionsResponseSupportedFeature{}, false
}
