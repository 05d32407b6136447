package mirror_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// syncACLPasswords are the PLAIN logins of the ACL test's destination.
var syncACLPasswords = map[string]string{"admin": "acl-admin-pw", "alice": "acl-alice-pw", "erin": "acl-erin-pw"}

// syncSASLCluster starts a destination whose client (and inter-broker)
// listener takes SASL_PLAINTEXT with PLAIN users, with ACLs on and admin
// (the node's own login) a super user.
func syncSASLCluster(t *testing.T) *testcluster.Cluster {
	t.Helper()
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="` + syncACLPasswords["admin"] + `"`
	for _, u := range []string{"admin", "alice", "erin"} {
		jaas += ` user_` + u + `="` + syncACLPasswords[u] + `"`
	}
	return syncCluster(t, nil,
		testcluster.Config("listener.security.protocol.map", "PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT"),
		testcluster.Config("sasl.enabled.mechanisms", "PLAIN"),
		testcluster.Config("sasl.mechanism.inter.broker.protocol", "PLAIN"),
		testcluster.Config("listener.name.plaintext.plain.sasl.jaas.config", jaas+";"),
		testcluster.Config("authorizer.class.name", "kmirror.acl"),
		testcluster.Config("super.users", "User:admin;User:ANONYMOUS"),
	)
}

// syncLogin is the client option of a PLAIN login of the ACL test.
func syncLogin(user string) kgo.Opt {
	return kgo.SASL(plain.Auth{User: user, Pass: syncACLPasswords[user]}.AsMechanism())
}

// syncACLs lists a cluster's ACLs as "principal op permission type:pattern:name".
func syncACLs(t *testing.T, cl *kgo.Client) []string {
	t.Helper()
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	resp, err := req.RequestWith(syncCtx(t), cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("describe acls: %v %v", err, resp)
	}
	var out []string
	for _, r := range resp.Resources {
		for _, a := range r.ACLs {
			out = append(out, fmt.Sprintf("%s %s %s %s:%s:%s", a.Principal, a.Operation, a.PermissionType, r.ResourceType, r.ResourcePatternType, r.ResourceName))
		}
	}
	slices.Sort(out)
	return out
}

// syncTopicOps returns the operations a login may perform on a topic, as
// the destination's authorizer reports them in Metadata.
func syncTopicOps(t *testing.T, c *testcluster.Cluster, user, topic string) int32 {
	t.Helper()
	cl := syncClient(t, c, syncLogin(user))
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	req.IncludeTopicAuthorizedOperations = true
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(syncCtx(t), cl)
	if err != nil || len(resp.Topics) != 1 {
		t.Fatalf("metadata of %s as %s: %v", topic, user, err)
	}
	return resp.Topics[0].AuthorizedOperations
}

func hasOp(ops int32, op kmsg.ACLOperation) bool { return ops > 0 && ops&(1<<op) != 0 }

// TestSyncACLs: ACLs created on the source for the mirrored topic and for
// groups appear on the destination, whose authorizer then grants them;
// ACLs of other topics and the wildcard are not copied; an ACL deleted on
// the source is deleted here when the sync created it, and kept when an
// operator of this cluster did.
func TestSyncACLs(t *testing.T) {
	a, b := syncCluster(t, nil), syncSASLCluster(t)
	aCl, bCl := syncClient(t, a), syncClient(t, b, syncLogin("admin"))
	aAdm, bAdm := kadm.NewClient(aCl), kadm.NewClient(bCl)
	ctx := syncCtx(t)
	for _, topic := range []string{"orders", "other"} {
		if _, err := aAdm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	madm := syncMirrorAdmin(t, b, syncLogin("admin"))
	if err := madm.CreateMirror(ctx, "east", map[string]string{"bootstrap.servers": a.Bootstrap()}); err != nil {
		t.Fatal(err)
	}
	if res, err := madm.AddTopics(ctx, "east", "orders"); err != nil || res.Error() != nil {
		t.Fatalf("add topics: %v %v", err, res.Error())
	}
	syncAllMirroring(t, madm, "east")
	if hasOp(syncTopicOps(t, b, "alice", "orders"), kmsg.ACLOperationRead) {
		t.Fatal("alice may read orders on the destination before any ACL")
	}

	allow := func(principal string) *kadm.ACLBuilder {
		return kadm.NewACLs().Allow(principal).AllowHosts("*").ResourcePatternType(kadm.ACLPatternLiteral)
	}
	operatorACL := allow("User:dave").Topics("orders").Operations(kadm.OpRead)
	if _, err := bAdm.CreateACLs(ctx, operatorACL); err != nil {
		t.Fatal(err)
	}
	create := []*kadm.ACLBuilder{
		allow("User:alice").Topics("orders").Operations(kadm.OpRead),
		allow("User:alice").Groups("app-").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed),
		allow("User:alice").Topics("ord").Operations(kadm.OpDescribeConfigs).ResourcePatternType(kadm.ACLPatternPrefixed),
		allow("User:bob").Topics("other").Operations(kadm.OpWrite),
		allow("User:carol").Topics("*").Operations(kadm.OpRead),
		allow("User:dave").Topics("orders").Operations(kadm.OpRead),
		allow("User:alice").TransactionalIDs("pay-tx").Operations(kadm.OpWrite),
		allow("User:carol").TransactionalIDs("*").Operations(kadm.OpWrite),
	}
	for _, c := range create {
		if res, err := aAdm.CreateACLs(ctx, c); err != nil || res[0].Err != nil {
			t.Fatalf("create acl on the source: %v %+v", err, res)
		}
	}
	want := []string{
		"User:alice DESCRIBE_CONFIGS ALLOW TOPIC:PREFIXED:ord",
		"User:alice READ ALLOW GROUP:PREFIXED:app-",
		"User:alice READ ALLOW TOPIC:LITERAL:orders",
		"User:alice WRITE ALLOW TRANSACTIONAL_ID:LITERAL:pay-tx",
		"User:dave READ ALLOW TOPIC:LITERAL:orders",
	}
	syncPoll(t, "the source's ACLs on the destination", func() (bool, string) {
		got := syncACLs(t, bCl)
		for _, w := range want {
			if !slices.Contains(got, w) {
				return false, strings.Join(got, "; ")
			}
		}
		return true, ""
	})
	// Rounds that began after every ACL was created on the source: the
	// ones of other topics and the wildcard's are still not here.
	syncRounds(t, madm, "east", "acls")
	if got := syncACLs(t, bCl); !slices.Equal(got, want) {
		t.Fatalf("destination ACLs after the sync's rounds: %v, want %v", got, want)
	}
	// The destination's authorizer grants them.
	ops := syncTopicOps(t, b, "alice", "orders")
	if !hasOp(ops, kmsg.ACLOperationRead) || !hasOp(ops, kmsg.ACLOperationDescribeConfigs) || hasOp(ops, kmsg.ACLOperationWrite) {
		t.Fatalf("alice's operations on orders: %b", ops)
	}
	if ops := syncTopicOps(t, b, "erin", "orders"); hasOp(ops, kmsg.ACLOperationRead) {
		t.Fatalf("erin (no ACL) may read orders: %b", ops)
	}

	// Deleted on the source: the synced ACL goes, the operator's stays.
	for _, d := range []*kadm.ACLBuilder{
		allow("User:alice").Topics("orders").Operations(kadm.OpRead),
		allow("User:dave").Topics("orders").Operations(kadm.OpRead),
	} {
		if _, err := aAdm.DeleteACLs(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	syncPoll(t, "the deleted ACL gone from the destination", func() (bool, string) {
		got := syncACLs(t, bCl)
		return !slices.Contains(got, "User:alice READ ALLOW TOPIC:LITERAL:orders"), strings.Join(got, "; ")
	})
	syncRounds(t, madm, "east", "acls")
	if got := syncACLs(t, bCl); !slices.Contains(got, "User:dave READ ALLOW TOPIC:LITERAL:orders") || len(got) != 4 {
		t.Fatalf("destination ACLs after the deletions: %v", got)
	}
	if hasOp(syncTopicOps(t, b, "alice", "orders"), kmsg.ACLOperationRead) {
		t.Fatal("alice may still read orders after her ACL was deleted on the source")
	}
	syncPoll(t, "a clean acls sync round reported", func() (bool, string) {
		s := syncOf(syncDescribe(t, madm, "east"), "acls")
		return !s.LastSuccess.IsZero() && s.LastError == "", fmt.Sprintf("%+v", s)
	})
}
