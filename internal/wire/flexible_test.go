package wire

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

func TestVarintRoundTrip(t *testing.T) {
	for _, v := range []int32{0, 1, -1, 63, -64, 64, 300, -300, math.MaxInt32, math.MinInt32} {
		r := NewReader(AppendVarint(nil, v))
		if got := r.Varint(); got != v || r.Complete() != nil {
			t.Errorf("varint %d: got %d, err %v", v, got, r.Complete())
		}
	}
	for _, v := range []int64{0, -1, 1 << 40, math.MaxInt64, math.MinInt64} {
		r := NewReader(AppendVarlong(nil, v))
		if got := r.Varlong(); got != v || r.Complete() != nil {
			t.Errorf("varlong %d: got %d, err %v", v, got, r.Complete())
		}
	}
	for _, v := range []uint32{0, 127, 128, 16383, 16384, math.MaxUint32} {
		b := AppendUvarint(nil, v)
		r := NewReader(b)
		if got := r.Uvarint(); got != v || r.Complete() != nil {
			t.Errorf("uvarint %d (% x): got %d, err %v", v, b, got, r.Complete())
		}
	}
	// Kafka's zig-zag: -1 encodes as 1, 1 as 2.
	if b := AppendVarint(nil, -1); !bytes.Equal(b, []byte{1}) {
		t.Errorf("varint -1 = % x, want 01", b)
	}
}

func TestUvarintRejectsOverflowAndTruncation(t *testing.T) {
	for name, in := range map[string][]byte{
		"sixth byte":      {0x80, 0x80, 0x80, 0x80, 0x80, 0x01},
		"fifth too large": {0xff, 0xff, 0xff, 0xff, 0x1f},
		"truncated":       {0x80, 0x80},
		"empty":           {},
	} {
		r := NewReader(in)
		r.Uvarint()
		if !errors.Is(r.Err(), ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, r.Err())
		}
	}
}

func TestCompactStrings(t *testing.T) {
	s := "héllo"
	b := AppendCompactString(nil, s)
	b = AppendCompactNullableString(b, nil)
	b = AppendCompactNullableString(b, &s)
	b = AppendCompactString(b, "")
	r := NewReader(b)
	if got := r.CompactString(); got != s {
		t.Errorf("string = %q", got)
	}
	if got := r.CompactNullableString(); got != nil {
		t.Errorf("null string = %q", *got)
	}
	if got := r.CompactNullableString(); got == nil || *got != s {
		t.Errorf("nullable string = %v", got)
	}
	if got := r.CompactString(); got != "" {
		t.Errorf("empty string = %q", got)
	}
	if err := r.Complete(); err != nil {
		t.Fatal(err)
	}
}

func TestCompactBytesNullVersusEmpty(t *testing.T) {
	b := AppendCompactNullableBytes(nil, nil)
	b = AppendCompactNullableBytes(b, []byte{})
	b = AppendCompactBytes(b, []byte{1, 2})
	r := NewReader(b)
	if got := r.CompactNullableBytes(); got != nil {
		t.Errorf("null bytes = %v", got)
	}
	if got := r.CompactNullableBytes(); got == nil || len(got) != 0 {
		t.Errorf("empty bytes = %v (nil %v)", got, got == nil)
	}
	if got := r.CompactBytes(); !bytes.Equal(got, []byte{1, 2}) {
		t.Errorf("bytes = %v", got)
	}
	if err := r.Complete(); err != nil {
		t.Fatal(err)
	}
	r = NewReader([]byte{0})
	r.CompactBytes()
	if !errors.Is(r.Err(), ErrMalformed) {
		t.Errorf("null for non-null bytes: err = %v", r.Err())
	}
}

