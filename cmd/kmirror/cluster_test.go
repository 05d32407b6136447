package main

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// startCluster starts the cluster the CLI tests talk to and returns its
// bootstrap address list. The cluster is closed when the test ends.
func startCluster(t *testing.T) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(1))
	if err != nil {
		t.Fatalf("start kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return strings.Join(c.ListenAddrs(), ",")
}
