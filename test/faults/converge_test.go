package faults

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// stopAndCompare waits until the replicas of every partition of topics
// (name → partition count) converge — all in the ISR, every replica holding
// as many bytes as the others — then stops the whole cluster cleanly and
// compares each partition's replicas on disk byte for byte (batches with
// their offsets and leader epochs, from the same log start). A replica a
// crash left with a torn tail or a divergent suffix that was never
// truncated fails here. It returns the number of bytes compared.
func (c *procCluster) stopAndCompare(topics map[string]int32) int64 {
	c.t.Helper()
	replicas := map[string]map[int32][]int32{}
	for _, topic := range sortedKeys(topics) {
		parts := topics[topic]
		c.waitFullISR(topic, parts)
		replicas[topic] = map[int32][]int32{}
		for p := range parts {
			st, why := c.partition(topic, p)
			if why != "" {
				c.t.Fatalf("%s-%d: %s", topic, p, why)
			}
			replicas[topic][p] = st.Replicas
		}
		waitFor(c.t, topic+": replicas of equal size", func() (bool, string) {
			sizes := map[int32]map[int32]int64{} // node → partition → size
			for _, n := range c.brokers() {
				s, err := n.replicaSizes(topic, parts)
				if err != nil {
					return false, fmt.Sprintf("node %d: %v", n.id, err)
				}
				sizes[n.id] = s
			}
			for p := range parts {
				var want int64 = -1
				for _, id := range replicas[topic][p] {
					got, ok := sizes[id][p]
					if !ok {
						return false, fmt.Sprintf("node %d has no replica of %s-%d", id, topic, p)
					}
					if want >= 0 && got != want {
						return false, fmt.Sprintf("%s-%d: sizes %v", topic, p, sizes)
					}
					want = got
				}
			}
			return true, ""
		})
	}
	c.stopAll()
	var total int64
	for _, topic := range sortedKeys(topics) {
		for p := range topics[topic] {
			var (
				firstID    int32 = -1
				firstStart int64
				first      []byte
			)
			for _, id := range replicas[topic][p] {
				start, data := testcluster.ReadStoppedReplica(c.t, c.node(id).logDir(), topic, p)
				if firstID < 0 {
					firstID, firstStart, first = id, start, data
					total += int64(len(data))
					continue
				}
				if start != firstStart || !bytes.Equal(data, first) {
					c.t.Fatalf("%s-%d: node %d holds [%d, +%d bytes), node %d [%d, +%d bytes), differing from byte %d",
						topic, p, id, start, len(data), firstID, firstStart, len(first), firstDiff(data, first))
				}
			}
		}
	}
	c.t.Logf("replicas byte-identical: %d bytes per replica set", total)
	return total
}

// firstDiff returns the index of the first byte where a and b differ.
func firstDiff(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
