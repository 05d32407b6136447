package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
)

// cliResult is what one in-process run of the CLI printed and returned.
type cliResult struct {
	stdout, stderr string
	err            error
}

// runCLI runs the client commands in-process with args, stdin as standard
// input, and the output captured. Each run builds a fresh command tree, so no
// flag value leaks from one run into the next.
func runCLI(t *testing.T, stdin string, args ...string) cliResult {
	t.Helper()
	return runCLIContext(t, context.Background(), strings.NewReader(stdin), args...)
}

func runCLIContext(t *testing.T, ctx context.Context, stdin io.Reader, args ...string) cliResult {
	t.Helper()
	root := &cobra.Command{Use: "kmirror", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(newTopicCommand(), newProduceCommand(), newConsumeCommand())
	var out, errOut bytes.Buffer
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(&out)
	root.SetErr(&errOut)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	err := root.ExecuteContext(ctx)
	return cliResult{stdout: out.String(), stderr: errOut.String(), err: err}
}

// mustRun runs the CLI and fails the test if the command failed.
func mustRun(t *testing.T, stdin string, args ...string) cliResult {
	t.Helper()
	r := runCLI(t, stdin, args...)
	if r.err != nil {
		t.Fatalf("kmirror %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.err, r.stdout, r.stderr)
	}
	return r
}

// mustFail runs the CLI, requires it to fail, and returns the error text.
func mustFail(t *testing.T, stdin string, args ...string) cliResult {
	t.Helper()
	r := runCLI(t, stdin, args...)
	if r.err == nil {
		t.Fatalf("kmirror %s succeeded, want an error\nstdout:\n%s", strings.Join(args, " "), r.stdout)
	}
	return r
}

// tableRows splits aligned table output into rows of fields.
func tableRows(out string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		rows = append(rows, strings.Fields(line))
	}
	return rows
}

func decodeJSON[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("output is not the expected JSON: %v\n%s", err, s)
	}
	return v
}

func TestWriteTableAlignsColumns(t *testing.T) {
	var b bytes.Buffer
	if err := writeTable(&b, []string{"TOPIC", "PARTITIONS"}, [][]string{{"a", "1"}, {"longer-name", "12"}}); err != nil {
		t.Fatal(err)
	}
	want := "TOPIC        PARTITIONS\n" +
		"a            1\n" +
		"longer-name  12\n"
	if b.String() != want {
		t.Fatalf("table:\n%q\nwant:\n%q", b.String(), want)
	}
}

func TestTableCellEscapesLayoutBreakers(t *testing.T) {
	for in, want := range map[string]string{
		"plain":       "plain",
		"tab\there":   `tab\there`,
		"two\nlines":  `two\nlines`,
		"crlf\r\nend": `crlf\r\nend`,
	} {
		if got := tableCell(in); got != want {
			t.Errorf("tableCell(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestClientFlagsValidate(t *testing.T) {
	f := clientFlags{bootstrap: " , ", output: "yaml"}
	if _, err := f.format(); err == nil || !strings.Contains(err.Error(), "yaml") {
		t.Fatalf("format() error = %v, want one naming the bad value", err)
	}
	if _, err := f.seeds(); err == nil {
		t.Fatal("seeds() accepted an empty bootstrap list")
	}
	f.bootstrap = "a:1, b:2"
	seeds, err := f.seeds()
	if err != nil || len(seeds) != 2 || seeds[0] != "a:1" || seeds[1] != "b:2" {
		t.Fatalf("seeds() = %v, %v", seeds, err)
	}
}

func TestBrokerErrorKeepsCodeAndAddsMessage(t *testing.T) {
	err := brokerError(kerr.InvalidConfig, "retention.ms must be a number")
	if !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("lost the Kafka error: %v", err)
	}
	if !strings.Contains(err.Error(), "retention.ms must be a number") {
		t.Fatalf("lost the broker's message: %v", err)
	}
	if brokerError(nil, "x") != nil {
		t.Fatal("nil error became non-nil")
	}
}

func TestInvalidOutputFormatFails(t *testing.T) {
	r := mustFail(t, "", "topic", "list", "--bootstrap-server", "127.0.0.1:1", "-o", "yaml")
	if !strings.Contains(r.err.Error(), `invalid --output "yaml"`) {
		t.Fatalf("error = %v", r.err)
	}
}