func TestReaderRejectsLengthsBeyondInput(t *testing.T) {
	cases := map[string]func(r *Reader){
		"string":       func(r *Reader) { r.CompactString() },
		"bytes":        func(r *Reader) { r.CompactNullableBytes() },
		"array":        func(r *Reader) { r.CompactArrayLen(1) },
		"array of 8s":  func(r *Reader) { r.CompactArrayLen(8) },
		"tags":         func(r *Reader) { r.Tags() },
		"null string":  func(r *Reader) { r.CompactString() },
		"long string":  func(r *Reader) { r.CompactString() },
		"int64":        func(r *Reader) { r.Int64() },
		"uuid":         func(r *Reader) { r.UUID() },
		"tag value":    func(r *Reader) { r.Tags() },
		"tags unorder": func(r *Reader) { r.Tags() },
	}
	inputs := map[string][]byte{
		"string":       append(AppendUvarint(nil, 11), make([]byte, 9)...), // claims 10, has 9
		"bytes":        append(AppendUvarint(nil, 1<<30), 1, 2, 3),
		"array":        append(AppendUvarint(nil, 1<<20), make([]byte, 100)...),
		"array of 8s":  append(AppendUvarint(nil, 14), make([]byte, 100)...), // 13*8 > 100
		"tags":         append(AppendUvarint(nil, 1000), make([]byte, 100)...),
		"null string":  {0},
		"long string":  append(AppendUvarint(nil, maxStringLen+2), make([]byte, maxStringLen+1)...),
		"int64":        {1, 2, 3},
		"uuid":         make([]byte, 15),
		"tag value":    {1, 0, 5, 1},
		"tags unorder": {2, 5, 0, 3, 0},
	}
	for name, f := range cases {
		r := NewReader(inputs[name])
		f(r)
		if !errors.Is(r.Err(), ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, r.Err())
		}
		// First error wins and later reads return zero values.
		if r.Int32() != 0 || r.CompactString() != "" || !errors.Is(r.Err(), ErrMalformed) {
			t.Errorf("%s: reader kept going after an error", name)
		}
	}
}

func TestCompactArrayLenBoundsCountByMinimumSize(t *testing.T) {
	b := append(AppendUvarint(nil, 5), make([]byte, 16)...) // 4 elements
	if n := NewReader(b).CompactArrayLen(4); n != 4 {
		t.Errorf("4 elements of 4 in 16 bytes: n = %d", n)
	}
	r := NewReader(b)
	if n := r.CompactArrayLen(5); n != -1 || r.Err() == nil {
		t.Errorf("4 elements of 5 in 16 bytes: n = %d err %v", n, r.Err())
	}
	if n := NewReader([]byte{0}).CompactArrayLen(1); n != -1 {
		t.Errorf("null array: n = %d", n)
	}
}

func TestTagsPreservedAndSorted(t *testing.T) {
	var tags Tags
	tags.Set(7, []byte("seven"))
	tags.Set(1, []byte("one"))
	tags.Set(7, []byte("SEVEN"))
	if len(tags) != 2 || tags[0].Key != 1 || tags[1].Key != 7 {
		t.Fatalf("tags = %+v", tags)
	}
	if v, ok := tags.Get(7); !ok || string(v) != "SEVEN" {
		t.Errorf("Get(7) = %q %v", v, ok)
	}
	src := AppendTags(nil, tags)
	r := NewReader(src)
	got := r.Tags()
	if err := r.Complete(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || string(got[0].Value) != "one" || string(got[1].Value) != "SEVEN" {
		t.Errorf("decoded tags = %+v", got)
	}
	src[len(src)-1] = 'x' // decoded values must not alias the input
	if string(got[1].Value) != "SEVEN" {
		t.Errorf("decoded tag aliases the input: %q", got[1].Value)
	}
	// A hand-built unsorted list is written sorted, without changing it.
	unsorted := Tags{{Key: 9, Value: nil}, {Key: 2, Value: []byte{1}}}
	if b := AppendTags(nil, unsorted); !bytes.Equal(b, []byte{2, 2, 1, 1, 9, 0}) {
		t.Errorf("unsorted tags encoded as % x", b)
	}
	if unsorted[0].Key != 9 {
		t.Error("AppendTags reordered its input")
	}
}

func TestCompleteRejectsTrailingBytes(t *testing.T) {
	r := NewReader([]byte{0, 0, 0, 1, 9})
	r.Int32()
	if err := r.Complete(); !errors.Is(err, ErrMalformed) {
		t.Errorf("Complete with a trailing byte = %v", err)
	}
}
