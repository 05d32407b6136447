package wire

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// AppendResponse appends a whole response frame to dst: the size prefix, the
// response header (version 1 with tagged fields for flexible versions, except
// ApiVersions which always uses version 0) and the body at resp's version.
//
// A response whose frame would exceed 2 GiB cannot be framed; its size prefix
// is then written as -1, which makes any client drop the connection rather
// than misread the stream. Servers bound response sizes well below that.
func AppendResponse(dst []byte, correlationID int32, resp kmsg.Response) []byte {
	start := len(dst)
	dst = BeginFrame(dst)
	dst = AppendResponseHeader(dst, correlationID, resp.Key(), resp.GetVersion())
	dst = resp.AppendTo(dst)
	if err := FinishFrame(dst[start:], 0); err != nil {
		binary.BigEndian.PutUint32(dst[start:], 0xffffffff)
	}
	return dst
}

// AppendResponseHeader appends only the response header for key at version:
// the correlation id, and an empty tag section when the header is version 1.
// A server that streams part of a body from files frames it with BeginFrame,
// this, its own body encoding, and FinishFrame with the streamed length.
func AppendResponseHeader(dst []byte, correlationID int32, key, version int16) []byte {
	dst = AppendInt32(dst, correlationID)
	if ResponseHeaderVersion(key, version) == 1 {
		dst = append(dst, 0)
	}
	return dst
}

// ResponseHeaderSize returns the encoded size of the response header for key
// at version (without the size prefix).
func ResponseHeaderSize(key, version int16) int {
	if ResponseHeaderVersion(key, version) == 1 {
		return 5
	}
	return 4
}
