package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kmirror/kmirror/pkg/mirroradmin"
)

// runMirrorCLI runs `kmirror mirror ...` in-process with fresh flag state.
func runMirrorCLI(t *testing.T, args ...string) cliResult {
	t.Helper()
	root := &cobra.Command{Use: "kmirror", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(newMirrorCommand())
	var out, errOut bytes.Buffer
	root.SetArgs(append([]string{"mirror"}, args...))
	root.SetOut(&out)
	root.SetErr(&errOut)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := root.ExecuteContext(ctx)
	return cliResult{stdout: out.String(), stderr: errOut.String(), err: err}
}

// startLoggedServer runs `kmirror server --log-level debug` in-process and
// returns its client address and everything it logs.
func startLoggedServer(t *testing.T) (string, *lockedBuffer) {
	t.Helper()
	dir := t.TempDir()
	args, addr := serverArgs(t, dir)
	root := rootForTest(newServerCommand())
	root.SetArgs(append([]string{"server", "--log-level", "debug"}, args...))
	outR, outW := io.Pipe()
	logs := &lockedBuffer{}
	root.SetOut(outW)
	root.SetErr(logs)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- root.ExecuteContext(ctx)
		outW.Close()
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("server command: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("the server did not stop")
		}
	})
	if _, err := bufio.NewReader(outR).ReadString('\n'); err != nil {
		t.Fatalf("no ready line (%v); stderr:\n%s", err, logs.String())
	}
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	return addr, logs
}

