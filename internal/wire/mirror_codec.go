package wire

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Minimum wire sizes of the primitives, used to bound array counts before
// allocating (see Reader.CompactArrayLen).
const (
	minString = 1  // compact string: a one-byte length
	minUUID   = 16 // raw
	minTags   = 1  // an empty tag section: one zero byte
)

// readArray reads a non-nullable compact array whose elements take at least
// minSize bytes each. An empty array decodes as nil; a null array is
// malformed.
func readArray[T any](r *Reader, minSize int, read func(*Reader, *T)) []T {
	if r.err != nil {
		return nil
	}
	n := r.CompactArrayLen(minSize)
	if r.err != nil {
		return nil
	}
	if n < 0 {
		r.failf("null array where a value is required")
		return nil
	}
	if n == 0 {
		return nil
	}
	out := make([]T, n)
	for i := range out {
		read(r, &out[i])
		if r.err != nil {
			return nil
		}
	}
	return out
}

// appendArray appends s as a non-nullable compact array (nil is empty).
func appendArray[T any](dst []byte, s []T, app func([]byte, *T) []byte) []byte {
	dst = AppendCompactArrayLen(dst, len(s))
	for i := range s {
		dst = app(dst, &s[i])
	}
	return dst
}

// checkVersion rejects versions other than 0, the only version of every
// mirror message so far.
func checkVersion(key, version int16) error {
	if version != 0 {
		return fmt.Errorf("%s v%d: %w", APIName(key), version, kerr.UnsupportedVersion)
	}
	return nil
}

// finish returns r's outcome for a whole-message decode, naming the message.
func finish(r *Reader, key int16, what string) error {
	if err := r.Complete(); err != nil {
		return fmt.Errorf("decode %s %s: %w", APIName(key), what, err)
	}
	return nil
}
