package record

import (
	"bytes"
	"errors"
	"testing"
)

func TestNextBatchSplitsConcatenatedBatches(t *testing.T) {
	var buf []byte
	var want [][]byte
	for i := 0; i < 3; i++ {
		recs := make([]Record, i+1)
		NumberRecords(recs)
		b, err := Build(BatchSpec{BaseOffset: int64(10 * i), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, b)
		buf = append(buf, b...)
	}
	rest := buf
	for i := range want {
		var batch []byte
		var err error
		batch, rest, err = NextBatch(rest)
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		if !bytes.Equal(batch, want[i]) {
			t.Fatalf("batch %d differs", i)
		}
		if cap(batch) != len(batch) {
			t.Errorf("batch %d: cap %d > len %d lets appends clobber the next batch", i, cap(batch), len(batch))
		}
	}
	if _, _, err := NextBatch(rest); !errors.Is(err, ErrIncomplete) {
		t.Errorf("empty rest: err = %v, want ErrIncomplete", err)
	}
}

func TestNextBatchPartialIsIncompleteNotCorrupt(t *testing.T) {
	b := decodeFixture(t, layoutFixture)
	for n := 0; n < len(b); n++ {
		batch, rest, err := NextBatch(b[:n])
		if !errors.Is(err, ErrIncomplete) || errors.Is(err, ErrCorrupt) {
			t.Fatalf("prefix of %d bytes: err = %v, want ErrIncomplete only", n, err)
		}
		if batch != nil || len(rest) != n {
			t.Fatalf("prefix of %d bytes: returned batch %d bytes, rest %d", n, len(batch), len(rest))
		}
	}
	// A complete batch followed by a partial one yields the first, then ErrIncomplete.
	two := append(clone(b), b[:30]...)
	batch, rest, err := NextBatch(two)
	if err != nil || len(batch) != len(b) || len(rest) != 30 {
		t.Fatalf("complete+partial: %d, %d, %v", len(batch), len(rest), err)
	}
	if _, _, err := NextBatch(rest); !errors.Is(err, ErrIncomplete) {
		t.Fatalf("partial tail: %v", err)
	}
}

func TestNextBatchCorruptFraming(t *testing.T) {
	b := decodeFixture(t, layoutFixture)

	badMagic := clone(b)
	badMagic[MagicPos] = 1
	if _, _, err := NextBatch(badMagic); !errors.Is(err, ErrCorrupt) {
		t.Errorf("magic 1: %v", err)
	}
	// Bad magic is corruption even when the rest of the batch is missing.
	if _, _, err := NextBatch(badMagic[:MagicPos+1]); !errors.Is(err, ErrCorrupt) {
		t.Errorf("magic 1, truncated: %v", err)
	}
	for _, l := range []int32{-1, 0, minLength - 1, -1 << 31} {
		bad := clone(b)
		putInt32(bad[LengthPos:], l)
		if _, _, err := NextBatch(bad[:logOverhead]); !errors.Is(err, ErrCorrupt) {
			t.Errorf("length %d: %v", l, err)
		}
	}
	// A length pointing past the buffer is only incomplete.
	big := clone(b)
	putInt32(big[LengthPos:], 1<<30)
	if _, _, err := NextBatch(big); !errors.Is(err, ErrIncomplete) {
		t.Errorf("huge length: %v", err)
	}
}
