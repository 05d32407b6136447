package mirror_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/internal/wire"
)

// TestThrottle caps the mirror fetchers with
// mirror.replication.throttled.rate: copying 1 MiB at 256 KiB/s cannot take
// less than about two seconds (the bucket starts with a second's worth, and
// a response of at most a second's worth may take it into debt before the
// fetcher waits); unthrottled it takes a fraction of a second.
func TestThrottle(t *testing.T) {
	const rate = 256 << 10
	a := startCluster(t)
	b := startCluster(t, testcluster.Config("mirror.replication.throttled.rate", itoa(rate)))
	createTopic(t, a, "slow", 2, nil)
	p := a.Client(t, kgo.DefaultProduceTopic("slow"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	rng := rand.New(rand.NewPCG(7, 8))
	for range 64 {
		v := make([]byte, 16<<10)
		for i := range v {
			v[i] = byte(rng.Uint32())
		}
		if err := p.ProduceSync(ctxFor(t), &kgo.Record{Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	an, bn := a.Nodes()[0], b.Nodes()[0]
	start := time.Now()
	createMirror(t, b, a, "m")
	mirrorTopics(t, b, opAdd, "m", "slow")
	waitStates(t, b, "m", "slow", 2, wire.MirrorStateMirroring)
	waitIdentical(t, an, bn, "slow", 2)
	took := time.Since(start)
	total := 64 * (16 << 10)
	if min := time.Duration(float64(total-2*rate) / rate * float64(time.Second)); took < min*9/10 {
		t.Fatalf("copied %d bytes in %v at a cap of %d B/s; at least %v expected", total, took, rate, min)
	}
	t.Logf("copied %d KiB in %v under a cap of %d KiB/s", total>>10, took.Round(time.Millisecond), rate>>10)
}
