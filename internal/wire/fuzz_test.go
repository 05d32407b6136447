package wire

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Allocation bound for decoding untrusted bytes: at most allocFactor times
// the input plus allocSlack. Measured worst cases (TestDecodeAllocationBound
// with KMIRROR_LONG=1): about 32x for kmsg's decoders (a Go struct of ~64
// bytes per element whose smallest encoding is 2 bytes) and 20x for the
// mirror types.
const (
	allocFactor = 40
	allocSlack  = 64 << 10
)

// populate fills v with one element in every slice, a value behind every
// pointer and non-zero scalars, so that encodings exercise every field.
func populate(v reflect.Value, depth int) {
	if depth > 8 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		populate(v.Elem(), depth+1)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			name := v.Type().Field(i).Name
			if f := v.Field(i); f.CanSet() && name != "UnknownTags" && name != "Version" {
				populate(f, depth+1)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte("xy"))
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		populate(s.Index(0), depth+1)
		v.Set(s)
	case reflect.String:
		v.SetString("s")
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Bool:
		v.SetBool(true)
	}
}

// seedFrames returns request frames (without size prefix) for every key and
// version kmsg and this package know, each once with default fields and once
// populated.
func seedFrames() [][]byte {
	id := "seed"
	var out [][]byte
	keys := []int16{}
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		keys = append(keys, k)
	}
	for k := MinMirrorKey; k <= MaxMirrorKey; k++ {
		keys = append(keys, k)
	}
	for _, k := range keys {
		if newRequest(k) == nil {
			continue
		}
		for v := int16(0); v <= newRequest(k).MaxVersion(); v++ {
			for _, full := range []bool{false, true} {
				r := newRequest(k)
				if full {
					populate(reflect.ValueOf(r), 0)
				}
				r.SetVersion(v)
				out = append(out, AppendRequest(nil, 1, &id, r)[4:])
			}
		}
	}
	return out
}

func allocBytes(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

func checkAlloc(t testing.TB, what string, input []byte, f func()) {
	if n := allocBytes(f); n > uint64(allocFactor*len(input)+allocSlack) {
		t.Fatalf("%s: %d input bytes allocated %d bytes (bound %d*n+%d)", what, len(input), n, allocFactor, allocSlack)
	}
}

func FuzzParseRequest(f *testing.F) {
	for _, s := range seedFrames() {
		f.Add(s)
	}
	reg := fullRegistry()
	f.Fuzz(func(t *testing.T, frame []byte) {
		checkAlloc(t, "ParseRequest", frame, func() {
			h, req, err := ParseRequest(frame, reg)
			if err == nil && (req == nil || req.Key() != h.APIKey || req.GetVersion() != h.APIVersion) {
				t.Fatalf("header %+v, request %T", h, req)
			}
		})
	})
}

// TestDecodeAllocationBound is a deterministic adversary for the allocation
// bound: for every seed frame it writes a large length (in varint and int16 /
// int32 forms) at each position of the body, pads the frame with zero bytes
// that decode as minimal elements, and measures what ParseRequest allocates.
// The default run covers the first 48 body bytes of populated seeds with two
// patterns; KMIRROR_LONG=1 covers every position, pattern and seed.
func TestDecodeAllocationBound(t *testing.T) {
	long := os.Getenv("KMIRROR_LONG") == "1"
	patterns := [][]byte{{0xff, 0xff, 0x0f}, {0x7f, 0xff}}
	if long {
		patterns = append(patterns, []byte{0x00, 0x00, 0x7f, 0xff}, []byte{0xff, 0x7f})
	}
	pad := make([]byte, 8192)
	reg := fullRegistry()
	seeds := seedFrames()
	for si, seed := range seeds {
		if !long && si%2 == 0 {
			continue // default-valued seeds; the populated ones cover more fields
		}
		last := len(seed)
		if !long {
			last = min(last, 8+48)
		}
		for i := 8; i < last; i++ {
			for _, p := range patterns {
				frame := append(append([]byte{}, seed...), pad...)
				copy(frame[i:], p)
				checkAlloc(t, fmt.Sprintf("%s v%d pattern % x at %d", APIName(int16(seed[0])<<8|int16(seed[1])), int16(seed[2])<<8|int16(seed[3]), p, i), frame, func() {
					_, _, _ = ParseRequest(frame, reg)
				})
			}
		}
	}
}

// fuzzMirror is the body of each mirror message fuzz target: the input is
// decoded as the key's request and as its response; whatever decodes must
// re-encode to bytes that decode to the same value, and no input may
// allocate beyond the bound.
func fuzzMirror(f *testing.F, key int16) {
	for _, r := range sampleMirrorMessages() {
		if r.Key() == key {
			f.Add(r.AppendTo(nil))
		}
	}
	for _, r := range sampleMirrorResponses() {
		if r.Key() == key {
			f.Add(r.AppendTo(nil))
		}
	}
	f.Add(NewMirrorRequest(key).AppendTo(nil))
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, m := range []message{NewMirrorRequest(key), NewMirrorResponse(key)} {
			var err error
			checkAlloc(t, fmt.Sprintf("%T", m), in, func() { err = m.ReadFrom(in) })
			if err != nil {
				continue
			}
			again := reflect.New(reflect.TypeOf(m).Elem()).Interface().(message)
			if err := again.ReadFrom(m.AppendTo(nil)); err != nil {
				t.Fatalf("%T: re-encoded value does not decode: %v", m, err)
			}
			if !reflect.DeepEqual(m, again) {
				t.Fatalf("%T: decode/encode/decode differs:\n%+v\n%+v", m, m, again)
			}
		}
	})
}

