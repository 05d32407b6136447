package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kmirror/kmirror/internal/storage"
)

// cluster is three kmirror processes on loopback ports, each broker and
// controller (the layout of config/cluster/node{1,2,3}.properties), with
// Kafka's default flush policy (no fsync per write: durability comes from
// the replicas).
type cluster struct {
	dir   string
	procs []*exec.Cmd
	addrs []string
	logs  []*os.File
}

// buildBinary builds ./cmd/kmirror of this module into dir.
func buildBinary(dir string) (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("run from inside the kmirror module")
	}
	bin := filepath.Join(dir, "kmirror")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/kmirror")
	cmd.Dir = filepath.Dir(gomod)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/kmirror: %v\n%s", err, out)
	}
	return bin, nil
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// startCluster starts the three nodes with their data under dir and
// returns once every node serves clients and sees all three brokers.
func startCluster(ctx context.Context, bin, dir string) (*cluster, error) {
	c := &cluster{dir: dir}
	var ports, cports []int
	var voters []string
	for i := 1; i <= 3; i++ {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		cp, err := freePort()
		if err != nil {
			return nil, err
		}
		ports, cports = append(ports, p), append(cports, cp)
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i, cp))
		c.addrs = append(c.addrs, "127.0.0.1:"+strconv.Itoa(p))
	}
	clusterID := storage.NewDirectoryID()
	for i := 1; i <= 3; i++ {
		nodeDir := filepath.Join(dir, "node-"+strconv.Itoa(i))
		if err := os.MkdirAll(nodeDir, 0o755); err != nil {
			return nil, err
		}
		props := fmt.Sprintf(`node.id=%d
process.roles=broker,controller
listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
controller.quorum.voters=%s
log.dirs=%s
default.replication.factor=3
min.insync.replicas=2
offsets.topic.replication.factor=3
transaction.state.log.replication.factor=3
transaction.state.log.min.isr=2
auto.leader.rebalance.enable=false
`, i, ports[i-1], cports[i-1], strings.Join(voters, ","), filepath.Join(nodeDir, "data"))
		file := filepath.Join(nodeDir, "server.properties")
		if err := os.WriteFile(file, []byte(props), 0o644); err != nil {
			return nil, err
		}
		logf, err := os.Create(filepath.Join(nodeDir, "node.log"))
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(bin, "server", "--config", file, "--cluster-id", clusterID, "--log-level", "warn")
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			logf.Close()
			c.stop()
			return nil, fmt.Errorf("start node %d: %w", i, err)
		}
		c.procs = append(c.procs, cmd)
		c.logs = append(c.logs, logf)
	}
	if err := c.waitReady(ctx); err != nil {
		c.stop()
		return nil, fmt.Errorf("%w (node logs under %s)", err, dir)
	}
	return c, nil
}

// bootstrap returns the client addresses, comma-separated.
func (c *cluster) bootstrap() string { return strings.Join(c.addrs, ",") }

// waitReady polls until every node, asked directly, lists all three
// brokers.
func (c *cluster) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, addr := range c.addrs {
		cl, err := brokerClient(addr)
		if err != nil {
			return err
		}
		for {
			brokers, err := kadm.NewClient(cl).ListBrokers(ctx)
			if err == nil && len(brokers) == 3 {
				break
			}
			if ctx.Err() != nil {
				cl.Close()
				return fmt.Errorf("node %s did not see three brokers: %v %v", addr, brokers, err)
			}
			time.Sleep(100 * time.Millisecond) // polling a starting process
		}
		cl.Close()
	}
	return nil
}

// stop stops every node with SIGTERM (a clean shutdown) and kills what is
// still running after 30 s.
func (c *cluster) stop() {
	for _, p := range c.procs {
		_ = p.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range c.procs {
		done := make(chan struct{})
		go func() { _ = p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = p.Process.Kill()
			<-done
		}
	}
	for _, f := range c.logs {
		f.Close()
	}
}
