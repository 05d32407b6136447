package wire

import (
	"context"
	"net"
	"os"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// RequestContext is what a handler knows about the request besides its body:
// the parsed header and the connection it arrived on.
type RequestContext struct {
	Header RequestHeader
	// Listener is the name of the listener the request arrived on
	// ("PLAINTEXT", "CONTROLLER", ...).
	Listener         string
	SecurityProtocol string
	// Principal is the authenticated principal, "User:ANONYMOUS" on a
	// listener without authentication.
	Principal  string
	ClientAddr net.Addr
	// Authz decides the principal's rights; nil when no authorizer is
	// configured, which allows everything. Handlers call rc.Authorize rather
	// than Authz directly.
	Authz Authorizer
}

// AnonymousPrincipal is the principal of an unauthenticated connection.
const AnonymousPrincipal = "User:ANONYMOUS"

// Handler serves one API key. It returns the response to send, or nil to send
// nothing (Produce with acks=0). A returned error means the request could not
// be served at all: the server logs it and closes the connection. Failures of
// single partitions or topics are not errors; they are error codes in the
// response.
type Handler func(ctx context.Context, rc *RequestContext, req kmsg.Request) (Response, error)

// Response is what a handler answers: a kmsg.Response, which the server
// encodes whole, or a *StreamResponse, whose body the server writes part by
// part.
type Response interface {
	Key() int16
	GetVersion() int16
}

// Part is one piece of a streamed response body: either Bytes, or the file
// range [Pos, Pos+Len) of File, which the server sends without copying it
// through user space where the connection allows.
type Part struct {
	Bytes []byte
	File  *os.File
	Pos   int64
	Len   int64
}

// Size is the number of body bytes the part contributes.
func (p Part) Size() int64 {
	if p.File != nil {
		return p.Len
	}
	return int64(len(p.Bytes))
}

// StreamResponse is a response body already encoded for APIKey at Version,
// split into parts so that record data can be sent straight from segment
// files (Fetch). The server writes the response header, then the parts in
// order, then calls Release (also when the write fails).
type StreamResponse struct {
	APIKey  int16
	Version int16
	Parts   []Part
	// ThrottleMillis is the throttle time the encoded body carries (the
	// connection reads nothing more for that long after sending it).
	ThrottleMillis int32
	// Release, if set, frees what the parts hold (segment references).
	Release func()
}

// Key returns the API key the body was encoded for.
func (s *StreamResponse) Key() int16 { return s.APIKey }

// Throttle returns ThrottleMillis, which applies after the response
// (KIP-219), as kmsg responses report theirs.
func (s *StreamResponse) Throttle() (int32, bool) { return s.ThrottleMillis, true }

// GetVersion returns the version the body was encoded at.
func (s *StreamResponse) GetVersion() int16 { return s.Version }

// Size is the body size in bytes.
func (s *StreamResponse) Size() int64 {
	var n int64
	for _, p := range s.Parts {
		n += p.Size()
	}
	return n
}

// Done releases what the parts hold; it is safe to call more than once.
func (s *StreamResponse) Done() {
	if s.Release != nil {
		s.Release()
		s.Release = nil
	}
}

// API declares one served API key: its version range, which ApiVersions
// advertises, and its handler.
type API struct {
	Key        int16
	MinVersion int16
	MaxVersion int16
	Handle     Handler
}

// Service is a part of a node that serves Kafka APIs (the broker, the
// controller, the coordinators). The server attaches services to listeners.
type Service interface {
	APIs() []API
}
