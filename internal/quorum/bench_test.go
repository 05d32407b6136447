package quorum

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/metadata"
)

// BenchmarkProposeSingleVoter measures one metadata write end to end on a
// single voter: encode, raft append (fsync to raft.db), commit, apply, image
// swap.
func BenchmarkProposeSingleVoter(b *testing.B) {
	dir := b.TempDir()
	var q *Quorum
	for attempt := 0; q == nil && attempt < 5; attempt++ {
		addr := freeAddr(b)
		cfg := Config{NodeID: 1, Dir: dir, Voters: []Voter{{ID: 1, Addr: addr}}, ListenAddr: addr,
			Logger: slog.New(slog.DiscardHandler)}
		testTiming(&cfg)
		q, _ = Open(cfg)
	}
	if q == nil {
		b.Fatal("could not open a quorum")
	}
	defer q.Close()
	waitFor(b, 20*time.Second, "leadership", q.IsLeader)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rs := []metadata.Record{metadata.SetConfig(metadata.ConfigResource{Type: metadata.ResourceTopic, Name: "t"}, "k", fmt.Sprint(i))}
		if _, err := q.Propose(ctx, rs); err != nil {
			b.Fatal(err)
		}
	}
}
