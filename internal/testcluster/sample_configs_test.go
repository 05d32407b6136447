package testcluster

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/server"
	"github.com/kmirror/kmirror/internal/storage"
)

// TestSampleClusterConfigs starts the sample clusters of config/cluster/
// in-process — three combined nodes, and three controllers with two
// broker-only nodes — from the files as written, except that their
// listeners move to free loopback ports and their data to temporary
// directories. Each cluster creates a topic with its default replication
// factor, takes acks=all writes, and ends with identical replicas.
func TestSampleClusterConfigs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		glob    string
		brokers int
	}{
		{"three combined nodes", "../../config/cluster/node*.properties", 3},
		{"three controllers and two brokers", "../../config/cluster/split/*.properties", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files, err := filepath.Glob(tc.glob)
			if err != nil || len(files) == 0 {
				t.Fatalf("sample configs %s: %v %v", tc.glob, files, err)
			}
			runSampleCluster(t, files, tc.brokers)
		})
	}
}

// sampleNode is a node of a sample cluster.
type sampleNode struct {
	file   string
	cfg    *config.Config
	lns    map[string]net.Listener
	server *server.Node
}

func runSampleCluster(t *testing.T, files []string, wantBrokers int) {
	base := t.TempDir()
	log := newTestLog(t)
	defer log.close()
	var nodes []*sampleNode
	controllerPort := map[int32]int{}
	for _, f := range files {
		cfg, warnings, err := config.Load(f, nil, nil)
		if err != nil || len(warnings) > 0 {
			t.Fatalf("%s: %v %v", f, err, warnings)
		}
		n := &sampleNode{file: f, cfg: cfg, lns: map[string]net.Listener{}}
		for _, l := range cfg.Listeners {
			n.lns[l.Name] = listen(t, 0)
			if slices.Contains(cfg.ControllerListenerNames, l.Name) {
				controllerPort[cfg.NodeID] = n.lns[l.Name].Addr().(*net.TCPAddr).Port
			}
		}
		nodes = append(nodes, n)
	}
	var voters []string
	for _, n := range nodes {
		if p, ok := controllerPort[n.cfg.NodeID]; ok {
			voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", n.cfg.NodeID, p))
		}
	}
	clusterID := storage.NewDirectoryID()
	var bootstrap []string
	for _, n := range nodes {
		var ls []string
		for _, l := range n.cfg.Listeners {
			addr := n.lns[l.Name].Addr().String()
			ls = append(ls, l.Name+"://"+addr)
			if !slices.Contains(n.cfg.ControllerListenerNames, l.Name) {
				bootstrap = append(bootstrap, addr)
			}
		}
		overrides := map[string]string{
			"listeners":                strings.Join(ls, ","),
			"controller.quorum.voters": strings.Join(voters, ","),
			"log.dirs":                 filepath.Join(base, "node-"+strconv.Itoa(int(n.cfg.NodeID))),
		}
		cfg, warnings, err := config.Load(n.file, nil, overrides)
		if err != nil || len(warnings) > 0 {
			t.Fatalf("%s with test ports: %v %v", n.file, err, warnings)
		}
		n.cfg = cfg
	}

	// Every node at once: controllers need a majority, brokers need the
	// controllers.
	var wg sync.WaitGroup
	errs := make([]error, len(nodes))
	for i, n := range nodes {
		opts := []server.Option{server.WithClusterID(clusterID)}
		for name, ln := range n.lns {
			opts = append(opts, server.WithListener(name, ln))
		}
		logger := slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelWarn})).With("test_node", n.cfg.NodeID)
		s, err := server.New(n.cfg, logger, opts...)
		if err != nil {
			t.Fatalf("%s: %v", n.file, err)
		}
		n.server = s
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
			defer cancel()
			errs[i] = s.Start(ctx)
		}()
	}
	wg.Wait()
	defer func() {
		for _, n := range nodes {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			n.server.Shutdown(ctx)
		}
	}()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("start %s: %v", nodes[i].file, err)
		}
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...), kgo.DefaultProduceTopic("sample"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := ctxFor(t, 2*time.Minute)
	adm := kadm.NewClient(cl)
	// Each node's start waits for its own unfencing only; the others see
	// it a moment later.
	for {
		brokers, err := adm.ListBrokers(ctx)
		if err == nil && len(brokers) == wantBrokers {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("brokers %v, %v; want %d", brokers, err, wantBrokers)
		}
		time.Sleep(10 * time.Millisecond) // polling the brokers' metadata
	}
	resp, err := adm.CreateTopic(ctx, 1, -1, nil, "sample")
	if err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	for i := 0; i < 20; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("s-" + strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	// Every broker holds a replica, byte for byte the same.
	tp := storage.TopicPartition{Topic: "sample", Partition: 0}
	deadline := time.Now().Add(WaitTimeout)
	for {
		var copies [][]byte
		for _, n := range nodes {
			b := n.server.Broker()
			if b == nil {
				continue
			}
			p, ok := b.Replicas().Partition(tp)
			if !ok || p.Log() == nil {
				continue
			}
			r, err := p.Log().Read(0, 1<<20, storage.FetchLogEnd, true)
			if err != nil {
				t.Fatal(err)
			}
			data, err := r.Bytes()
			r.Release()
			if err != nil {
				t.Fatal(err)
			}
			copies = append(copies, data)
		}
		same := len(copies) == wantBrokers && len(copies[0]) > 0
		for _, c := range copies {
			same = same && bytes.Equal(c, copies[0])
		}
		if same {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d replicas of %d, not identical", len(copies), wantBrokers)
		}
		time.Sleep(10 * time.Millisecond) // polling replicas; there is no event to wait on
	}
}
