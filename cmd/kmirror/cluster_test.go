package main

import (
	"strings"
	"testing"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/twmb/franz-go/pkg/kfake"
)

// startNode starts an in-process single-node kmirror for a CLI test and
// returns its bootstrap address list. The node stops when the test ends.
func startNode(t *testing.T, opts ...testcluster.Option) string {
	t.Helper()
	return testcluster.Start(t, opts...).Bootstrap()
}

// startCluster starts franz-go's fake cluster (kfake) instead: only for the
// tests that check the CLI against a Kafka implementation other than ours.
func startCluster(t *testing.T) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(1))
	if err != nil {
		t.Fatalf("start kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return strings.Join(c.ListenAddrs(), ",")
}
