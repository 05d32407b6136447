package server_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

func TestMain(m *testing.M) {
	testcluster.Main(m)
}

// testCtx returns a context bounded by d, cancelled when the test ends.
func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// createTopic creates a topic and fails the test on any error.
func createTopic(t testing.TB, adm *kadm.Client, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	resp, err := adm.CreateTopic(testCtx(t, 30*time.Second), partitions, 1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// value is the value of record seq of partition p of topic.
func value(topic string, p int32, seq int) string {
	return fmt.Sprintf("%s/%d/%08d", topic, p, seq)
}

// consumeExactly reads partitions 0..partitions-1 of topic from the start
// until it has want records per partition (or the context ends) and
// returns them per partition in order.
func consumeExactly(t testing.TB, cl *kgo.Client, topic string, partitions int32, want int) map[int32][]*kgo.Record {
	t.Helper()
	offsets := map[int32]kgo.Offset{}
	for p := range partitions {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets})
	defer cl.RemoveConsumePartitions(map[string][]int32{topic: keys(offsets)})
	ctx := testCtx(t, 2*time.Minute)
	got := map[int32][]*kgo.Record{}
	total := 0
	for total < int(partitions)*want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records of %s: %v", total, int(partitions)*want, topic, err)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Fatalf("fetch %s/%d: %v", topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], r)
			total++
		})
	}
	return got
}

func keys[K comparable, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// newAdmin wraps cl in an admin client.
func newAdmin(cl *kgo.Client) *kadm.Client { return kadm.NewClient(cl) }
