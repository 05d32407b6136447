package storage

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/record"
)

func testSegmentsParseWithKmsg(t *testing.T, codec record.Codec) {
	clk := newTestClock()
	dir := t.TempDir()
	l := openLog(t, dir, smallConfig(), Options{Now: clk.Now})
	for i := 0; i < 30; i++ {
		s := plain(3, clk.Ms()+int64(i))
		s.codec = codec
		s.pid, s.epoch, s.seq = 9, 1, int32(3*i)
		if _, err := l.AppendAsLeader(mkBatch(t, s), 4, OriginClient); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	next := int64(0)
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for len(data) > 0 {
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(data); err != nil {
				t.Fatalf("%s: kmsg cannot parse: %v", f, err)
			}
			size := int(rb.Length) + 12
			if rb.FirstOffset != next || rb.Magic != 2 || rb.PartitionLeaderEpoch != 4 || rb.ProducerID != 9 ||
				rb.ProducerEpoch != 1 || rb.FirstSequence != int32(next) || rb.NumRecords != 3 || rb.LastOffsetDelta != 2 ||
				int(rb.Attributes&7) != int(codec) {
				t.Fatalf("%s: batch %+v at expected offset %d", f, rb, next)
			}
			if got := crc32.Checksum(data[21:size], castagnoli); uint32(rb.CRC) != got {
				t.Fatalf("crc %x, computed %x", uint32(rb.CRC), got)
			}
			if binary.BigEndian.Uint64(data) != uint64(next) {
				t.Fatal("base offset bytes")
			}
			if codec == record.CodecNone {
				// Walk the records with kmsg too.
				recs := rb.Records
				for i := 0; i < 3; i++ {
					var r kmsg.Record
					if err := r.ReadFrom(recs); err != nil {
						t.Fatalf("record %d: %v", i, err)
					}
					if r.OffsetDelta != int32(i) || len(r.Value) != 64 {
						t.Fatalf("record %+v", r)
					}
					recs = recs[int(r.Length)+varintLen(int64(r.Length)):]
				}
			}
			next += 3
			data = data[size:]
		}
	}
	if next != 90 {
		t.Fatalf("parsed up to %d", next)
	}
}

func varintLen(v int64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutVarint(b[:], v)
}
