package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestDemo runs the built binary's `kmirror demo` twice, side by side:
// with --duration 20s it must exit 0 by itself after a completed failover
// and leave nothing in its temporary directory; stopped by SIGINT with
// --keep it must exit 0 and keep the clusters' data and logs.
func TestDemo(t *testing.T) {
	bin := testcluster.BuildBinary(t)

	t.Run("duration", func(t *testing.T) {
		t.Parallel()
		tmp := t.TempDir()
		cmd := exec.Command(bin, "demo", "--duration", "20s")
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
		var out lockedBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()
		select {
		case err := <-waited:
			if err != nil {
				t.Fatalf("kmirror demo --duration 20s: %v\n%s", err, out.String())
			}
		case <-time.After(3 * time.Minute):
			_ = cmd.Process.Kill()
			<-waited
			t.Fatalf("kmirror demo --duration 20s still runs after 3 minutes:\n%s", out.String())
		}
		if took := time.Since(start); took < 20*time.Second {
			t.Errorf("the demo stopped after %s, before --duration", took)
		}
		text := out.String()
		for _, want := range []string{
			"[6/6] B is the new primary",
			"Failover complete in",
			"every partition STOPPED",
			"one more on B: the failover's barrier",
			"the group's first record on B is offset",
			"kcat -b 127.0.0.1:",
			"kmirror mirror describe demo --bootstrap-server 127.0.0.1:",
			"Stopping both clusters...",
			"Removed " + tmp,
		} {
			if !strings.Contains(text, want) {
				t.Errorf("the output lacks %q", want)
			}
		}
		if strings.Contains(text, "NOT the record") {
			t.Errorf("the group resumed on B at a record different from A's")
		}
		if t.Failed() {
			t.Logf("output:\n%s", text)
		}
		if left, _ := os.ReadDir(tmp); len(left) > 0 {
			t.Errorf("the demo left %d entries in its temporary directory (%s)", len(left), left[0].Name())
		}
	})

	t.Run("interrupt-keep", func(t *testing.T) {
		t.Parallel()
		tmp := t.TempDir()
		cmd := exec.Command(bin, "demo", "--keep")
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr lockedBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var all lockedBuffer
		prompt := make(chan struct{})
		copied := make(chan struct{})
		go func() {
			defer close(copied)
			sc := bufio.NewScanner(stdout)
			seen := false
			for sc.Scan() {
				all.Write([]byte(sc.Text() + "\n"))
				if !seen && strings.Contains(sc.Text(), "Press Ctrl-C") {
					seen = true
					close(prompt)
				}
			}
		}()
		waited := make(chan error, 1)
		go func() {
			<-copied
			waited <- cmd.Wait()
		}()
		select {
		case <-prompt:
		case err := <-waited:
			t.Fatalf("the demo ended before its prompt: %v\n%s%s", err, all.String(), stderr.String())
		case <-time.After(3 * time.Minute):
			_ = cmd.Process.Kill()
			<-waited
			t.Fatalf("no prompt within 3 minutes:\n%s%s", all.String(), stderr.String())
		}
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-waited:
			if err != nil {
				t.Fatalf("after SIGINT the demo exited with %v\n%s%s", err, all.String(), stderr.String())
			}
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-waited
			t.Fatalf("the demo did not stop within a minute of SIGINT:\n%s", all.String())
		}
		text := all.String()
		_, kept, ok := strings.Cut(text, "Kept the clusters' data and logs in ")
		if !ok {
			t.Fatalf("no kept directory named:\n%s", text)
		}
		dir := strings.TrimSpace(strings.SplitN(kept, "\n", 2)[0])
		if filepath.Dir(dir) != tmp {
			t.Fatalf("kept %s, not under TMPDIR %s", dir, tmp)
		}
		for _, f := range []string{"a/node.log", "b/node.log", "b/data/orders-0/00000000000000000000.log"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("kept directory: %v", err)
			}
		}
	})
}
