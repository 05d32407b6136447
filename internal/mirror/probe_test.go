package mirror

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kmirror/kmirror/internal/wire"
)

// TestProbeMirrorFeature: a source supports the mirror APIs (the LME query)
// when its ApiVersions advertises wire.MirrorFeature at the version this
// node speaks; a key number proves nothing, since Kafka may give any key
// an API of its own.
func TestProbeMirrorFeature(t *testing.T) {
	for _, c := range []struct {
		name     string
		keys     []int16 // added to Kafka's stock keys
		features []kmsg.ApiVersionsResponseSupportedFeature
		want     bool
	}{
		{name: "plain kfake", want: false},
		{name: "ReadLastMirroredEpochs key without the feature", keys: []int16{wire.KeyReadLastMirroredEpochs}, want: false},
		{name: "the feature", keys: []int16{wire.KeyReadLastMirroredEpochs}, features: feature(1, wire.MirrorFeatureVersion), want: true},
		{name: "only a later feature version", keys: []int16{wire.KeyReadLastMirroredEpochs}, features: feature(wire.MirrorFeatureVersion+1, wire.MirrorFeatureVersion+1), want: false},
		{name: "another feature", keys: []int16{wire.KeyReadLastMirroredEpochs}, features: []kmsg.ApiVersionsResponseSupportedFeature{{Name: "metadata.version", MinVersion: 1, MaxVersion: 30}}, want: false},
	} {
		t.Run(c.name, func(t *testing.T) {
			src, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID("probe-source"))
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			if c.name != "plain kfake" {
				src.ControlKey(int16(kmsg.ApiVersions), func(r kmsg.Request) (kmsg.Response, error, bool) {
					src.KeepControl()
					return apiVersions(r.GetVersion(), c.keys, c.features), nil, true
				})
			}
			cl, err := kgo.NewClient(kgo.SeedBrokers(src.ListenAddrs()...))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			info, err := probe(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			if info.supportsLME != c.want || info.clusterID != "probe-source" {
				t.Fatalf("probe = %+v, want supportsLME %v", info, c.want)
			}
		})
	}
}

func feature(minV, maxV int16) []kmsg.ApiVersionsResponseSupportedFeature {
	return []kmsg.ApiVersionsResponseSupportedFeature{{Name: wire.MirrorFeature, MinVersion: minV, MaxVersion: maxV}}
}

// apiVersions answers ApiVersions with Kafka's stock keys, extra keys at
// version 0, and features.
func apiVersions(version int16, extra []int16, features []kmsg.ApiVersionsResponseSupportedFeature) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(version)
	kversion.Stable().EachMaxKeyVersion(func(k, v int16) {
		resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MaxVersion: v})
	})
	for _, k := range extra {
		resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k})
	}
	resp.SupportedFeatures = features
	return resp
}
