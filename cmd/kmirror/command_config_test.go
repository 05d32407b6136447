package main

import (
	"bytes"
	"context"
	"crypto/x509/pkix"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/kmirror/kmirror/internal/auth/authtest"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// sslAdminPassword is the admin's password on the SASL_SSL node.
const sslAdminPassword = "cli-ssl-adm-Pw-2290"

// runAnyCLI runs `kmirror args...` in-process with every client command and
// fresh flag state, bounded by timeout.
func runAnyCLI(t *testing.T, stdin string, timeout time.Duration, args ...string) cliResult {
	t.Helper()
	root := &cobra.Command{Use: "kmirror", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(newTopicCommand(), newProduceCommand(), newConsumeCommand(), newGroupCommand(),
		newMirrorCommand(), newACLCommand(), newUserCommand())
	var out, errOut bytes.Buffer
	root.SetArgs(args)
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errOut)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := root.ExecuteContext(ctx)
	r := cliResult{stdout: out.String(), stderr: errOut.String(), err: err}
	if strings.Contains(r.stdout+r.stderr, sslAdminPassword) || (err != nil && strings.Contains(err.Error(), sslAdminPassword)) {
		t.Fatalf("kmirror %s printed the password", strings.Join(args, " "))
	}
	return r
}

// TestCommandConfigOnEveryClientCommand runs every client command (topic,
// produce, consume, group, mirror, acl, user) against a node whose only
// client listener takes SASL_SSL with ACLs on, logging in with
// --command-config (security.protocol, sasl.*, ssl.ca.location); without
// it the same command cannot reach the cluster.
func TestCommandConfigOnEveryClientCommand(t *testing.T) {
	dir := t.TempDir()
	ca := authtest.NewCA(t, "cli-ca")
	files := ca.WriteFiles(t, dir, "node", pkix.Name{CommonName: "node-1"}, "127.0.0.1", "localhost")
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="` + sslAdminPassword +
		`" user_admin="` + sslAdminPassword + `";`
	bs := startNode(t,
		testcluster.Config("listener.security.protocol.map", "PLAINTEXT:SASL_SSL,CONTROLLER:PLAINTEXT"),
		testcluster.Config("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-512"),
		testcluster.Config("sasl.mechanism.inter.broker.protocol", "PLAIN"),
		testcluster.Config("listener.name.plaintext.plain.sasl.jaas.config", jaas),
		testcluster.Config("ssl.certificate.location", files.Cert),
		testcluster.Config("ssl.key.location", files.Key),
		testcluster.Config("ssl.ca.location", files.CA),
		testcluster.Config("authorizer.class.name", "kmirror.acl"),
		testcluster.Config("super.users", "User:admin"),
		testcluster.Config("offsets.topic.replication.factor", "1"),
		testcluster.Config("offsets.topic.num.partitions", "1"),
	)
	cc := filepath.Join(dir, "admin.properties")
	props := "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n" +
		`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="` + sslAdminPassword + `";` + "\n" +
		"ssl.ca.location=" + files.CA + "\n"
	if err := os.WriteFile(cc, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	conn := []string{"--bootstrap-server", bs, "--command-config", cc}
	ok := func(stdin string, args ...string) string {
		t.Helper()
		r := runAnyCLI(t, stdin, time.Minute, append(args, conn...)...)
		if r.err != nil {
			t.Fatalf("kmirror %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.err, r.stdout, r.stderr)
		}
		return r.stdout
	}

	ok("", "topic", "create", "orders", "--partitions", "1", "--replication-factor", "1")
	var topics []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal([]byte(ok("", "topic", "list", "-o", "json")), &topics); err != nil ||
		!slices.ContainsFunc(topics, func(x struct {
			Name string `json:"name"`
		}) bool {
			return x.Name == "orders"
		}) {
		t.Fatalf("topic list: %+v %v", topics, err)
	}
	ok("first\nsecond\n", "produce", "orders")
	if got := ok("", "consume", "orders", "--from-beginning", "--max-messages", "2"); got != "first\nsecond\n" {
		t.Fatalf("consume printed %q", got)
	}
	ok("", "group", "list")
	ok("", "mirror", "list")
	ok("", "acl", "list")
	ok("", "user", "list")

	// Without --command-config the cluster does not answer a client that
	// speaks neither TLS nor SASL.
	r := runAnyCLI(t, "", time.Minute, "topic", "list", "--bootstrap-server", bs, "--timeout", "3s")
	if r.err == nil {
		t.Fatalf("topic list without --command-config succeeded:\n%s", r.stdout)
	}
	t.Logf("topic list without --command-config: %v", r.err)
	r = runAnyCLI(t, "", time.Minute, "mirror", "list", "--bootstrap-server", bs, "--timeout", "3s")
	if r.err == nil {
		t.Fatalf("mirror list without --command-config succeeded:\n%s", r.stdout)
	}
	// A properties file naming an unknown protocol is refused before
	// connecting.
	bad := filepath.Join(dir, "bad.properties")
	if err := os.WriteFile(bad, []byte("security.protocol=SASL_CARRIER_PIGEON\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runAnyCLI(t, "", time.Minute, "group", "list", "--bootstrap-server", bs, "--command-config", bad)
	if r.err == nil || !strings.Contains(r.err.Error(), "security.protocol") {
		t.Fatalf("an unknown security.protocol: %v", r.err)
	}
}
