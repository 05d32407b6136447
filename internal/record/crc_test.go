package record

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
)

func TestValidateCRCDetectsEveryCoveredBitFlip(t *testing.T) {
	b := decodeFixture(t, layoutFixture)
	if err := ValidateCRC(b); err != nil {
		t.Fatal(err)
	}
	for i := AttributesPos; i < len(b); i++ {
		for bit := 0; bit < 8; bit++ {
			c := clone(b)
			c[i] ^= 1 << bit
			if err := ValidateCRC(c); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("flip byte %d bit %d: err = %v", i, bit, err)
			}
		}
	}
	// Flipping a CRC bit is caught too.
	c := clone(b)
	c[CRCPos] ^= 0x80
	if err := ValidateCRC(c); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("flipped crc: %v", err)
	}
}

func TestComputeCRCIsCastagnoliFromAttributes(t *testing.T) {
	b := decodeFixture(t, layoutFixture)
	want := crc32.Update(0, crc32.MakeTable(crc32.Castagnoli), b[AttributesPos:])
	if got := ComputeCRC(b); got != want || got != binary.BigEndian.Uint32(b[CRCPos:]) {
		t.Fatalf("ComputeCRC = %#x, want %#x", got, want)
	}
	if ComputeCRC(b[:AttributesPos]) != 0 {
		t.Error("ComputeCRC of a slice ending before attributes must be 0")
	}
}

func TestValidateCRCStructure(t *testing.T) {
	b := decodeFixture(t, layoutFixture)
	cases := map[string][]byte{
		"empty":          nil,
		"short":          b[:HeaderSize-1],
		"truncated":      b[:len(b)-1],
		"trailing bytes": append(clone(b), 0),
	}
	negCount := clone(b)
	putInt32(negCount[RecordsCountPos:], -1)
	putCRC(negCount)
	cases["negative count"] = negCount
	negDelta := clone(b)
	putInt32(negDelta[LastOffsetDeltaPos:], -1)
	putCRC(negDelta)
	cases["negative last offset delta"] = negDelta
	badCodec := clone(b)
	badCodec[AttributesPos+1] |= 5
	putCRC(badCodec)
	cases["codec 5"] = badCodec
	for name, c := range cases {
		if err := ValidateCRC(c); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err = %v, want ErrCorrupt", name, err)
		}
	}
}

func TestSettersKeepCRCValid(t *testing.T) {
	b := decodeFixture(t, layoutFixture)
	SetBaseOffset(b, 1<<40)
	SetPartitionLeaderEpoch(b, 99)
	if err := ValidateCRC(b); err != nil {
		t.Fatalf("after rewriting offset and epoch: %v", err)
	}
	h, _ := ParseHeader(b)
	if h.BaseOffset != 1<<40 || h.PartitionLeaderEpoch != 99 || h.CRC != 0x46b13f72 {
		t.Fatalf("header after setters: %+v", h)
	}

	SetLogAppendTime(b, 1800000000000)
	if err := ValidateRecords(b, true, 0); err != nil {
		t.Fatalf("after SetLogAppendTime: %v", err)
	}
	h, _ = ParseHeader(b)
	if h.TimestampType() != LogAppendTime || h.MaxTimestamp != 1800000000000 || !h.IsTransactional() ||
		h.BaseTimestamp != 1700000000000 {
		t.Fatalf("header after SetLogAppendTime: %+v", h)
	}
}
