package server_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestSignalShutsDownCleanly: the binary stops on SIGTERM with status 0
// after a clean shutdown (the clean-shutdown marker is written), and the
// same directories start again with the same cluster id.
func TestSignalShutsDownCleanly(t *testing.T) {
	bin := testcluster.BuildBinary(t)
	dir := t.TempDir()
	port, cport := testcluster.FreePort(t), testcluster.FreePort(t)
	file := testcluster.WriteProperties(t, dir, testcluster.SingleNodeProperties(dir, port, cport))
	addr := "127.0.0.1:" + strconv.Itoa(port)

	proc := testcluster.StartProcess(t, bin, addr, "server", "--config", file)
	proc.WaitOutput("kmirror node 1 ready: cluster id ", 30*time.Second)
	mp, err := storage.ReadMetaProperties(filepath.Join(dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	proc.Signal(syscall.SIGTERM)
	if code := proc.Wait(30 * time.Second); code != 0 {
		t.Fatalf("exit status %d after SIGTERM\n%s", code, proc.Output())
	}
	if _, err := os.Stat(filepath.Join(dir, "data", storage.CleanShutdownFileName)); err != nil {
		t.Fatalf("no clean-shutdown marker after SIGTERM: %v", err)
	}

	proc = testcluster.StartProcess(t, bin, addr, "server", "--config", file)
	out := proc.WaitOutput(" ready: ", 30*time.Second)
	if !strings.Contains(out, "cluster id "+mp.ClusterID) {
		t.Fatalf("restart did not keep cluster id %s:\n%s", mp.ClusterID, out)
	}
	proc.Signal(syscall.SIGINT)
	if code := proc.Wait(30 * time.Second); code != 0 {
		t.Fatalf("exit status %d after SIGINT", code)
	}
}
