package metadata

import (
	"reflect"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to the record decoder: it must never
// panic, and whatever it accepts must survive a re-encode unchanged.
func FuzzDecode(f *testing.F) {
	for _, r := range sampleRecords() {
		f.Add(Encode(nil, r))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Decode(b)
		if err != nil {
			return
		}
		again, err := Decode(Encode(nil, r))
		if err != nil {
			t.Fatalf("re-encoded %s does not decode: %v", r.Type(), err)
		}
		if !reflect.DeepEqual(again, r) {
			t.Fatalf("%s changed through re-encoding:\n%#v\n%#v", r.Type(), r, again)
		}
	})
}

// FuzzDecodeBatch does the same for batches (raft entries).
func FuzzDecodeBatch(f *testing.F) {
	f.Add(EncodeBatch(nil, sampleRecords()))
	f.Add(EncodeBatch(nil, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		rs, err := DecodeBatch(b)
		if err != nil {
			return
		}
		again, err := DecodeBatch(EncodeBatch(nil, rs))
		if err != nil || !reflect.DeepEqual(again, rs) {
			t.Fatalf("batch changed through re-encoding: %v", err)
		}
	})
}

// FuzzReplay replays whatever decodes onto a populated image: Replay must
// never panic, and a rejected record must leave the delta unchanged.
func FuzzReplay(f *testing.F) {
	f.Add(EncodeBatch(nil, sampleRecords()))
	base, err := buildRichImage()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(EncodeBatch(nil, base.ToRecords()))
	f.Fuzz(func(t *testing.T, b []byte) {
		rs, err := DecodeBatch(b)
		if err != nil {
			return
		}
		d := NewDelta(base)
		for _, r := range rs {
			before := deltaState(d)
			if err := d.Replay(r, base.Offset()+1); err != nil {
				if after := deltaState(d); !reflect.DeepEqual(before, after) {
					t.Fatalf("rejected %s changed the delta", r.Type())
				}
			}
		}
		im := d.Apply()
		// Whatever was accepted rebuilds the same image from scratch.
		rebuilt := NewDelta(EmptyImage())
		for _, r := range im.ToRecords() {
			if err := rebuilt.Replay(r, im.Offset()); err != nil {
				t.Fatalf("ToRecords of an accepted image does not replay: %v", err)
			}
		}
		if !reflect.DeepEqual(imageBytes(rebuilt.Apply()), imageBytes(im)) {
			t.Fatal("ToRecords does not rebuild the image")
		}
	})
}
