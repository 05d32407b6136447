package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kmirror/kmirror/internal/testcluster"
)

const (
	cliAdminPassword = "cli-adm-Pw-6612"
	cliBobPassword   = "cli-bob-Pw-0193"
)

// securedCLINode starts a node whose client listener takes SASL PLAIN (user
// admin, a super user) and SCRAM, with ACLs on, and writes the admin's
// client properties for --command-config.
func securedCLINode(t *testing.T) (bootstrap, commandConfig string) {
	t.Helper()
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="` + cliAdminPassword +
		`" user_admin="` + cliAdminPassword + `";`
	bs := startNode(t,
		testcluster.Config("listener.security.protocol.map", "PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT"),
		testcluster.Config("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"),
		testcluster.Config("sasl.mechanism.inter.broker.protocol", "PLAIN"),
		testcluster.Config("listener.name.plaintext.plain.sasl.jaas.config", jaas),
		testcluster.Config("authorizer.class.name", "kmirror.acl"),
		testcluster.Config("super.users", "User:admin"),
	)
	path := filepath.Join(t.TempDir(), "admin.properties")
	props := "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n" +
		`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="` + cliAdminPassword + `";` + "\n"
	if err := os.WriteFile(path, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	return bs, path
}

// runSecurityCLI runs `kmirror <cmd> args...` in-process with fresh flag state.
func runSecurityCLI(t *testing.T, build func() *cobra.Command, stdin string, args ...string) cliResult {
	t.Helper()
	root := &cobra.Command{Use: "kmirror", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(build())
	var out, errOut bytes.Buffer
	root.SetArgs(args)
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errOut)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := root.ExecuteContext(ctx)
	return cliResult{stdout: out.String(), stderr: errOut.String(), err: err}
}

func mustSecurityCLI(t *testing.T, build func() *cobra.Command, stdin string, args ...string) string {
	t.Helper()
	r := runSecurityCLI(t, build, stdin, args...)
	if r.err != nil {
		t.Fatalf("kmirror %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.err, r.stdout, r.stderr)
	}
	for _, s := range []string{cliAdminPassword, cliBobPassword} {
		if strings.Contains(r.stdout+r.stderr, s) {
			t.Fatalf("kmirror %s printed a password", strings.Join(args, " "))
		}
	}
	return r.stdout
}

func TestUserCommands(t *testing.T) {
	bs, cc := securedCLINode(t)
	conn := []string{"--bootstrap-server", bs, "--command-config", cc}

	out := mustSecurityCLI(t, newUserCommand, "", append([]string{"user", "create", "bob", "--mechanism", "SCRAM-SHA-512", "--password", cliBobPassword, "--iterations", "8192"}, conn...)...)
	if !strings.Contains(out, "bob") || !strings.Contains(out, "created") {
		t.Fatalf("create output:\n%s", out)
	}
	// The password from standard input, both mechanisms.
	mustSecurityCLI(t, newUserCommand, cliBobPassword+"\n", append([]string{"user", "create", "carol"}, conn...)...)

	var listed []userCredential
	deadline := time.Now().Add(30 * time.Second)
	for len(listed) != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("user list: %+v", listed)
		}
		listed = nil
		out = mustSecurityCLI(t, newUserCommand, "", append([]string{"user", "list", "-o", "json"}, conn...)...)
		if err := json.Unmarshal([]byte(out), &listed); err != nil {
			t.Fatal(err)
		}
	}
	if listed[0] != (userCredential{User: "bob", Mechanism: "SCRAM-SHA-512", Iterations: 8192}) || listed[1].User != "carol" || listed[2].User != "carol" {
		t.Fatalf("user list %+v", listed)
	}

	// bob logs in with the password the CLI salted.
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs), kgo.SASL(scram.Auth{User: "bob", Pass: cliBobPassword}.AsSha512Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		t.Fatalf("bob cannot log in: %v", err)
	}

	mustSecurityCLI(t, newUserCommand, "", append([]string{"user", "delete", "carol"}, conn...)...)
	if r := runSecurityCLI(t, newUserCommand, "", append([]string{"user", "delete", "nobody"}, conn...)...); r.err == nil {
		t.Fatal("deleting a user without credentials succeeded")
	}
	if r := runSecurityCLI(t, newUserCommand, "", append([]string{"user", "create", "dave", "--password", "x", "--iterations", "10"}, conn...)...); r.err == nil {
		t.Fatal("10 iterations accepted")
	}
}

func TestACLCommands(t *testing.T) {
	bs, cc := securedCLINode(t)
	conn := []string{"--bootstrap-server", bs, "--command-config", cc}
	mustSecurityCLI(t, newACLCommand, "", append([]string{"acl", "add", "--allow-principal", "User:bob", "--operation", "Read,Describe", "--topic", "orders"}, conn...)...)
	mustSecurityCLI(t, newACLCommand, "", append([]string{"acl", "add", "--deny-principal", "User:*", "--deny-host", "10.1.1.1", "--operation", "All",
		"--topic", "secret.", "--resource-pattern-type", "prefixed"}, conn...)...)
	mustSecurityCLI(t, newACLCommand, "", append([]string{"acl", "add", "--allow-principal", "User:ops", "--operation", "Alter", "--cluster"}, conn...)...)

	list := func(args ...string) []aclRow {
		t.Helper()
		var rows []aclRow
		out := mustSecurityCLI(t, newACLCommand, "", append(append([]string{"acl", "list", "-o", "json"}, args...), conn...)...)
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return rows
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(list()) != 4 {
		if time.Now().After(deadline) {
			t.Fatalf("acl list: %+v", list())
		}
	}
	if rows := list("--topic", "secret.payroll", "--resource-pattern-type", "match"); len(rows) != 1 || rows[0].PatternType != "PREFIXED" || rows[0].Permission != "DENY" {
		t.Fatalf("match list %+v", rows)
	}
	if rows := list("--principal", "User:bob"); len(rows) != 2 {
		t.Fatalf("principal list %+v", rows)
	}
	out := mustSecurityCLI(t, newACLCommand, "", append([]string{"acl", "list"}, conn...)...)
	if !strings.Contains(out, "PRINCIPAL") || !strings.Contains(out, "kafka-cluster") {
		t.Fatalf("table:\n%s", out)
	}

	out = mustSecurityCLI(t, newACLCommand, "", append([]string{"acl", "remove", "--allow-principal", "User:bob", "--operation", "Read", "--topic", "orders"}, conn...)...)
	if !strings.Contains(out, "User:bob") || strings.Count(out, "\n") != 2 {
		t.Fatalf("remove output:\n%s", out)
	}
	deadline = time.Now().Add(30 * time.Second)
	for len(list()) != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("after remove: %+v", list())
		}
	}
	for _, bad := range [][]string{
		{"acl", "add", "--operation", "Read", "--topic", "t"},
		{"acl", "add", "--allow-principal", "bob", "--operation", "Read", "--topic", "t"},
		{"acl", "add", "--allow-principal", "User:bob", "--operation", "Fly", "--topic", "t"},
		{"acl", "remove"},
	} {
		if r := runSecurityCLI(t, newACLCommand, "", append(bad, conn...)...); r.err == nil {
			t.Errorf("kmirror %s succeeded", strings.Join(bad, " "))
		}
	}
}
