package wire

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestRegistry(t *testing.T) {
	reg := NewRegistry()
	reg.Add(int16(kmsg.Metadata), 0, 1000) // clamped to kmsg's max
	reg.Add(int16(kmsg.Produce), 3, 7)
	reg.Add(KeyListMirrors, -4, 9)     // clamped to 0..0
	reg.Add(30000, 0, 1)               // no message type: ignored
	reg.Add(int16(kmsg.Fetch), 5, 2)   // empty range: ignored
	reg.Add(int16(kmsg.Produce), 3, 9) // replaces

	metaMax := kmsg.NewPtrMetadataRequest().MaxVersion()
	want := []VersionRange{
		{Key: 0, Min: 3, Max: 9},
		{Key: 3, Min: 0, Max: metaMax},
		{Key: KeyListMirrors, Min: 0, Max: 0},
	}
	if got := reg.Keys(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Keys = %+v, want %+v", got, want)
	}
	for _, c := range []struct {
		key, v int16
		ok     bool
	}{{0, 3, true}, {0, 2, false}, {0, 9, true}, {0, 10, false}, {3, metaMax, true}, {1, 5, false}, {KeyListMirrors, 0, true}, {KeyListMirrors, 1, false}} {
		if got := reg.Supported(c.key, c.v); got != c.ok {
			t.Errorf("Supported(%d, %d) = %v", c.key, c.v, got)
		}
	}
	resp := reg.ApiVersionsResponse(3)
	if resp.Version != 3 || resp.ErrorCode != 0 || len(resp.ApiKeys) != 3 || resp.ApiKeys[2].ApiKey != KeyListMirrors || resp.ApiKeys[0].MinVersion != 3 {
		t.Fatalf("ApiVersionsResponse = %+v", resp)
	}
	if len(resp.SupportedFeatures) != 0 {
		t.Fatalf("features without ReadLastMirroredEpochs: %+v", resp.SupportedFeatures)
	}
}

// TestRegistryMirrorFeature: a registry that serves the source side of the
// mirror APIs advertises the feature sources are probed for, and it
// survives the encoding of a v3+ response.
func TestRegistryMirrorFeature(t *testing.T) {
	reg := NewRegistry()
	reg.Add(int16(kmsg.ApiVersions), 0, 4)
	reg.Add(KeyReadLastMirroredEpochs, 0, 0)
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(3)
	if err := resp.ReadFrom(reg.ApiVersionsResponse(3).AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	want := []kmsg.ApiVersionsResponseSupportedFeature{{Name: MirrorFeature, MinVersion: 1, MaxVersion: MirrorFeatureVersion}}
	if !reflect.DeepEqual(resp.SupportedFeatures, want) {
		t.Fatalf("SupportedFeatures = %+v, want %+v", resp.SupportedFeatures, want)
	}
}

func TestRegistryNewRequestUsesMirrorTypes(t *testing.T) {
	reg := NewRegistry()
	if _, ok := reg.NewRequest(KeyCreateMirror).(*CreateMirrorRequest); !ok {
		t.Fatalf("key %d = %T, want *CreateMirrorRequest", KeyCreateMirror, reg.NewRequest(KeyCreateMirror))
	}
	// Kafka's keys keep Kafka's APIs: 94 was a mirror key once.
	if _, ok := reg.NewRequest(94).(*kmsg.UnregisterControllerRequest); !ok {
		t.Fatalf("key 94 = %T, want kmsg's UnregisterController", reg.NewRequest(94))
	}
	for k := MinMirrorKey; k <= MaxMirrorKey; k++ {
		if reflect.TypeOf(reg.NewRequest(k)).Elem().PkgPath() != reflect.TypeOf(Registry{}).PkgPath() {
			t.Errorf("key %d = %T", k, reg.NewRequest(k))
		}
	}
	if _, ok := reg.NewRequest(1).(*kmsg.FetchRequest); !ok {
		t.Errorf("key 1 = %T", reg.NewRequest(1))
	}
	if reg.NewRequest(-1) != nil || reg.NewRequest(30000) != nil {
		t.Error("unknown keys must return nil")
	}
}

func TestMirrorClientVersions(t *testing.T) {
	vs := MirrorClientVersions(nil)
	for k := MinMirrorKey; k <= MaxMirrorKey; k++ {
		if v, ok := vs.LookupMaxKeyVersion(k); !ok || v != 0 {
			t.Errorf("key %d: %d %v", k, v, ok)
		}
	}
	if v, ok := vs.LookupMaxKeyVersion(int16(kmsg.Produce)); !ok || v < 9 {
		t.Errorf("stock keys lost: produce %d %v", v, ok)
	}
}
