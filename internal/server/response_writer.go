package server

import (
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
)

// maxKeptBuffer is the largest encoding buffer a connection keeps between
// responses; a larger one (a big Metadata or a copied Fetch) is dropped so
// that idle connections do not pin memory.
const maxKeptBuffer = 1 << 20

// responseWriter writes response frames to one connection in order. It
// reuses its encoding buffer and iovec slice between responses.
type responseWriter struct {
	nc  net.Conn
	buf []byte
	vec net.Buffers
}

// write sends resp as the answer to correlationID. A *wire.StreamResponse is
// always released, also when writing fails. An error leaves the stream in an
// unknown state: the connection must be closed.
func (w *responseWriter) write(correlationID int32, resp wire.Response) error {
	switch r := resp.(type) {
	case *wire.StreamResponse:
		defer r.Done()
		return w.writeStream(correlationID, r)
	case kmsg.Response:
		w.buf = wire.AppendResponse(w.buf[:0], correlationID, r)
		_, err := w.nc.Write(w.buf)
		w.trim()
		return err
	default:
		return fmt.Errorf("response of type %T cannot be sent", resp)
	}
}

// writeStream writes the frame prefix and header, then the parts in order:
// runs of byte parts with one vectored write, file ranges with sendFile.
func (w *responseWriter) writeStream(correlationID int32, s *wire.StreamResponse) error {
	w.buf = wire.BeginFrame(w.buf[:0])
	w.buf = wire.AppendResponseHeader(w.buf, correlationID, s.APIKey, s.Version)
	if err := wire.FinishFrame(w.buf, s.Size()); err != nil {
		return fmt.Errorf("frame %s response: %w", wire.APIName(s.APIKey), err)
	}
	w.vec = append(w.vec[:0], w.buf)
	defer func() {
		// Drop references to the parts' memory before the next response.
		clear(w.vec[:cap(w.vec)])
		w.vec = w.vec[:0]
		w.trim()
	}()
	flush := func() error {
		if len(w.vec) == 0 {
			return nil
		}
		bufs := w.vec // WriteTo consumes its receiver, not w.vec
		_, err := bufs.WriteTo(w.nc)
		w.vec = w.vec[:0]
		return err
	}
	for _, p := range s.Parts {
		if p.File == nil {
			if len(p.Bytes) > 0 {
				w.vec = append(w.vec, p.Bytes)
			}
			continue
		}
		if p.Len <= 0 {
			continue
		}
		if err := flush(); err != nil {
			return err
		}
		if err := sendFile(w.nc, p.File, p.Pos, p.Len); err != nil {
			return fmt.Errorf("send %s [%d, %d): %w", p.File.Name(), p.Pos, p.Pos+p.Len, err)
		}
	}
	return flush()
}

// writeRaw sends b as one bare size-prefixed frame, without a response
// header: the SASL tokens of the legacy (SaslHandshake v0) framing.
func (w *responseWriter) writeRaw(b []byte) error {
	w.buf = wire.BeginFrame(w.buf[:0])
	w.buf = append(w.buf, b...)
	if err := wire.FinishFrame(w.buf, 0); err != nil {
		return err
	}
	_, err := w.nc.Write(w.buf)
	w.trim()
	return err
}

func (w *responseWriter) trim() {
	if cap(w.buf) > maxKeptBuffer {
		w.buf = nil
	}
}

// copiedFileBytes counts the file bytes sent by copyFile rather than by
// sendfile: zero for plaintext listeners on Linux, which the tests check (a
// wrapper around a connection that hid its socket would silently turn every
// Fetch into a copy through user space).
var copiedFileBytes atomic.Int64

// copyFile sends the file range [pos, pos+n) by reading it and writing it:
// the path for connections sendfile cannot write to (not a socket, TLS) and
// platforms without sendfile. A file shorter than the range is an error,
// since the frame size promised n bytes.
func copyFile(dst io.Writer, f *os.File, pos, n int64) error {
	copied, err := io.Copy(writerOnly{dst}, io.NewSectionReader(f, pos, n))
	copiedFileBytes.Add(copied)
	if err != nil {
		return err
	}
	if copied < n {
		return fmt.Errorf("file range ends after %d of %d bytes: %w", copied, n, io.ErrUnexpectedEOF)
	}
	return nil
}

// writerOnly hides a destination's ReadFrom, so io.Copy does not hand the
// section reader to a TCP connection's own copy path.
type writerOnly struct{ io.Writer }
