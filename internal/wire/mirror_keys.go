package wire

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// API keys of the mirror RPCs: 9000 to 9010, a block far above every key an
// Apache Kafka release uses (4.4 ends at 94, UnregisterController) and
// below the int16 limit, so that no Kafka API upstream adds collides with
// them. They were 94 to 104 until Kafka 4.x took 94 and KIP-1279 began
// assigning that range to Kafka's own mirroring. docs/protocol.md has the
// table and how to remap them; a test reads a real Kafka broker's
// ApiVersions and fails on any overlap (internal/testcluster/kafkacluster).
// Whether a peer serves them is negotiated with MirrorFeature, never
// inferred from a key number.
const (
	KeyCreateMirror           int16 = 9000
	KeyAddTopicsToMirror      int16 = 9001
	KeyRemoveTopicsFromMirror int16 = 9002
	KeyDeleteMirror           int16 = 9003
	KeyListMirrors            int16 = 9004
	KeyDescribeMirrors        int16 = 9005
	KeyReadMirrorStates       int16 = 9006
	KeyWriteMirrorStates      int16 = 9007
	KeyPauseMirrorTopics      int16 = 9008
	KeyResumeMirrorTopics     int16 = 9009
	KeyReadLastMirroredEpochs int16 = 9010

	// MinMirrorKey and MaxMirrorKey bound the mirror API keys.
	MinMirrorKey = KeyCreateMirror
	MaxMirrorKey = KeyReadLastMirroredEpochs
)

// MirrorFeature is the feature a kmirror broker advertises in ApiVersions'
// SupportedFeatures (v3+) while it serves the mirror APIs, at versions 1 to
// MirrorFeatureVersion: version 1 is the eleven APIs at version 0 on the keys
// above. A peer that serves them is known by this feature, not by a key
// number: Kafka may assign any key to an API of its own. Moving the APIs to
// other keys, or changing them incompatibly, is a new feature version.
const (
	MirrorFeature              = "kmirror.mirror.version"
	MirrorFeatureVersion int16 = 1
)

var mirrorNames = [...]string{
	"CreateMirror", "AddTopicsToMirror", "RemoveTopicsFromMirror", "DeleteMirror",
	"ListMirrors", "DescribeMirrors", "ReadMirrorStates", "WriteMirrorStates",
	"PauseMirrorTopics", "ResumeMirrorTopics", "ReadLastMirroredEpochs",
}

// IsMirrorKey reports whether key is one of kmirror's mirror APIs.
func IsMirrorKey(key int16) bool { return key >= MinMirrorKey && key <= MaxMirrorKey }

// APIName returns the name of an API key as kmirror serves it: the mirror API
// names for the mirror keys, kmsg's names otherwise, "Unknown(<key>)" for
// keys neither knows.
func APIName(key int16) string {
	if IsMirrorKey(key) {
		return mirrorNames[key-MinMirrorKey]
	}
	if n := kmsg.NameForKey(key); n != "" && n != "Unknown" {
		return n
	}
	return fmt.Sprintf("Unknown(%d)", key)
}

// NewMirrorRequest returns an empty request of the mirror API key, or nil if
// key is not a mirror key.
func NewMirrorRequest(key int16) kmsg.Request {
	switch key {
	case KeyCreateMirror:
		return new(CreateMirrorRequest)
	case KeyAddTopicsToMirror:
		return new(AddTopicsToMirrorRequest)
	case KeyRemoveTopicsFromMirror:
		return new(RemoveTopicsFromMirrorRequest)
	case KeyDeleteMirror:
		return new(DeleteMirrorRequest)
	case KeyListMirrors:
		return new(ListMirrorsRequest)
	case KeyDescribeMirrors:
		return new(DescribeMirrorsRequest)
	case KeyReadMirrorStates:
		return new(ReadMirrorStatesRequest)
	case KeyWriteMirrorStates:
		return new(WriteMirrorStatesRequest)
	case KeyPauseMirrorTopics:
		return new(PauseMirrorTopicsRequest)
	case KeyResumeMirrorTopics:
		return new(ResumeMirrorTopicsRequest)
	case KeyReadLastMirroredEpochs:
		return new(ReadLastMirroredEpochsRequest)
	}
	return nil
}

// NewMirrorResponse returns an empty response of the mirror API key, or nil
// if key is not a mirror key.
func NewMirrorResponse(key int16) kmsg.Response {
	if req := NewMirrorRequest(key); req != nil {
		return req.ResponseKind()
	}
	return nil
}

// MirrorClientVersions adds the mirror keys at version 0 to base (a fresh
// kversion.Stable() when nil) and returns it. A franz-go client sends only keys
// its configured versions contain, and the stock tables hold only Kafka's
// keys, so a kgo client that talks to the mirror APIs must be built with
// kgo.MaxVersions(wire.MirrorClientVersions(nil)).
func MirrorClientVersions(base *kversion.Versions) *kversion.Versions {
	if base == nil {
		base = kversion.Stable()
	}
	for k := MinMirrorKey; k <= MaxMirrorKey; k++ {
		base.SetMaxKeyVersion(k, 0)
	}
	return base
}

// requestWith issues req on r and checks the response type, so each mirror
// request's RequestWith can return its concrete response.
func requestWith[T kmsg.Response](ctx context.Context, r kmsg.Requestor, req kmsg.Request) (T, error) {
	var zero T
	resp, err := r.Request(ctx, req)
	if err != nil {
		return zero, err
	}
	t, ok := resp.(T)
	if !ok {
		return zero, fmt.Errorf("%s: unexpected response type %T", APIName(req.Key()), resp)
	}
	return t, nil
}
