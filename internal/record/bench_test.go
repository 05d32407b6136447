package record

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchRecords returns n records with 1 KiB values of mildly compressible
// data and 16-byte keys, like typical event payloads.
func benchRecords(n int) []Record {
	r := rand.New(rand.NewPCG(5, 6))
	recs := make([]Record, n)
	for i := range recs {
		v := make([]byte, 1024)
		for j := range v {
			v[j] = "abcdefghijklmnop"[r.IntN(16)]
		}
		recs[i] = Record{TimestampDelta: int64(i), Key: []byte(fmt.Sprintf("key-%012d", i)), Value: v}
	}
	NumberRecords(recs)
	return recs
}

func benchBatch(b *testing.B, n int, codec Codec) []byte {
	batch, err := Build(BatchSpec{ProducerID: 1, ProducerEpoch: 0, BaseSequence: 0, Codec: codec, BaseTimestamp: 1700000000000}, benchRecords(n))
	if err != nil {
		b.Fatal(err)
	}
	return batch
}

func BenchmarkParseHeader(b *testing.B) {
	batch := benchBatch(b, 1, CodecNone)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseHeader(batch); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidateCRC(b *testing.B) {
	for _, size := range []int{16 << 10, 1 << 20} {
		batch := benchBatch(b, size/1050, CodecNone)
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			for b.Loop() {
				if err := ValidateCRC(batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkForEachRecord1KiB(b *testing.B) {
	for _, c := range allCodecs {
		batch := benchBatch(b, 1000, c)
		raw := 0
		for _, r := range benchRecords(1000) {
			raw += recordSize(&r)
		}
		b.Run(c.String(), func(b *testing.B) {
			b.SetBytes(int64(raw))
			b.ReportAllocs()
			for b.Loop() {
				n := 0
				if err := ForEachRecord(batch, 0, func(Record) error { n++; return nil }); err != nil || n != 1000 {
					b.Fatal(n, err)
				}
			}
		})
	}
}

// BenchmarkScanRecords1KiB is BenchmarkForEachRecord1KiB for the
// allocation-free walk a leader's validation uses.
func BenchmarkScanRecords1KiB(b *testing.B) {
	for _, c := range allCodecs {
		batch := benchBatch(b, 1000, c)
		raw := 0
		for _, r := range benchRecords(1000) {
			raw += recordSize(&r)
		}
		b.Run(c.String(), func(b *testing.B) {
			b.SetBytes(int64(raw))
			b.ReportAllocs()
			for b.Loop() {
				n := 0
				if err := ScanRecords(batch, 0, func(RecordMeta) error { n++; return nil }); err != nil || n != 1000 {
					b.Fatal(n, err)
				}
			}
		})
	}
}

func BenchmarkValidateRecords(b *testing.B) {
	for _, c := range allCodecs {
		batch := benchBatch(b, 1000, c)
		b.Run(c.String(), func(b *testing.B) {
			b.SetBytes(1000 * 1050)
			b.ReportAllocs()
			for b.Loop() {
				if err := ValidateRecords(batch, true, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkBuild(b *testing.B) {
	recs := benchRecords(100)
	for _, c := range allCodecs {
		b.Run(c.String(), func(b *testing.B) {
			b.SetBytes(100 * 1050)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Build(BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Codec: c}, recs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
