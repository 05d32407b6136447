package record

import (
	"errors"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestParseHeaderRejects(t *testing.T) {
	good := decodeFixture(t, layoutFixture)

	if _, err := ParseHeader(good[:HeaderSize-1]); !errors.Is(err, ErrIncomplete) {
		t.Errorf("short header: err = %v, want ErrIncomplete", err)
	}
	badMagic := clone(good)
	badMagic[MagicPos] = 1
	if _, err := ParseHeader(badMagic); !errors.Is(err, ErrCorrupt) || !errors.Is(err, kerr.CorruptMessage) {
		t.Errorf("magic 1: err = %v, want ErrCorrupt and kerr.CorruptMessage", err)
	}
	shortLen := clone(good)
	putInt32(shortLen[LengthPos:], minLength-1)
	if _, err := ParseHeader(shortLen); !errors.Is(err, ErrCorrupt) {
		t.Errorf("length %d: err = %v, want ErrCorrupt", minLength-1, err)
	}
	putInt32(shortLen[LengthPos:], minLength)
	if _, err := ParseHeader(shortLen); err != nil {
		t.Errorf("length %d (empty batch) rejected: %v", minLength, err)
	}
}

func TestErrCorruptMapsToKafkaCode(t *testing.T) {
	err := ValidateCRC([]byte("short"))
	var ke *kerr.Error
	if !errors.As(err, &ke) || ke.Code != kerr.CorruptMessage.Code {
		t.Fatalf("errors.As(%v) = %v, want CORRUPT_MESSAGE", err, ke)
	}
}

func TestHeaderAccessors(t *testing.T) {
	cases := []struct {
		attrs                 int16
		codec                 Codec
		ts                    TimestampType
		txn, control, horizon bool
	}{
		{0x00, CodecNone, CreateTime, false, false, false},
		{0x01, CodecGzip, CreateTime, false, false, false},
		{0x02, CodecSnappy, CreateTime, false, false, false},
		{0x03, CodecLZ4, CreateTime, false, false, false},
		{0x0c, CodecZstd, LogAppendTime, false, false, false},
		{0x10, CodecNone, CreateTime, true, false, false},
		{0x30, CodecNone, CreateTime, true, true, false},
		{0x20, CodecNone, CreateTime, false, true, false},
		{0x40, CodecNone, CreateTime, false, false, true},
		{0x7f, Codec(7), LogAppendTime, true, true, true},
	}
	for _, c := range cases {
		h := Header{Attributes: c.attrs}
		if h.Codec() != c.codec || h.TimestampType() != c.ts || h.IsTransactional() != c.txn ||
			h.IsControl() != c.control || h.HasDeleteHorizon() != c.horizon {
			t.Errorf("attrs %#x: codec %v ts %v txn %v control %v horizon %v", c.attrs,
				h.Codec(), h.TimestampType(), h.IsTransactional(), h.IsControl(), h.HasDeleteHorizon())
		}
	}
	if (Header{ProducerID: -1}).HasProducerID() || !(Header{ProducerID: 0}).HasProducerID() {
		t.Error("HasProducerID must be ProducerID >= 0")
	}
}

func TestLastSequenceWrapsLikeKafka(t *testing.T) {
	cases := []struct {
		base, delta, want int32
	}{
		{-1, 5, -1},
		{0, 0, 0},
		{10, 4, 14},
		{math.MaxInt32, 0, math.MaxInt32},
		{math.MaxInt32, 1, 0},
		{math.MaxInt32 - 2, 4, 1},
		{math.MaxInt32 - 4, 4, math.MaxInt32},
	}
	for _, c := range cases {
		h := Header{BaseSequence: c.base, LastOffsetDelta: c.delta}
		if got := h.LastSequence(); got != c.want {
			t.Errorf("LastSequence(base %d, delta %d) = %d, want %d", c.base, c.delta, got, c.want)
		}
	}
}

func TestCodecNames(t *testing.T) {
	for _, name := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		c, err := ParseCodec(name)
		if err != nil || c.String() != name {
			t.Errorf("ParseCodec(%q) = %v, %v", name, c, err)
		}
	}
	if c, _ := ParseCodec("zstd"); c != CodecZstd {
		t.Errorf("zstd = %d, want 4", c)
	}
	for _, bad := range []string{"", "GZIP", "uncompressed", "producer", "brotli"} {
		if _, err := ParseCodec(bad); err == nil {
			t.Errorf("ParseCodec(%q) accepted", bad)
		}
	}
	if s := Codec(6).String(); s != "unknown(6)" {
		t.Errorf("Codec(6) = %q", s)
	}
	if CreateTime.String() != "CreateTime" || LogAppendTime.String() != "LogAppendTime" {
		t.Error("timestamp type names")
	}
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

func putInt32(b []byte, v int32) {
	b[0], b[1], b[2], b[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
}
