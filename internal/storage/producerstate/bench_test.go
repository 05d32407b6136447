package producerstate

import (
	"testing"

	"github.com/kmirror/kmirror/internal/record"
)

// BenchmarkClientAppend measures the leader hot path for one idempotent batch:
// FindDuplicate, NewAppend, Add, Commit, with 1000 active producers.
func BenchmarkClientAppend(b *testing.B) {
	m, err := NewManager(b.TempDir(), Options{Logger: discardLogger()})
	if err != nil {
		b.Fatal(err)
	}
	const producers = 1000
	seqs := make([]int32, producers)
	off := int64(0)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		pid := int64(i % producers)
		h := record.Header{
			BaseOffset: off, LastOffsetDelta: 9, NumRecords: 10, MaxTimestamp: 1000,
			ProducerID: pid, BaseSequence: seqs[pid],
		}
		if _, dup := m.FindDuplicate(h); dup {
			b.Fatal("unexpected duplicate")
		}
		a := m.NewAppend(OriginClient)
		if err := a.Add(h, -1, 0); err != nil {
			b.Fatal(err)
		}
		m.Commit(a)
		seqs[pid] += 10
		off += 10
	}
}
