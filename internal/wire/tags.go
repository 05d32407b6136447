package wire

import "slices"

// Tag is one tagged field (KIP-482): a numeric key and its raw value bytes.
type Tag struct {
	Key   uint32
	Value []byte
}

// Tags holds the tagged fields of a flexible struct that this version of the
// code does not know. They are kept so that a message decoded and encoded
// again carries them unchanged.
//
// Invariant after decoding: keys strictly increase (the protocol requires
// ascending order; a decoder rejects anything else) and Value never aliases
// the decoded buffer.
type Tags []Tag

// Set adds or replaces the tag with key k, keeping keys sorted.
func (t *Tags) Set(k uint32, v []byte) {
	i, found := slices.BinarySearchFunc(*t, k, func(e Tag, k uint32) int {
		switch {
		case e.Key < k:
			return -1
		case e.Key > k:
			return 1
		}
		return 0
	})
	if found {
		(*t)[i].Value = v
		return
	}
	*t = slices.Insert(*t, i, Tag{Key: k, Value: v})
}

// Get returns the value of tag k.
func (t Tags) Get(k uint32) ([]byte, bool) {
	for _, e := range t {
		if e.Key == k {
			return e.Value, true
		}
	}
	return nil, false
}

// AppendTags appends the tag section: a count and then each tag in ascending
// key order. Unsorted input (possible only if built by hand) is written
// sorted without modifying t.
func AppendTags(dst []byte, t Tags) []byte {
	if len(t) == 0 {
		return append(dst, 0)
	}
	if !slices.IsSortedFunc(t, func(a, b Tag) int { return cmpUint32(a.Key, b.Key) }) {
		t = slices.SortedFunc(slices.Values(t), func(a, b Tag) int { return cmpUint32(a.Key, b.Key) })
	}
	dst = AppendUvarint(dst, uint32(len(t)))
	for _, e := range t {
		dst = AppendUvarint(dst, e.Key)
		dst = AppendUvarint(dst, uint32(len(e.Value)))
		dst = append(dst, e.Value...)
	}
	return dst
}

func cmpUint32(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// minTagSize is the fewest bytes one tag takes: a one-byte key and a one-byte
// zero length.
const minTagSize = 2

// Tags reads a tag section. Every tag is unknown to this package's messages,
// so all are returned for preservation; values are copied out of the input.
func (r *Reader) Tags() Tags {
	n := r.Uvarint()
	if r.err != nil || n == 0 {
		return nil
	}
	if int(n) > len(r.src)/minTagSize {
		r.failf("%d tags exceed the %d remaining bytes", n, len(r.src))
		return nil
	}
	// No capacity from n: the list grows with the tags actually decoded, so
	// a claimed count costs nothing until bytes back it.
	var t Tags
	for i := uint32(0); i < n; i++ {
		k := r.Uvarint()
		size := r.Uvarint()
		v := r.take(int(size), "tag value")
		if r.err != nil {
			return nil
		}
		if i > 0 && k <= t[i-1].Key {
			r.failf("tag %d follows tag %d: tags must ascend", k, t[i-1].Key)
			return nil
		}
		t = append(t, Tag{Key: k, Value: append([]byte{}, v...)})
	}
	return t
}