// TestMirrorCLI runs every `kmirror mirror` command against a node
// (run by `kmirror server`) with a kfake cluster as the source: tables and
// JSON, per-topic errors with a failing exit, and no secret in any output
// or in the node's debug logs.
func TestMirrorCLI(t *testing.T) {
	const secret, secret2 = "planted-sasl-pw-42", "planted-key-pw-43"
	src, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	srcAddr := strings.Join(src.ListenAddrs(), ",")
	addr, logs := startLoggedServer(t)
	var outputs []string
	run := func(args ...string) cliResult {
		t.Helper()
		r := runMirrorCLI(t, append([]string{"--bootstrap-server", addr}, args...)...)
		outputs = append(outputs, r.stdout, r.stderr)
		if r.err != nil {
			outputs = append(outputs, r.err.Error())
		}
		return r
	}
	ok := func(args ...string) cliResult {
		t.Helper()
		r := run(args...)
		if r.err != nil {
			t.Fatalf("kmirror mirror %s: %v\nstdout:\n%s", strings.Join(args, " "), r.err, r.stdout)
		}
		return r
	}
	fail := func(want string, args ...string) cliResult {
		t.Helper()
		r := run(args...)
		if r.err == nil || !strings.Contains(r.err.Error()+r.stdout, want) {
			t.Fatalf("kmirror mirror %s: err %v, stdout:\n%s\nwant a failure mentioning %q", strings.Join(args, " "), r.err, r.stdout, want)
		}
		return r
	}

	r := ok("create", "east", "--source-bootstrap", srcAddr, "--source-config", "sasl.password="+secret, "--source-config", "client.id=east")
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "MIRROR") ||
		strings.Join(strings.Fields(lines[1]), " ") != "east "+srcAddr+" created" {
		t.Fatalf("create table:\n%s", r.stdout)
	}
	file := filepath.Join(t.TempDir(), "west.properties")
	writeFile(t, file, "# the west source\nbootstrap.servers="+srcAddr+"\nssl.key.password="+secret2+"\n")
	r = ok("create", "west", "--source-config-file", file, "-o", "json")
	var created mirrorResultJSON
	if err := json.Unmarshal([]byte(r.stdout), &created); err != nil || created.Name != "west" || created.Status != "created" {
		t.Fatalf("create json %q: %v", r.stdout, err)
	}
	fail("bootstrap.server", "create", "north", "--source-bootstrap", srcAddr, "--source-config", "bootstrap.server=x:1")
	fail("--source-bootstrap is required", "create", "north")
	fail(`"east" already exists`, "create", "east", "--source-bootstrap", srcAddr)

	r = ok("list", "-o", "json")
	var ls []mirroradmin.MirrorListing
	if err := json.Unmarshal([]byte(r.stdout), &ls); err != nil || len(ls) != 2 || ls[0].Name != "east" || ls[1].Name != "west" || ls[0].SourceBootstrapServers != srcAddr {
		t.Fatalf("list json %q: %v", r.stdout, err)
	}

	r = fail("1 of 2 topics failed", "add-topics", "east", "orders", "missing")
	if !rowHas(r.stdout, "orders", "added") || !rowHas(r.stdout, "missing", "does not exist on the source cluster") {
		t.Fatalf("add-topics table:\n%s", r.stdout)
	}
	r = fail("1 of 1 topics failed", "add-topics", "east", "orders", "-o", "json")
	var outcomes []topicOutcome
	if err := json.Unmarshal([]byte(r.stdout), &outcomes); err != nil || len(outcomes) != 1 || !strings.Contains(outcomes[0].Error, `already in mirror "east"`) || outcomes[0].ID == "" {
		t.Fatalf("add-topics json %q: %v", r.stdout, err)
	}
	r = ok("pause-topics", "east", "orders")
	if !rowHas(r.stdout, "orders", "paused") {
		t.Fatalf("pause table:\n%s", r.stdout)
	}
	fail("is PAUSED", "pause-topics", "east", "orders")
	ok("resume-topics", "east", "orders")
	r = ok("describe", "east")
	if !rowHas(r.stdout, "sasl.password", hiddenValue) || !rowHas(r.stdout, "client.id", "east") ||
		!rowHas(r.stdout, "orders", "0") || !rowHas(r.stdout, "orders", "2") {
		t.Fatalf("describe table:\n%s", r.stdout)
	}
	r = ok("describe", "east", "-o", "json")
	var described mirroradmin.Mirror
	if err := json.Unmarshal([]byte(r.stdout), &described); err != nil || described.Name != "east" || len(described.Topics) != 1 || len(described.Topics[0].Partitions) != 3 {
		t.Fatalf("describe json %q: %v", r.stdout, err)
	}
	fail(`"nope"`, "describe", "nope")
	fail(`"orders" (MIRRORING)`, "delete", "east")
	fail(`mirror "nope" does not exist`, "pause-topics", "nope", "orders")
	r = ok("remove-topics", "east", "orders", "-o", "json")
	outcomes = nil
	if err := json.Unmarshal([]byte(r.stdout), &outcomes); err != nil || len(outcomes) != 1 || outcomes[0].Error != "" {
		t.Fatalf("remove json %q: %v", r.stdout, err)
	}
	r = ok("delete", "west")
	if !rowHas(r.stdout, "west", "deleted") {
		t.Fatalf("delete table:\n%s", r.stdout)
	}
	r = ok("list")
	if !rowHas(r.stdout, "east", srcAddr, "1") || strings.Contains(r.stdout, "west") {
		t.Fatalf("list table:\n%s", r.stdout)
	}

	for _, s := range append(outputs, logs.String()) {
		if strings.Contains(s, secret) || strings.Contains(s, secret2) {
			t.Fatalf("a secret was printed:\n%s", s)
		}
	}
	if !strings.Contains(logs.String(), "mirror created") {
		t.Fatal("the node's logs were not captured")
	}
}

// mirrorResultJSON decodes mirrorResult output.
type mirrorResultJSON struct {
	Name   string `json:"name"`
	Source string `json:"source_bootstrap_servers"`
	Status string `json:"status"`
}

// rowHas reports whether a line of table contains every cell.
func rowHas(table string, cells ...string) bool {
	for _, line := range strings.Split(table, "\n") {
		all := true
		for _, c := range cells {
			all = all && strings.Contains(line, c)
		}
		if all {
			return true
		}
	}
	return false
}

