package testcluster

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestReadStoppedReplica: the bytes read from a stopped node's files are the
// bytes its running replica served, and a torn tail (what a crash leaves)
// fails the test instead of being compared after recovery cut it off.
func TestReadStoppedReplica(t *testing.T) {
	c := Start(t)
	ctx := ctxFor(t, time.Minute)
	if _, err := c.Admin(t).CreateTopic(ctx, 1, 1, nil, "s"); err != nil {
		t.Fatal(err)
	}
	p := c.Client(t, kgo.DefaultProduceTopic("s"))
	for i := range 20 {
		if err := p.ProduceSync(ctx, &kgo.Record{Value: bytes.Repeat([]byte{byte(i)}, 100)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	n := c.Node(1)
	wantStart, want := n.ReplicaLog(t, "s", 0)
	n.Stop()
	logDir := filepath.Join(n.Dir, "data")
	start, got := ReadStoppedReplica(t, logDir, "s", 0)
	if start != wantStart || !bytes.Equal(got, want) || len(got) == 0 {
		t.Fatalf("stopped replica [%d, +%d bytes), running [%d, +%d bytes)", start, len(got), wantStart, len(want))
	}

	// A torn tail: half a batch after the last whole one.
	seg := filepath.Join(logDir, "s-0", "00000000000000000000.log")
	f, err := os.OpenFile(seg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(want[:30]); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ft := &fatalRecorder{TB: t}
	func() {
		defer func() { _ = recover() }()
		ReadStoppedReplica(ft, logDir, "s", 0)
	}()
	if !ft.failed {
		t.Fatal("a torn tail went unnoticed")
	}
}

// fatalRecorder records a Fatalf instead of ending the test; Fatalf panics
// to stop the helper as FailNow would.
type fatalRecorder struct {
	testing.TB
	failed bool
}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.failed = true
	panic("fatal")
}

func (f *fatalRecorder) Fatal(args ...any) {
	f.failed = true
	panic("fatal")
}

// TestWaitReadyNoticesAStolenPort: when what answers on the address is not
// the process (it failed to bind a port another process holds and exited),
// WaitReady fails instead of reporting another node as ready.
func TestWaitReadyNoticesAStolenPort(t *testing.T) {
	other := Start(t) // a Kafka listener that is not the child
	p := LaunchProcess(t, "/bin/sh", other.Node(1).Addr(), "-c", "echo 'bind: address already in use'; exit 1")
	if code := p.Wait(10 * time.Second); code != 1 {
		t.Fatalf("exit status %d", code)
	}
	if err := p.WaitReady(5 * time.Second); err == nil {
		t.Fatal("WaitReady took another process's listener for the child's")
	}
}
