package txn

import (
	"errors"
	"reflect"
	"testing"
)

// FuzzDecodeRecord feeds arbitrary keys and values of __transaction_state
// records (from disk or a replica) to the decoders: they must never panic,
// must fail only with ErrMalformed, and what they accept must encode back
// to something that decodes the same.
func FuzzDecodeRecord(f *testing.F) {
	for _, m := range []*Txn{
		meta(Empty, 0),
		meta(Ongoing, 3, tp("a", 0), tp("b", 7)),
		meta(PrepareAbort, 9, tp("orders", 11)),
		meta(CompleteCommit, 1),
	} {
		f.Add(EncodeKey(m.ID), EncodeValue(m))
	}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		id, err := DecodeKey(key)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("key error %v does not wrap ErrMalformed", err)
			}
			id = "fuzz"
		} else if again, err := DecodeKey(EncodeKey(id)); err != nil || again != id {
			t.Fatalf("key %q does not round-trip: %q %v", id, again, err)
		}
		m, err := DecodeValue(id, value)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("value error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if m.State == Dead {
			return
		}
		back, err := DecodeValue(id, EncodeValue(m))
		if err != nil {
			t.Fatalf("re-encoded %+v does not decode: %v", *m, err)
		}
		// Version 1's previous producer id is not written by version 0.
		m.LastProducerID = NoProducerID
		if !reflect.DeepEqual(back, m) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", *back, *m)
		}
	})
}
