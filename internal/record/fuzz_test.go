package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// fuzzLimit bounds decompression in the fuzz targets, keeping each input's
// memory small.
const fuzzLimit = 1 << 20

// FuzzNextBatch splits arbitrary bytes into batches and runs every reader on
// each one. Nothing may panic, and the splitting must account for every
// byte.
func FuzzNextBatch(f *testing.F) {
	f.Fuzz(func(t *testing.T, buf []byte) {
		rest := buf
		consumed := 0
		for len(rest) > 0 {
			batch, next, err := NextBatch(rest)
			if err != nil {
				if !errors.Is(err, ErrIncomplete) && !errors.Is(err, ErrCorrupt) {
					t.Fatalf("NextBatch error %v is neither incomplete nor corrupt", err)
				}
				if batch != nil || len(next) != len(rest) {
					t.Fatal("NextBatch consumed bytes on error")
				}
				break
			}
			h, err := ParseHeader(batch)
			if err != nil || h.Size() != len(batch) || len(batch)+len(next) != len(rest) {
				t.Fatalf("NextBatch returned %d bytes that ParseHeader reads as %+v, %v", len(batch), h, err)
			}
			consumed += len(batch)
			exerciseBatch(t, batch)
			rest = next
		}
		if consumed > len(buf) {
			t.Fatal("consumed more than the input")
		}
	})
}

// FuzzParseMirrorPIDResetValue decodes arbitrary MIRROR_PID_RESET record
// values (logs are untrusted: a mirror copies them from a source). Nothing
// may panic; what decodes re-encodes to the bytes it was read from, less
// any later version's trailing fields.
func FuzzParseMirrorPIDResetValue(f *testing.F) {
	f.Add([]byte{0, 0})
	f.Add([]byte{0, 1, 0, 3, 's', 'r', 'c'})
	f.Add([]byte{0, 2, 0, 1, 'x', 0, 0})
	f.Add([]byte{0, 1, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, value []byte) {
		v, err := ParseMirrorPIDResetValue(value)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		if enc := EncodeMirrorPIDReset(v); !bytes.HasPrefix(value, enc) {
			t.Fatalf("%x decodes as %+v, which encodes as %x", value, v, enc)
		}
		if v.Version == 0 && v.SourceClusterID != "" {
			t.Fatalf("version 0 with a source cluster id: %+v", v)
		}
	})
}

// FuzzValidateRecords treats the input as one batch. When the first byte is
// odd it first repairs the length, magic and CRC, so the fuzzer can reach the
// record decoding behind those checks.
func FuzzValidateRecords(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		repair, batch := in[0]&1 == 1, clone(in[1:])
		if repair && len(batch) >= HeaderSize {
			binary.BigEndian.PutUint32(batch[LengthPos:], uint32(len(batch)-logOverhead))
			batch[MagicPos] = MagicV2
			putCRC(batch)
		}
		exerciseBatch(t, batch)
	})
}

// exerciseBatch runs every reader over one batch and checks that they agree.
func exerciseBatch(t *testing.T, batch []byte) {
	t.Helper()
	orig := clone(batch)
	crcErr := ValidateCRC(batch)
	strictErr := ValidateRecords(batch, true, fuzzLimit)
	lenientErr := ValidateRecords(batch, false, fuzzLimit)
	for _, err := range []error{crcErr, strictErr, lenientErr} {
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("validation error %v does not wrap ErrCorrupt", err)
		}
	}
	if crcErr != nil && lenientErr == nil {
		t.Fatal("ValidateRecords passed a batch ValidateCRC rejects")
	}
	if strictErr == nil && lenientErr != nil {
		t.Fatalf("strict validation passed, lenient failed: %v", lenientErr)
	}
	recs, recsErr := Records(batch, fuzzLimit)
	n := 0
	eachErr := ForEachRecord(batch, fuzzLimit, func(Record) error { n++; return nil })
	if (recsErr == nil) != (eachErr == nil) || (recsErr == nil && n != len(recs)) {
		t.Fatalf("Records (%d, %v) and ForEachRecord (%d, %v) disagree", len(recs), recsErr, n, eachErr)
	}
	if lenientErr == nil && recsErr != nil {
		t.Fatalf("valid batch but Records failed: %v", recsErr)
	}
	checkScanAgrees(t, batch, recs, recsErr)
	_, _ = ControlTypeOf(batch)
	_, _ = ParseEndTxnMarker(batch)
	if !bytes.Equal(batch, orig) {
		t.Fatal("a reader modified the batch")
	}
	if lenientErr != nil {
		return
	}
	// A valid batch's records survive being rebuilt into a new batch.
	h, _ := ParseHeader(batch)
	spec := BatchSpec{
		BaseOffset: h.BaseOffset, PartitionLeaderEpoch: h.PartitionLeaderEpoch,
		ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch, BaseSequence: h.BaseSequence,
		Transactional: h.IsTransactional(), Control: h.IsControl(), Codec: h.Codec(),
		TimestampType: h.TimestampType(), BaseTimestamp: h.BaseTimestamp,
	}
	rebuilt, err := Build(spec, recs)
	if err != nil {
		t.Fatalf("rebuilding a valid batch: %v", err)
	}
	if err := ValidateRecords(rebuilt, false, 2*fuzzLimit); err != nil {
		t.Fatalf("rebuilt batch invalid: %v", err)
	}
	again, err := Records(rebuilt, 2*fuzzLimit)
	if err != nil || len(again) != len(recs) {
		t.Fatalf("rebuilt batch: %d records, %v", len(again), err)
	}
	for i := range recs {
		if !recordsEqual(again[i], recs[i]) {
			t.Fatalf("record %d changed in the rebuild: %+v -> %+v", i, recs[i], again[i])
		}
	}
}

func FuzzDecompressGzip(f *testing.F)   { fuzzDecompress(f, CodecGzip) }
func FuzzDecompressSnappy(f *testing.F) { fuzzDecompress(f, CodecSnappy) }
func FuzzDecompressLZ4(f *testing.F)    { fuzzDecompress(f, CodecLZ4) }
func FuzzDecompressZstd(f *testing.F)   { fuzzDecompress(f, CodecZstd) }

// fuzzDecompress checks that arbitrary input never panics, never yields more
// than the limit, fails only with ErrCorrupt, and that whatever decodes
// survives a round trip through our encoder.
func fuzzDecompress(f *testing.F, codec Codec) {
	f.Fuzz(func(t *testing.T, src []byte) {
		out, err := Decompress(codec, src, fuzzLimit)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if len(out) > fuzzLimit {
			t.Fatalf("%d bytes out with a limit of %d", len(out), fuzzLimit)
		}
		comp, err := Compress(codec, nil, out)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Decompress(codec, comp, fuzzLimit)
		if err != nil || !bytes.Equal(back, out) {
			t.Fatalf("round trip of %d decoded bytes: %d bytes, %v", len(out), len(back), err)
		}
	})
}
