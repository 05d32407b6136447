package wire

import (
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// VersionRange is the range of versions served for one API key, both ends
// included.
type VersionRange struct {
	Key, Min, Max int16
}

// Registry says which API keys and version ranges this node serves: what
// ApiVersions advertises and what ParseRequest accepts. It is safe for
// concurrent use; it is normally filled once at start-up.
type Registry struct {
	mu     sync.RWMutex
	ranges map[int16]VersionRange
}

// NewRegistry returns an empty registry: it serves nothing until Add.
func NewRegistry() *Registry {
	return &Registry{ranges: make(map[int16]VersionRange)}
}

// Add serves key from minVersion to maxVersion, replacing any earlier range
// for key. maxVersion is clamped to the highest version the message type
// supports and minVersion to 0; a key without a message type, or a range that
// is empty after clamping, is not added.
func (r *Registry) Add(key, minVersion, maxVersion int16) {
	req := r.NewRequest(key)
	if req == nil {
		return
	}
	maxVersion = min(maxVersion, req.MaxVersion())
	minVersion = max(minVersion, 0)
	if minVersion > maxVersion {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ranges[key] = VersionRange{Key: key, Min: minVersion, Max: maxVersion}
}

// Range returns the served range of key.
func (r *Registry) Range(key int16) (VersionRange, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	vr, ok := r.ranges[key]
	return vr, ok
}

// Has reports whether key is served at any version.
func (r *Registry) Has(key int16) bool {
	_, ok := r.Range(key)
	return ok
}

// Supported reports whether key is served at version.
func (r *Registry) Supported(key, version int16) bool {
	vr, ok := r.Range(key)
	return ok && version >= vr.Min && version <= vr.Max
}

// Keys returns the served ranges sorted by key.
func (r *Registry) Keys() []VersionRange {
	r.mu.RLock()
	out := make([]VersionRange, 0, len(r.ranges))
	for _, vr := range r.ranges {
		out = append(out, vr)
	}
	r.mu.RUnlock()
	slices.SortFunc(out, func(a, b VersionRange) int { return int(a.Key) - int(b.Key) })
	return out
}

// NewRequest returns an empty request for key whether or not it is served:
// the mirror types for the mirror keys, kmsg's types otherwise, nil for a
// key neither knows.
func (r *Registry) NewRequest(key int16) kmsg.Request {
	return newRequest(key)
}

func newRequest(key int16) kmsg.Request {
	if IsMirrorKey(key) {
		return NewMirrorRequest(key)
	}
	return kmsg.RequestForKey(key)
}

// ApiVersionsResponse returns an ApiVersions response of the given version
// listing every served key, sorted, with no error, and MirrorFeature among
// the supported features (v3+) when the registry serves the mirror API a
// source answers (ReadLastMirroredEpochs). For a client that asked with a
// version this node does not serve, Kafka answers version 0 with
// UNSUPPORTED_VERSION and the same list: see UnsupportedApiVersionsResponse.
func (r *Registry) ApiVersionsResponse(version int16) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(version)
	for _, vr := range r.Keys() {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = vr.Key, vr.Min, vr.Max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	if r.Has(KeyReadLastMirroredEpochs) {
		f := kmsg.NewApiVersionsResponseSupportedFeature()
		f.Name, f.MinVersion, f.MaxVersion = MirrorFeature, 1, MirrorFeatureVersion
		resp.SupportedFeatures = append(resp.SupportedFeatures, f)
	}
	return resp
}

// UnsupportedApiVersionsResponse is Kafka's answer to an ApiVersions request
// of an unsupported version: a version 0 body with UNSUPPORTED_VERSION and
// the served ranges, from which the client picks a version it can use.
func (r *Registry) UnsupportedApiVersionsResponse() *kmsg.ApiVersionsResponse {
	resp := r.ApiVersionsResponse(0)
	resp.ErrorCode = errUnsupportedVersionCode
	return resp
}
