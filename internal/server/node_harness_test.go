package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/config"
)

// testNode is a single combined node started in-process for the tests of
// this package (the testcluster package imports this one, so these tests
// cannot use it).
type testNode struct {
	*Node
	dir    string
	props  map[string]string
	logger *slog.Logger // nil: the test log
}

// nodeProps returns the properties of a single combined node with data
// under dir, listening on the given ports.
func nodeProps(dir string, port, controllerPort int) map[string]string {
	return map[string]string{
		"node.id":                   "1",
		"process.roles":             "broker,controller",
		"listeners":                 fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", port, controllerPort),
		"controller.listener.names": "CONTROLLER",
		"controller.quorum.voters":  fmt.Sprintf("1@127.0.0.1:%d", controllerPort),
		"log.dirs":                  filepath.Join(dir, "data"),
	}
}

// startTestNode starts a single combined node on 127.0.0.1 ports chosen by
// the system, with extra properties on top of nodeProps. It is shut down
// when the test ends.
func startTestNode(t testing.TB, extra map[string]string) *testNode {
	t.Helper()
	return startTestNodeLogging(t, extra, testLogger(t))
}

// startTestNodeLogging is startTestNode with the node logging to logger.
func startTestNodeLogging(t testing.TB, extra map[string]string, logger *slog.Logger) *testNode {
	t.Helper()
	dir := t.TempDir()
	kl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	props := nodeProps(dir, kl.Addr().(*net.TCPAddr).Port, cl.Addr().(*net.TCPAddr).Port)
	for k, v := range extra {
		props[k] = v
	}
	tn := &testNode{dir: dir, props: props, logger: logger}
	tn.Node = tn.start(t, kl, cl)
	return tn
}

// start builds and starts a node from tn.props on the given listeners.
func (tn *testNode) start(t testing.TB, kl, cl net.Listener) *Node {
	t.Helper()
	cfg, _, err := config.Load("", nil, tn.props)
	if err != nil {
		t.Fatal(err)
	}
	logger := tn.logger
	if logger == nil {
		logger = testLogger(t)
	}
	n, err := New(cfg, logger, WithListener("PLAINTEXT", kl), WithListener("CONTROLLER", cl))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := n.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return n
}

// restart shuts the node down cleanly and starts it again on the same
// ports and directories.
func (tn *testNode) restart(t testing.TB) {
	t.Helper()
	kafka, ctrl := tn.Addr("PLAINTEXT").String(), tn.Addr("CONTROLLER").String()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tn.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	kl, err := net.Listen("tcp", kafka)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := net.Listen("tcp", ctrl)
	if err != nil {
		t.Fatal(err)
	}
	tn.Node = tn.start(t, kl, cl)
}