func FuzzCreateMirror(f *testing.F)           { fuzzMirror(f, KeyCreateMirror) }
func FuzzAddTopicsToMirror(f *testing.F)      { fuzzMirror(f, KeyAddTopicsToMirror) }
func FuzzRemoveTopicsFromMirror(f *testing.F) { fuzzMirror(f, KeyRemoveTopicsFromMirror) }
func FuzzDeleteMirror(f *testing.F)           { fuzzMirror(f, KeyDeleteMirror) }
func FuzzListMirrors(f *testing.F)            { fuzzMirror(f, KeyListMirrors) }
func FuzzDescribeMirrors(f *testing.F)        { fuzzMirror(f, KeyDescribeMirrors) }
func FuzzReadMirrorStates(f *testing.F)       { fuzzMirror(f, KeyReadMirrorStates) }
func FuzzWriteMirrorStates(f *testing.F)      { fuzzMirror(f, KeyWriteMirrorStates) }
func FuzzPauseMirrorTopics(f *testing.F)      { fuzzMirror(f, KeyPauseMirrorTopics) }
func FuzzResumeMirrorTopics(f *testing.F)     { fuzzMirror(f, KeyResumeMirrorTopics) }
func FuzzReadLastMirroredEpochs(f *testing.F) { fuzzMirror(f, KeyReadLastMirroredEpochs) }

// TestWriteFuzzCorpus regenerates the committed seed corpus under
// testdata/fuzz when KMIRROR_WRITE_FUZZ_CORPUS=1; otherwise it checks that
// every committed seed is what the generator writes, so a deleted or stale
// corpus is noticed.
func TestWriteFuzzCorpus(t *testing.T) {
	corpus := map[string][][]byte{}
	// A handful of ParseRequest seeds: common client APIs at old and new
	// versions, and every mirror key (the code seeds all the rest).
	id := "corpus"
	for _, kv := range [][2]int16{{0, 3}, {0, 9}, {1, 4}, {1, 12}, {3, 0}, {3, 12}, {7, 0}, {18, 0}, {18, 3}, {19, 5}, {32, 4}} {
		r := newRequest(kv[0])
		populate(reflect.ValueOf(r), 0)
		r.SetVersion(kv[1])
		corpus["FuzzParseRequest"] = append(corpus["FuzzParseRequest"], AppendRequest(nil, 1, &id, r)[4:])
	}
	for _, r := range sampleMirrorMessages() {
		corpus["FuzzParseRequest"] = append(corpus["FuzzParseRequest"], AppendRequest(nil, 1, &id, r)[4:])
	}
	reqs, resps := sampleMirrorMessages(), sampleMirrorResponses()
	for i := range reqs {
		name := "Fuzz" + APIName(reqs[i].Key())
		corpus[name] = [][]byte{reqs[i].AppendTo(nil), resps[i].AppendTo(nil)}
	}
	write := os.Getenv("KMIRROR_WRITE_FUZZ_CORPUS") == "1"
	for target, inputs := range corpus {
		dir := filepath.Join("testdata", "fuzz", target)
		if write {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for i, in := range inputs {
			name := filepath.Join(dir, fmt.Sprintf("seed-%02d", i))
			body := "go test fuzz v1\n[]byte(" + strconv.Quote(string(in)) + ")\n"
			if write {
				if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			// The committed seed must be what the generator writes: a
			// corpus left behind by a change (a message's key or
			// schema) seeds the fuzzer with inputs it no longer means.
			got, err := os.ReadFile(name)
			if err != nil {
				t.Errorf("seed corpus %s: %v (regenerate with KMIRROR_WRITE_FUZZ_CORPUS=1)", dir, err)
			} else if string(got) != body {
				t.Errorf("seed corpus %s differs from what its generator writes (regenerate with KMIRROR_WRITE_FUZZ_CORPUS=1)", name)
			}
		}
	}
}

// Compile-time checks that the mirror types satisfy kmsg's interfaces.
var (
	_ kmsg.Request        = (*ReadMirrorStatesRequest)(nil)
	_ kmsg.Response       = (*ReadMirrorStatesResponse)(nil)
	_ kmsg.AdminRequest   = (*CreateMirrorRequest)(nil)
	_ kmsg.TimeoutRequest = (*DeleteMirrorRequest)(nil)
)
