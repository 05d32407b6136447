package wire

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// API keys of the mirror RPCs. They occupy 94 to 104; kmsg's key 94
// (UnregisterController) is not served by kmirror.
const (
	KeyCreateMirror           int16 = 94
	KeyAddTopicsToMirror      int16 = 95
	KeyRemoveTopicsFromMirror int16 = 96
	KeyDeleteMirror           int16 = 97
	KeyListMirrors            int16 = 98
	KeyDescribeMirrors        int16 = 99
	KeyReadMirrorStates       int16 = 100
	KeyWriteMirrorStates      int16 = 101
	KeyPauseMirrorTopics      int16 = 102
	KeyResumeMirrorTopics     int16 = 103
	KeyReadLastMirroredEpochs int16 = 104

	// MinMirrorKey and MaxMirrorKey bound the mirror API keys.
	MinMirrorKey = KeyCreateMirror
	MaxMirrorKey = KeyReadLastMirroredEpochs
)

var mirrorNames = [...]string{
	"CreateMirror", "AddTopicsToMirror", "RemoveTopicsFromMirror", "DeleteMirror",
	"ListMirrors", "DescribeMirrors", "ReadMirrorStates", "WriteMirrorStates",
	"PauseMirrorTopics", "ResumeMirrorTopics", "ReadLastMirroredEpochs",
}

// IsMirrorKey reports whether key is one of kmirror's mirror APIs.
func IsMirrorKey(key int16) bool { return key >= MinMirrorKey && key <= MaxMirrorKey }

// APIName returns the name of an API key as kmirror serves it: the mirror API
// names for 94 to 104, kmsg's names otherwise, "Unknown(<key>)" for keys
// neither knows.
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
// its configured versions contain, and the stock tables end at 94 with kmsg's
// UnregisterController, so a kgo client that talks to the mirror APIs must be
// built with kgo.MaxVersions(wire.MirrorClientVersions(nil)).
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