func TestSourceConfigsPrecedence(t *testing.T) {
	file := filepath.Join(t.TempDir(), "src.properties")
	writeFile(t, file, "bootstrap.servers=file:1\nclient.id=from-file\nsasl.mechanism=PLAIN\n")
	got, err := sourceConfigs("flag:1", []string{"client.id=from-flag"}, file)
	if err != nil {
		t.Fatal(err)
	}
	if got["bootstrap.servers"] != "flag:1" || got["client.id"] != "from-flag" || got["sasl.mechanism"] != "PLAIN" || len(got) != 3 {
		t.Fatalf("merged %v", got)
	}
	if got, err := sourceConfigs("", nil, file); err != nil || got["bootstrap.servers"] != "file:1" {
		t.Fatalf("file only: %v %v", got, err)
	}
	for _, bad := range []struct {
		bootstrap string
		pairs     []string
		file      string
		want      string
	}{
		{"", nil, "", "--source-bootstrap is required"},
		{"a:1", []string{"novalue"}, "", "key=value"},
		{"a:1", []string{"k=1", "k=2"}, "", "given twice"},
		{"a:1", nil, filepath.Join(t.TempDir(), "absent"), "--source-config-file"},
	} {
		if _, err := sourceConfigs(bad.bootstrap, bad.pairs, bad.file); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("sourceConfigs(%q, %v, %q) = %v, want %q", bad.bootstrap, bad.pairs, bad.file, err, bad.want)
		}
	}
}

// TestPrintMirror renders a description as DescribeMirrors returns it:
// secrets show as hidden in tables and null in JSON.
func TestPrintMirror(t *testing.T) {
	v := "src:9092"
	m := mirroradmin.Mirror{
		Name:    "east",
		Configs: []mirroradmin.Config{{Name: "bootstrap.servers", Value: &v}, {Name: "sasl.password", Sensitive: true}},
		Topics: []mirroradmin.MirrorTopic{
			{Name: "orders", MirrorNameConfig: "east", Partitions: []mirroradmin.PartitionStatus{
				{Partition: 0, State: mirroradmin.StateMirroring, LeaderID: 1, SourceHighWatermark: 10, DestinationLogEndOffset: 7, Lag: 3,
					LastFetch: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
				{Partition: 1, State: mirroradmin.StateFailed, LeaderID: -1, SourceHighWatermark: -1, DestinationLogEndOffset: 0, Lag: -1, LastError: "source\tdown"},
			}},
			{Name: "logs", MirrorNameConfig: "east.paused"},
		},
		Syncs: []mirroradmin.Sync{{Kind: "configs", LastError: "not yet"}},
	}
	var out bytes.Buffer
	if err := printMirror(&out, formatTable, m); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range [][]string{
		{"bootstrap.servers", "src:9092"}, {"sasl.password", hiddenValue},
		{"orders", "0", "MIRRORING", "10", "7", "3", "2026-01-02T03:04:05Z"},
		{"orders", "1", "FAILED", "-", `source\tdown`},
		{"logs", "PAUSED"},
		{"configs", "not yet"},
	} {
		if !rowHas(s, want...) {
			t.Errorf("no row with %q in:\n%s", want, s)
		}
	}
	out.Reset()
	if err := printMirror(&out, formatJSON, m); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Configs []struct {
			Name      string  `json:"name"`
			Value     *string `json:"value"`
			Sensitive bool    `json:"sensitive"`
		} `json:"configs"`
		Topics []struct {
			Partitions []struct {
				State string `json:"state"`
			} `json:"partitions"`
		} `json:"topics"`
	}
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Configs[1].Value != nil || !back.Configs[1].Sensitive || back.Topics[0].Partitions[1].State != "FAILED" {
		t.Fatalf("json:\n%s", out.String())
	}
}
