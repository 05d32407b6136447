package testcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
)

// shared holds the binary built once per test process when the package's
// TestMain runs through Main.
var shared struct {
	mu     sync.Mutex
	inMain bool
	dir    string
	bin    string
}

// Main runs a package's tests (call it from TestMain) so that BuildBinary
// builds the kmirror binary once for the whole package and removes it
// afterwards. Without it, BuildBinary builds into each test's temporary
// directory.
func Main(m *testing.M) int {
	shared.mu.Lock()
	shared.inMain = true
	shared.mu.Unlock()
	code := m.Run()
	shared.mu.Lock()
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	shared.mu.Unlock()
	return code
}

// TestHooksTag is the build tag of the test hooks that crash tests drive
// (the mirror's pause points): BuildBinary sets it, release builds do not.
const TestHooksTag = "kmirror_testhooks"

// BuildBinary builds ./cmd/kmirror of the module under test, with the test
// hooks (TestHooksTag) and, when this test binary runs with the race
// detector, with the race detector too, so that what crash tests run is
// race-checked; it returns the executable's path.
func BuildBinary(t testing.TB) string {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.bin != "" {
		return shared.bin
	}
	var dir string
	if shared.inMain {
		d, err := os.MkdirTemp("", "kmirror-bin-")
		if err != nil {
			t.Fatal(err)
		}
		shared.dir, dir = d, d
	} else {
		dir = t.TempDir()
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	bin := filepath.Join(dir, "kmirror")
	args := []string{"build", "-tags", TestHooksTag, "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "./cmd/kmirror")...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("testcluster: go build ./cmd/kmirror: %v\n%s", err, out)
	}
	if shared.inMain {
		shared.bin = bin
	}
	return bin
}

// moduleRoot returns the directory of the main module's go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside a Go module")
	}
	return filepath.Dir(gomod), nil
}

// WriteProperties writes props as a server.properties file in dir and
// returns its path.
func WriteProperties(t testing.TB, dir string, props map[string]string) string {
	t.Helper()
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(props)) {
		fmt.Fprintf(&b, "%s=%s\n", k, props[k])
	}
	path := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// SingleNodeProperties returns the properties of a single combined node
// with its client listener on port and its controller on controllerPort,
// data under dir.
func SingleNodeProperties(dir string, port, controllerPort int) map[string]string {
	ctrl := fmt.Sprintf("127.0.0.1:%d", controllerPort)
	return map[string]string{
		"node.id":                          "1",
		"process.roles":                    "broker,controller",
		"listeners":                        fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://%s", port, ctrl),
		"controller.listener.names":        "CONTROLLER",
		"controller.quorum.voters":         "1@" + ctrl,
		"log.dirs":                         filepath.Join(dir, "data"),
		"offsets.topic.replication.factor": "1",
		"transaction.state.log.replication.factor": "1",
		"transaction.state.log.min.isr":            "1",
	}
}

// Process is a kmirror binary running as a child of the test.
type Process struct {
	t    testing.TB
	cmd  *exec.Cmd
	addr string

	out  *syncBuffer
	done chan struct{}
	err  error // the Wait result, set before done closes
}

// StartProcess runs bin with args and returns once the process answers a
// Kafka ApiVersions request on addr (the node serves clients only once its
// start-up is complete). The process is killed when the test ends if it is
// still running; its output is in the test log on failure.
func StartProcess(t testing.TB, bin, addr string, args ...string) *Process {
	t.Helper()
	p := LaunchProcess(t, bin, addr, args...)
	if err := p.WaitReady(StartTimeout); err != nil {
		t.Fatalf("testcluster: %s did not become ready: %v\noutput:\n%s", filepath.Base(bin), err, p.Output())
	}
	return p
}

// LaunchProcess runs bin with args and returns at once, for nodes that can
// only finish starting together (the voters of a new quorum); WaitReady
// then waits for each. Cleanup is as for StartProcess.
func LaunchProcess(t testing.TB, bin, addr string, args ...string) *Process {
	t.Helper()
	p := &Process{t: t, addr: addr, out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("testcluster: start %s: %v", bin, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Kill()
		if strings.Contains(p.Output(), raceReport) {
			t.Errorf("testcluster: the race detector reported a data race in %s", filepath.Base(bin))
		}
		if t.Failed() {
			t.Logf("output of %s %s:\n%s", filepath.Base(bin), strings.Join(args, " "), p.Output())
		}
	})
	return p
}

// raceReport starts every report of the race detector in a child's output.
const raceReport = "WARNING: DATA RACE"

// WaitReady waits up to timeout until the process answers ApiVersions on
// its address; it returns an error if the process exits first or timeout
// passes. It is safe to call from any goroutine.
func (p *Process) WaitReady(timeout time.Duration) error { return p.waitReady(timeout) }

// waitReady polls addr with ApiVersions until it answers, the process
// exits, or timeout passes.
func (p *Process) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := ping(p.addr)
		if err == nil {
			select {
			case <-p.done:
				// What answered is not this process: another one holds
				// the port, and this one failed to bind it.
				return fmt.Errorf("process exited (%v) while %s answers for another process", p.err, p.addr)
			default:
				return nil
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("process exited: %v", p.err)
		default:
		}
		if time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-t.C:
		case <-p.done:
			t.Stop()
		}
	}
}

// ping sends one ApiVersions request to addr.
func ping(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := wire.Dial(ctx, "tcp", addr, "testcluster")
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Request(ctx, kmsg.NewPtrApiVersionsRequest())
	return err
}

// Addr returns the client address the process was started with.
func (p *Process) Addr() string { return p.addr }

// Pid returns the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Output returns what the process wrote to stdout and stderr so far.
func (p *Process) Output() string { return p.out.String() }

// Signal sends sig to the process.
func (p *Process) Signal(sig os.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.t.Fatalf("testcluster: signal %v: %v", sig, err)
	}
}

// Kill kills the process with SIGKILL (no clean shutdown at all) and waits
// for it to exit.
func (p *Process) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Wait waits up to timeout for the process to exit and returns its exit
// status (-1 when killed by a signal); it fails the test on timeout.
func (p *Process) Wait(timeout time.Duration) int {
	p.t.Helper()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		p.t.Fatalf("testcluster: process %d still running after %v\noutput:\n%s", p.Pid(), timeout, p.Output())
	}
	return p.cmd.ProcessState.ExitCode()
}

// WaitOutput waits until the process's output contains substr and returns
// the output; it fails the test if the process exits first or timeout
// passes.
func (p *Process) WaitOutput(substr string, timeout time.Duration) string {
	p.t.Helper()
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		out, changed := p.out.snapshot()
		if strings.Contains(out, substr) {
			return out
		}
		select {
		case <-changed:
		case <-p.done:
			if out := p.Output(); strings.Contains(out, substr) {
				return out
			}
			p.t.Fatalf("testcluster: process exited (%v) without printing %q\noutput:\n%s", p.err, substr, p.Output())
		case <-t.C:
			p.t.Fatalf("testcluster: no %q in the output after %v\noutput:\n%s", substr, timeout, p.Output())
		}
	}
}

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// syncBuffer is a bytes.Buffer safe for the writer goroutines of exec,
// which also tells waiters when it grows.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{} // closed and replaced on every write
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	return s.b.Write(p)
}

// snapshot returns the contents and a channel closed on the next write.
func (s *syncBuffer) snapshot() (string, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.b.String(), s.changed
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
