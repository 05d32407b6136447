package main

import (
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kfake"
	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair: the test reads the master, the
// command writes to the slave as to a terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Fatalf("pty number: %v", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatalf("open pty slave: %v", err)
	}
	return m, s
}

// TestMirrorWatchOnTerminal runs describe --watch with a pseudo-terminal as
// its output: the command sees a terminal and redraws the table in place,
// so that the screen — the master's bytes applied as a terminal would — holds
// exactly one, current frame, which follows records produced on the source.
func TestMirrorWatchOnTerminal(t *testing.T) {
	t.Setenv("TERM", "xterm")
	src, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	srcAddr := strings.Join(src.ListenAddrs(), ",")
	dst := quickMirrorNode(t)
	produceN(t, srcAddr, "orders", 100)
	for _, args := range [][]string{
		{"create", "east", "--source-bootstrap", srcAddr},
		{"add-topics", "east", "orders", "--wait", "--interval", "100ms"},
	} {
		if r := runMirrorCLI(t, append([]string{"--bootstrap-server", dst}, args...)...); r.err != nil {
			t.Fatalf("kmirror mirror %s: %v", strings.Join(args, " "), r.err)
		}
	}

	master, slave := openPTY(t)
	var raw lockedBuffer
	wrote := make(chan struct{}, 1)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		buf := make([]byte, 32<<10)
		for {
			n, err := master.Read(buf)
			if n > 0 {
				raw.Write(buf[:n])
				select {
				case wrote <- struct{}{}:
				default:
				}
			}
			if err != nil {
				return // EIO once the slave is closed
			}
		}
	}()
	root := &cobra.Command{Use: "kmirror", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(newMirrorCommand())
	root.SetArgs([]string{"mirror", "--bootstrap-server", dst, "describe", "east", "--watch", "--interval", "100ms"})
	root.SetOut(slave)
	root.SetErr(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("describe --watch ended with %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("describe --watch did not stop")
		}
		slave.Close()
		<-readDone
		master.Close()
	}()

	// screenWith polls the emulated screen until it shows a frame with the
	// given total log end and both partitions MIRRORING.
	screenWith := func(logEnd int64) []string {
		t.Helper()
		deadline := time.After(time.Minute)
		for {
			screen := terminal(t, raw.String())
			f := parseFrame(screen)
			if allStates(f, "MIRRORING", 2) && f.logEnd == logEnd {
				return screen
			}
			select {
			case <-wrote:
			case <-deadline:
				t.Fatalf("the terminal never showed %d records mirrored; it shows:\n%s", logEnd, strings.Join(screen, "\n"))
			}
		}
	}
	first := screenWith(100)
	produceN(t, srcAddr, "orders", 50)
	second := screenWith(150)

	for _, screen := range [][]string{first, second} {
		headers := 0
		for _, l := range screen {
			if strings.HasPrefix(l, "Mirror east at ") {
				headers++
			}
		}
		if headers != 1 {
			t.Fatalf("the screen holds %d frames, want one redrawn in place:\n%s", headers, strings.Join(screen, "\n"))
		}
		if !strings.HasPrefix(parseFrame(screen).summary, "2/2 partitions mirroring") {
			t.Fatalf("no summary line on the screen:\n%s", strings.Join(screen, "\n"))
		}
	}
	if n := strings.Count(raw.String(), ansiHome); n < 2 {
		t.Fatalf("%d redraws on the terminal, want several", n)
	}
	if strings.Contains(raw.String(), "\n\nMirror east at") {
		t.Fatal("frames were appended as off a terminal")
	}
}
