// Package kafkamirror_test mirrors from Apache Kafka 4.4 (issue 13): one
// three-node Kafka cluster (RF=3, min.insync.replicas=2, SASL_SSL with
// SCRAM-SHA-512 and the StandardAuthorizer), written to by Kafka's own Java
// tools and by franz-go, is the source of kmirror destinations started per
// subtest (one in-process node; three for the fault cases). The mirror
// connects as its own SCRAM user, verifying the source's certificate
// against the generated CA, with the rights docs/mirroring.md lists.
//
// JVMs are slow to start on two cores, so TestFromKafka starts the source
// once and runs the scenarios as its subtests, in order: each uses its own
// topics (and its own destination), and the ones that stop or kill Kafka
// nodes run last and leave every node running again.
package kafkamirror_test

import (
	"os"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/testcluster"
)

func TestMain(m *testing.M) { os.Exit(testcluster.Main(m)) }

// TestFromKafka runs every scenario against one Kafka source.
func TestFromKafka(t *testing.T) {
	start := time.Now()
	src := startSource(t)
	t.Logf("Kafka source serving after %v", time.Since(start).Round(time.Millisecond))

	for _, sc := range []struct {
		name string
		run  func(*testing.T, *source)
	}{
		{"JavaAndGoProducers", testProducers},
		{"CompactedWhileMirroring", testCompacted},
		{"SourceChanges", testSourceChanges},
		{"SyncGroupsAndACLs", testSync},
		{"Refusals", testRefusals},
		{"FailoverWithOpenTransaction", testFailover},
		{"MigrationRunbook", testRunbook},
		{"SourceFaults", testSourceFaults},
	} {
		t.Run(sc.name, func(t *testing.T) {
			began := time.Now()
			sc.run(t, src.forTest(t))
			t.Logf("%s took %v", sc.name, time.Since(began).Round(time.Millisecond))
		})
	}
}

// waitTimeout bounds each wait of these tests: generous, since a JVM
// election or a cleaner pass on two busy cores can take seconds.
const waitTimeout = 90 * time.Second
