package mirrorconfig

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/auth"
)

func TestACLPrincipalFilters(t *testing.T) {
	c, err := Parse(map[string]string{BootstrapServers: "a:1", ACLPrincipals: "User:app-.*,User:ops", ACLPrincipalsExclude: "User:app-test"})
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{"User:app-1": true, "User:ops": true, "User:ops2": false, "User:app-test": false, "User:alice": false} {
		if got := c.SyncsACLPrincipal(p); got != want {
			t.Errorf("SyncsACLPrincipal(%q) = %v, want %v", p, got, want)
		}
	}
	all, err := Parse(map[string]string{BootstrapServers: "a:1"})
	if err != nil {
		t.Fatal(err)
	}
	if !all.SyncsACLPrincipal("User:anyone") {
		t.Error("the default acls.principals must sync every principal")
	}
}

func TestTopicConfigsToSync(t *testing.T) {
	kept, skipped := TopicConfigsToSync(map[string]string{
		"retention.ms": "1000", "cleanup.policy": "compact", "min.insync.replicas": "3",
		"mirror.name": "x", "no.such.config": "1", "segment.bytes": "not-a-number",
		"leader.replication.throttled.replicas": "*",
	})
	if len(kept) != 2 || kept["retention.ms"] != "1000" || kept["cleanup.policy"] != "compact" {
		t.Errorf("kept = %v", kept)
	}
	want := []string{"leader.replication.throttled.replicas", "min.insync.replicas", "mirror.name", "no.such.config", "segment.bytes"}
	if !slices.Equal(skipped, want) {
		t.Errorf("skipped = %v, want %v", skipped, want)
	}
	if ManagedTopicConfig("min.insync.replicas") || ManagedTopicConfig("no.such.config") || !ManagedTopicConfig("retention.bytes") {
		t.Error("ManagedTopicConfig disagrees with the never-synced list or the topic config table")
	}
}

func TestSyncedACLIDIsStableAndDistinct(t *testing.T) {
	b := auth.Binding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "orders", PatternType: kmsg.ACLResourcePatternTypeLiteral,
		Principal: "User:alice", Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow}
	id := SyncedACLID("east", b)
	if id != SyncedACLID("east", b) {
		t.Fatal("the id of a binding changes")
	}
	if id == ([16]byte{}) || id[6]>>4 != 8 {
		t.Errorf("id %x is not a version-8 UUID", id)
	}
	other := b
	other.Operation = kmsg.ACLOperationWrite
	seen := map[[16]byte]string{id: "base"}
	for name, x := range map[string][16]byte{
		"other mirror":    SyncedACLID("west", b),
		"other operation": SyncedACLID("east", other),
		// Length prefixes keep field boundaries: no two splits collide.
		"shifted": SyncedACLID("east", auth.Binding{ResourceType: b.ResourceType, ResourceName: "orders" + "User:alice", PatternType: b.PatternType,
			Principal: "", Host: "*", Operation: b.Operation, Permission: b.Permission}),
	} {
		if prev, dup := seen[x]; dup {
			t.Errorf("%s has the id of %s", name, prev)
		}
		seen[x] = name
	}
}
