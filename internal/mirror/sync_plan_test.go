package mirror

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/auth"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/mirror/mirrorconfig"
)

func TestClampOffset(t *testing.T) {
	src := syncedOffset{offset: 100, epoch: 7, metadata: "m"}
	cases := []struct {
		name string
		r    offsetRange
		want syncedOffset
	}{
		{"inside: kept with its epoch", offsetRange{start: 0, end: 150}, syncedOffset{100, 7, "m"}},
		{"at the end", offsetRange{start: 0, end: 100}, syncedOffset{100, 7, "m"}},
		{"destination lags: the high watermark, no epoch", offsetRange{start: 0, end: 40}, syncedOffset{40, -1, "m"}},
		{"retention passed it: the log start, no epoch", offsetRange{start: 120, end: 200}, syncedOffset{120, -1, "m"}},
		{"empty log", offsetRange{start: 0, end: 0}, syncedOffset{0, -1, "m"}},
	}
	for _, c := range cases {
		if got := clampOffset(src, c.r); got != c.want {
			t.Errorf("%s: clampOffset(%+v, %+v) = %+v, want %+v", c.name, src, c.r, got, c.want)
		}
	}
}

func TestTopicConfigChanges(t *testing.T) {
	src := map[string]string{"retention.ms": "1000", "cleanup.policy": "compact", "min.insync.replicas": "3", "segment.bytes": "nope", "no.such": "x"}
	dest := map[string]string{"retention.ms": "5", "max.message.bytes": "2000", "min.insync.replicas": "1", "mirror.name": "east", "segment.bytes": "1048576"}
	got := topicConfigChanges(src, dest)
	text := map[string]string{}
	for k, v := range got {
		if v == nil {
			text[k] = "<delete>"
		} else {
			text[k] = *v
		}
	}
	want := map[string]string{
		"retention.ms":      "1000",     // differs
		"cleanup.policy":    "compact",  // new
		"max.message.bytes": "<delete>", // gone from the source
		// min.insync.replicas and mirror.name: never synced; segment.bytes:
		// the source's value is refused here, so the destination's stays.
	}
	if fmt.Sprint(text) != fmt.Sprint(want) {
		t.Errorf("changes = %v, want %v", text, want)
	}
	if ch := topicConfigChanges(map[string]string{"retention.ms": "1"}, map[string]string{"retention.ms": "1", "mirror.name": "m"}); len(ch) != 0 {
		t.Errorf("in sync, yet changes %v", ch)
	}
}

func binding(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal string, op kmsg.ACLOperation) auth.Binding {
	return auth.Binding{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: "*", Operation: op, Permission: kmsg.ACLPermissionTypeAllow}
}

