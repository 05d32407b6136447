package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// lockedBuffer is a bytes.Buffer written by the server's logger and read by
// the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serverArgs returns flags that run a single node on free loopback ports
// with data under dir.
func serverArgs(t *testing.T, dir string) ([]string, string) {
	port, cport := testcluster.FreePort(t), testcluster.FreePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	return []string{
		"--listeners", fmt.Sprintf("PLAINTEXT://%s,CONTROLLER://127.0.0.1:%d", addr, cport),
		"--override", fmt.Sprintf("controller.quorum.voters=1@127.0.0.1:%d", cport),
		"--log-dirs", filepath.Join(dir, "data"),
	}, addr
}

// TestServerCommandRunsAndStops runs `kmirror server` in-process: flags
// override the file, unknown keys are warnings, one line says it is ready,
// and ending the command's context (what the first signal does) shuts the
// node down cleanly.
func TestServerCommandRunsAndStops(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "server.properties")
	// The file's node.id and listeners lose to the flags.
	writeFile(t, file, "node.id=5\nlisteners=PLAINTEXT://127.0.0.1:1,CONTROLLER://127.0.0.1:2\nno.such.config=1\nnum.partitions=3\n")
	args, addr := serverArgs(t, dir)
	args = append([]string{"server", "--config", file, "--node-id", "1"}, args...)

	cmd := newServerCommand()
	root := rootForTest(cmd)
	root.SetArgs(args)
	outR, outW := io.Pipe()
	var errBuf lockedBuffer
	root.SetOut(outW)
	root.SetErr(&errBuf)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- root.ExecuteContext(ctx)
		outW.Close()
	}()

	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatalf("no ready line (%v); stderr:\n%s", err, errBuf.String())
	}
	if !strings.HasPrefix(line, "kmirror node 1 ready: cluster id ") || !strings.Contains(line, "PLAINTEXT://"+addr) {
		t.Fatalf("ready line %q", line)
	}
	go func() { _, _ = io.Copy(io.Discard, outR) }()

	// The node serves clients; the file's num.partitions applies.
	cl := testClient(t, addr)
	resp, err := cl.CreateTopic(ctxFor(t), -1, -1, nil, "from-file-default")
	if err != nil || resp.Err != nil || resp.NumPartitions != 3 {
		t.Fatalf("create with defaults: %+v, %v", resp, err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("server command: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not stop")
	}
	stderr := errBuf.String()
	if !strings.Contains(stderr, `unknown config \"no.such.config\"`) && !strings.Contains(stderr, `unknown config "no.such.config"`) {
		t.Errorf("no warning about the unknown key; stderr:\n%s", stderr)
	}
	if !strings.Contains(stderr, "kmirror node stopped") {
		t.Errorf("no clean stop logged; stderr:\n%s", stderr)
	}
}

// TestServerCommandRejectsBadInput: invalid values stop the start with a
// message naming the key, before anything binds or writes.
func TestServerCommandRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	base, _ := serverArgs(t, dir)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--override", "log.segment.bytes=12"}, "log.segment.bytes"},
		{[]string{"--override", "num.partitions"}, "--override"},
		{[]string{"--override", "num.partitions=zero"}, "num.partitions"},
		{[]string{"--log-level", "loud"}, "--log-level"},
		{[]string{"--cluster-id", "not-an-id"}, "cluster id"},
		{[]string{"--config", filepath.Join(dir, "missing.properties")}, "missing.properties"},
		{[]string{"--listeners", "SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0", "--override", "listener.security.protocol.map=SSL:SSL,CONTROLLER:PLAINTEXT", "--override", "inter.broker.listener.name=SSL"}, "ssl.certificate.location"},
	}
	for _, tc := range cases {
		cmd := newServerCommand()
		root := rootForTest(cmd)
		root.SetArgs(append(append([]string{"server"}, base...), tc.args...))
		var out, errOut bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&errOut)
		err := root.ExecuteContext(context.Background())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one naming %q", tc.args, err, tc.want)
		}
	}
}

// TestSampleConfigsLoad: the sample configs load without warnings, and the
// three-node sample's cluster id is a valid one.
func TestSampleConfigsLoad(t *testing.T) {
	files, err := filepath.Glob("../../config/*.properties")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("../../config/cluster/*.properties")
	files = append(files, more...)
	if len(files) != 4 {
		t.Fatalf("sample configs: %v", files)
	}
	for _, f := range files {
		cfg, warnings, err := config.Load(f, nil, nil)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if len(warnings) > 0 {
			t.Errorf("%s: warnings %v", f, warnings)
		}
		if strings.Contains(f, "cluster") && len(cfg.QuorumVoters) != 3 {
			t.Errorf("%s: %d voters", f, len(cfg.QuorumVoters))
		}
	}
}

// rootForTest returns a fresh root command holding only cmd, so tests do
// not share flag state through rootCmd.
func rootForTest(cmd *cobra.Command) *cobra.Command {
	root := &cobra.Command{Use: "kmirror", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(cmd)
	return root
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// testClient returns an admin client for addr, closed when the test ends.
func testClient(t *testing.T, addr string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}
