package record

import "fmt"

// Codec is a record batch compression codec, stored in the low three bits of
// the batch attributes.
type Codec int8

// The codecs of Kafka's message format v2, with their attribute values.
const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

var codecNames = [...]string{"none", "gzip", "snappy", "lz4", "zstd"}

// String returns Kafka's name of the codec (its compression.type value).
func (c Codec) String() string {
	if c.valid() {
		return codecNames[c]
	}
	return fmt.Sprintf("unknown(%d)", int8(c))
}

func (c Codec) valid() bool { return c >= 0 && int(c) < len(codecNames) }

// ParseCodec returns the codec with the given Kafka name: none, gzip, snappy,
// lz4 or zstd.
func ParseCodec(name string) (Codec, error) {
	for i, n := range codecNames {
		if n == name {
			return Codec(i), nil
		}
	}
	return 0, fmt.Errorf("unknown compression codec %q (want none, gzip, snappy, lz4 or zstd)", name)
}