func TestACLSyncScopeAndPlan(t *testing.T) {
	cfg, err := mirrorconfig.Parse(map[string]string{mirrorconfig.BootstrapServers: "a:1", mirrorconfig.Groups: "app-.*",
		mirrorconfig.ACLPrincipalsExclude: "User:admin"})
	if err != nil {
		t.Fatal(err)
	}
	topic, group := kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup
	lit, pre := kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed
	read := kmsg.ACLOperationRead
	topics := []string{"orders", "payments"}
	scope := map[auth.Binding]bool{
		binding(topic, "orders", lit, "User:alice", read):                                                 true,
		binding(topic, "ord", pre, "User:alice", read):                                                    true,
		binding(topic, "logs", lit, "User:alice", read):                                                   false, // not mirrored (or paused, removed)
		binding(topic, "lo", pre, "User:alice", read):                                                     false,
		binding(topic, "*", lit, "User:alice", read):                                                      false, // the wildcard
		binding(topic, "orders", lit, "User:admin", read):                                                 false, // principal excluded
		binding(group, "app-1", lit, "User:alice", read):                                                  true,
		binding(group, "other", lit, "User:alice", read):                                                  false,
		binding(kmsg.ACLResourceTypeCluster, "kafka-cluster", lit, "User:alice", kmsg.ACLOperationAlter):  false,
		binding(kmsg.ACLResourceTypeTransactionalId, "pay-tx", lit, "User:alice", kmsg.ACLOperationWrite): true,
		binding(kmsg.ACLResourceTypeTransactionalId, "pay-", pre, "User:alice", kmsg.ACLOperationWrite):   true,
		binding(kmsg.ACLResourceTypeTransactionalId, "*", lit, "User:alice", kmsg.ACLOperationWrite):      false,
		binding(kmsg.ACLResourceTypeTransactionalId, "pay-tx", lit, "User:admin", kmsg.ACLOperationWrite): false,
	}
	for b, want := range scope {
		if got := aclInScope(cfg, topics, b); got != want {
			t.Errorf("aclInScope(%s) = %v, want %v", b, got, want)
		}
	}

	ordersRead := binding(topic, "orders", lit, "User:alice", read)
	ordersWrite := binding(topic, "orders", lit, "User:alice", kmsg.ACLOperationWrite)
	goneSynced := binding(topic, "payments", lit, "User:bob", read)
	goneOperator := binding(topic, "payments", lit, "User:carol", read)
	goneOutOfScope := binding(topic, "logs", lit, "User:bob", read) // synced while logs was mirrored
	otherMirrors := binding(topic, "orders", lit, "User:dave", read)
	dest := []metadata.ACLEntry{
		ordersWrite.Entry(metadata.Uuid{1}), // the operator's, also on the source
		goneSynced.Entry(metadata.Uuid(mirrorconfig.SyncedACLID("east", goneSynced))),
		goneOperator.Entry(metadata.Uuid{2}),
		goneOutOfScope.Entry(metadata.Uuid(mirrorconfig.SyncedACLID("east", goneOutOfScope))),
		otherMirrors.Entry(metadata.Uuid(mirrorconfig.SyncedACLID("west", otherMirrors))),
	}
	source := []auth.Binding{ordersRead, ordersWrite, binding(topic, "logs", lit, "User:alice", read)}
	create, remove := aclSyncPlan("east", cfg, topics, source, dest)
	if !slices.Equal(create, []auth.Binding{ordersRead}) {
		t.Errorf("create = %v, want only %s", create, ordersRead)
	}
	if !slices.Equal(remove, []auth.Binding{goneSynced}) {
		t.Errorf("remove = %v, want only %s (the operator's, another mirror's and out-of-scope ones stay)", remove, goneSynced)
	}
}

func TestSourceSecurityCause(t *testing.T) {
	wrapped := func(err error) error { return fmt.Errorf("mirror east: source cluster: %w", err) }
	for _, c := range []struct {
		err  error
		want string // a part of the cause, "" for none
	}{
		{wrapped(fmt.Errorf("Authentication failed: %w", kerr.SaslAuthenticationFailed)), "sasl.password"},
		{wrapped(kerr.TopicAuthorizationFailed), "READ and DESCRIBE"},
		{wrapped(kerr.ClusterAuthorizationFailed), "DESCRIBE on the source's cluster"},
		{wrapped(x509.UnknownAuthorityError{}), "ssl.ca.location"},
		{wrapped(x509.HostnameError{Host: "h", Certificate: &x509.Certificate{}}), "ssl.endpoint.identification.algorithm"},
		{wrapped(x509.CertificateInvalidError{Cert: &x509.Certificate{}, Reason: x509.Expired}), "expired"},
		{wrapped(tls.AlertError(42)), "client certificate"},
		{wrapped(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), "security.protocol"},
		{wrapped(kerr.NotLeaderForPartition), ""},
		{wrapped(errors.New("dial tcp: connection refused")), ""},
	} {
		got := sourceSecurityCause(c.err)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("sourceSecurityCause(%v) = %q, want one with %q", c.err, got, c.want)
		}
		if msg := explainSourceError(c.err); !strings.HasSuffix(msg, c.err.Error()) {
			t.Errorf("explainSourceError(%v) = %q drops the error", c.err, msg)
		}
	}
}

func TestSyncOwnerIsOneLeaderPerMirror(t *testing.T) {
	if got := syncOwner(metadata.EmptyImage(), "east"); got != -1 {
		t.Fatalf("owner without __mirror_state = %d", got)
	}
	// The owner partition is the state hash of (mirror, zero id, -1), so
	// different mirrors spread over the partitions.
	seen := map[int32]bool{}
	for _, m := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		p := syncOwnerPartition(m, 50)
		if p < 0 || p >= 50 {
			t.Fatalf("partition %d out of range", p)
		}
		seen[p] = true
	}
	if len(seen) < 4 {
		t.Errorf("8 mirrors share %d partitions", len(seen))
	}
}
