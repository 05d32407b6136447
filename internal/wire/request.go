package wire

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrUnknownAPIKey is wrapped by ParseRequest for a key this node does not
// serve. Kafka closes the connection on such a request.
var ErrUnknownAPIKey = errors.New("unknown API key")

var errUnsupportedVersionCode = kerr.UnsupportedVersion.Code

const (
	apiVersionsKey        = int16(kmsg.ApiVersions)
	controlledShutdownKey = int16(kmsg.ControlledShutdown)
)

// RequestHeader is the header of a request.
type RequestHeader struct {
	APIKey        int16
	APIVersion    int16
	CorrelationID int32
	// ClientID is nil when the client sent a null id, and always nil for
	// ControlledShutdown v0, whose header has no client id.
	ClientID *string
}

// RequestHeaderVersion returns the request header version Kafka uses for a
// key and version: 0 for ControlledShutdown v0, 2 (with tagged fields) for
// flexible versions, 1 otherwise. For a key without a message type it returns
// 1.
func RequestHeaderVersion(key, version int16) int16 {
	if key == controlledShutdownKey && version == 0 {
		return 0
	}
	if isFlexible(key, version) {
		return 2
	}
	return 1
}

// ResponseHeaderVersion returns the response header version for a key and
// version: 1 (with tagged fields) for flexible versions except ApiVersions,
// whose response header is always version 0 so that a client can read it
// before it knows which versions the broker speaks; 0 otherwise.
func ResponseHeaderVersion(key, version int16) int16 {
	if key != apiVersionsKey && isFlexible(key, version) {
		return 1
	}
	return 0
}

// isFlexible reports whether key at version uses the flexible encoding. The
// message types answer this for any version, including ones above their
// maximum (Kafka's flexible ranges are open-ended), which matters for headers
// of requests with versions this node does not serve.
func isFlexible(key, version int16) bool {
	req := newRequest(key)
	if req == nil {
		return false
	}
	req.SetVersion(version)
	return req.IsFlexible()
}

// ParseRequest splits a frame (without its size prefix) into header and
// decoded body.
//
// Errors, all with whatever of the header was read:
//   - a header that does not decode: wraps ErrMalformed;
//   - a key not served by reg: wraps ErrUnknownAPIKey (request nil);
//   - a version not served: wraps kerr.UnsupportedVersion (request nil). For
//     ApiVersions the server answers reg.UnsupportedApiVersionsResponse();
//     for other keys Kafka closes the connection;
//   - a body that does not decode: wraps ErrMalformed (request nil).
//
// It never panics. Byte fields of the returned request (e.g. Produce
// records) alias frame.
func ParseRequest(frame []byte, reg *Registry) (RequestHeader, kmsg.Request, error) {
	var h RequestHeader
	r := NewReader(frame)
	h.APIKey = r.Int16()
	h.APIVersion = r.Int16()
	h.CorrelationID = r.Int32()
	if err := r.Err(); err != nil {
		return h, nil, fmt.Errorf("request header: %w", err)
	}
	req := reg.NewRequest(h.APIKey)
	if req == nil {
		return h, nil, fmt.Errorf("request key %d: %w", h.APIKey, ErrUnknownAPIKey)
	}
	req.SetVersion(h.APIVersion)
	hv := RequestHeaderVersion(h.APIKey, h.APIVersion)
	if hv >= 1 {
		h.ClientID = readClientID(r)
	}
	if hv >= 2 {
		r.Tags() // no header tags are defined; unknown ones are skipped
	}
	if err := r.Err(); err != nil {
		return h, nil, fmt.Errorf("%s v%d request header: %w", APIName(h.APIKey), h.APIVersion, err)
	}
	if !reg.Has(h.APIKey) {
		return h, nil, fmt.Errorf("%s (key %d) is not served: %w", APIName(h.APIKey), h.APIKey, ErrUnknownAPIKey)
	}
	if !reg.Supported(h.APIKey, h.APIVersion) {
		vr, _ := reg.Range(h.APIKey)
		return h, nil, fmt.Errorf("%s v%d (served v%d to v%d): %w",
			APIName(h.APIKey), h.APIVersion, vr.Min, vr.Max, kerr.UnsupportedVersion)
	}
	body := frame[len(frame)-r.Len():]
	if err := decodeBody(req, body); err != nil {
		return h, nil, fmt.Errorf("%s v%d request body: %w: %w", APIName(h.APIKey), h.APIVersion, ErrMalformed, err)
	}
	return h, req, nil
}

// readClientID reads the header's client id: a classic (int16-length)
// nullable string even in header v2, which lets a broker read the header of
// an ApiVersions request it does not understand.
func readClientID(r *Reader) *string {
	n := r.Int16()
	if r.Err() != nil || n < 0 {
		return nil
	}
	s := string(r.take(int(n), "client id"))
	if r.Err() != nil {
		return nil
	}
	return &s
}

// decodeBody runs the message decoder, turning a panic into an error. kmsg's
// decoders check every length against the bytes that remain (so allocation
// stays within a constant factor of the frame, about 32x at worst, measured by
// TestDecodeAllocationBound); the recover is a second line of defence so that
// no input can crash a connection handler.
func decodeBody(req kmsg.Request, body []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("decoder panic: %v", p)
		}
	}()
	return req.ReadFrom(body)
}

// AppendRequest appends a whole request frame to dst: the size prefix, the
// header at the version Kafka uses for req's key and version (see
// RequestHeaderVersion; the client id is a classic nullable string in every
// header version that has one) and the body. It is the client-side
// counterpart of ParseRequest.
func AppendRequest(dst []byte, correlationID int32, clientID *string, req kmsg.Request) []byte {
	start := len(dst)
	dst = BeginFrame(dst)
	dst = AppendInt16(dst, req.Key())
	dst = AppendInt16(dst, req.GetVersion())
	dst = AppendInt32(dst, correlationID)
	hv := RequestHeaderVersion(req.Key(), req.GetVersion())
	if hv >= 1 {
		if clientID == nil {
			dst = AppendInt16(dst, -1)
		} else {
			dst = AppendInt16(dst, int16(len(*clientID)))
			dst = append(dst, *clientID...)
		}
	}
	if hv >= 2 {
		dst = append(dst, 0) // no header tags
	}
	dst = req.AppendTo(dst)
	if err := FinishFrame(dst[start:], 0); err != nil {
		binary.BigEndian.PutUint32(dst[start:], 0xffffffff)
	}
	return dst
}
