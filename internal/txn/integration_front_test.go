package txn_test

import (
	"context"
	"encoding/binary"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/group"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/internal/txn"
	"github.com/kmirror/kmirror/internal/wire"
)

// txnCluster is a one-node kmirror cluster with its group and transaction
// coordinators, for the integration tests. Until the server attaches the
// coordinators to its listeners, the tests build them on the node's broker
// (its coordinator.Host, producer ids, markers and metadata) and serve their
// APIs from a front listener that passes every other request to the node
// and points clients (Metadata, FindCoordinator) at itself. Restart restarts
// the node and rebuilds the coordinators on the new broker, as a node
// restart does.
type txnCluster struct {
	t       *testing.T
	cluster *testcluster.Cluster
	front   *front

	mu     sync.Mutex
	groups *group.Coordinator
	txns   *txn.Coordinator
}

func startTxnCluster(t *testing.T, opts ...testcluster.Option) *txnCluster {
	t.Helper()
	opts = append([]testcluster.Option{
		testcluster.Config("offsets.topic.replication.factor", "1"),
		testcluster.Config("offsets.topic.num.partitions", "3"),
		testcluster.Config("group.initial.rebalance.delay.ms", "0"),
		testcluster.Config("transaction.state.log.replication.factor", "1"),
		testcluster.Config("transaction.state.log.min.isr", "1"),
		testcluster.Config("transaction.state.log.num.partitions", "3"),
	}, opts...)
	c := &txnCluster{t: t, cluster: testcluster.Start(t, opts...)}
	c.front = newFront(t, c.cluster.Node(1).Addr())
	c.attach()
	t.Cleanup(func() {
		c.front.close()
		c.detach()
	})
	return c
}

// attach builds the coordinators on the running node and serves them.
func (c *txnCluster) attach() {
	node := c.cluster.Node(1).Server()
	b := node.Broker()
	quiet := slog.New(slog.DiscardHandler)
	gcfg := group.FromBrokerConfig(node.Config())
	gcfg.Logger = quiet
	gc := group.New(gcfg, group.Deps{Host: b.CoordinatorHost(), Metadata: node.Quorum()})
	markers := txn.NewMarkerService(b, gc)
	markers.SetLogger(quiet)
	tcfg := txn.FromBrokerConfig(node.Config())
	tcfg.Logger = quiet
	tc := txn.New(tcfg, txn.Deps{
		Host:        b.CoordinatorHost(),
		Metadata:    node.Quorum(),
		ProducerIDs: b,
		Markers:     markers,
		Groups:      gc,
	})
	gc.SetTransactionResolver(tc)
	b.SetTransactionCoordinator(tc)
	gc.Start()
	tc.Start()
	var apis []wire.API
	apis = append(apis, gc.APIs()...)
	apis = append(apis, tc.APIs()...)
	apis = append(apis, markers.APIs()...)
	c.front.setAPIs(apis)
	c.mu.Lock()
	c.groups, c.txns = gc, tc
	c.mu.Unlock()
}

func (c *txnCluster) detach() {
	c.mu.Lock()
	gc, tc := c.groups, c.txns
	c.groups, c.txns = nil, nil
	c.mu.Unlock()
	if tc != nil {
		tc.Close()
	}
	if gc != nil {
		gc.Close()
	}
}

// restart restarts the node with its coordinators. Clients see what a
// node restart looks like: connections closed, then refused until the node
// (with its coordinators) serves again.
// Each of whileDown runs once clients can no longer reach the node.
func (c *txnCluster) restart(whileDown ...func()) {
	c.t.Helper()
	c.front.pause()
	for _, f := range whileDown {
		f()
	}
	c.detach()
	c.cluster.Node(1).Restart()
	c.attach()
	c.front.resume()
}

// bootstrap is the address clients use.
func (c *txnCluster) bootstrap() string { return c.front.addr }

// front serves the coordinators' APIs and forwards the rest to one node.
type front struct {
	t        *testing.T
	ln       net.Listener
	addr     string
	host     string
	port     int32
	upstream string

	ctx    context.Context
	cancel context.CancelFunc

	mu    sync.Mutex
	apis  map[int16]wire.API
	reg   *wire.Registry
	conns map[net.Conn]bool
	wg    sync.WaitGroup
	// acceptWG tracks the accept loop of the current listener.
	acceptWG sync.WaitGroup
}

func newFront(t *testing.T, upstream string) *front {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	p, _ := strconv.Atoi(port)
	f := &front{t: t, ln: ln, addr: ln.Addr().String(), host: host, port: int32(p), upstream: upstream,
		apis: map[int16]wire.API{}, reg: wire.NewRegistry(), conns: map[net.Conn]bool{}}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	f.startAccepting(ln)
	return f
}

func (f *front) startAccepting(ln net.Listener) {
	f.mu.Lock()
	f.ln = ln
	f.mu.Unlock()
	f.acceptWG.Add(1)
	go func() {
		defer f.acceptWG.Done()
		f.accept(ln)
	}()
}

// pause closes the listener and every connection: new connections are
// refused until resume.
func (f *front) pause() {
	f.mu.Lock()
	ln := f.ln
	f.mu.Unlock()
	ln.Close()
	f.acceptWG.Wait()
	f.dropConnections()
}

// resume listens again on the same address.
func (f *front) resume() {
	f.t.Helper()
	var ln net.Listener
	var err error
	for range 100 {
		if ln, err = net.Listen("tcp", f.addr); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond) // the port is briefly unavailable after close on some systems
	}
	if err != nil {
		f.t.Fatalf("front: listen again on %s: %v", f.addr, err)
	}
	f.startAccepting(ln)
}

// setAPIs replaces the APIs the front serves itself; their requests are
// refused (the connection is closed) while none are set.
func (f *front) setAPIs(apis []wire.API) {
	reg := wire.NewRegistry()
	m := map[int16]wire.API{}
	for _, a := range apis {
		m[a.Key] = a
		reg.Add(a.Key, a.MinVersion, a.MaxVersion)
	}
	f.mu.Lock()
	f.apis, f.reg = m, reg
	f.mu.Unlock()
}

// served reports whether the front serves key itself (while coordinators
// are detached, the keys they serve are still not forwarded).
func (f *front) served(key int16) (wire.API, *wire.Registry, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.apis[key]
	return a, f.reg, ok
}

var coordinatorKeys = map[kmsg.Key]bool{
	kmsg.FindCoordinator: true, kmsg.JoinGroup: true, kmsg.SyncGroup: true, kmsg.Heartbeat: true,
	kmsg.LeaveGroup: true, kmsg.OffsetCommit: true, kmsg.OffsetFetch: true, kmsg.TxnOffsetCommit: true,
	kmsg.DescribeGroups: true, kmsg.ListGroups: true, kmsg.DeleteGroups: true, kmsg.OffsetDelete: true,
	kmsg.AddPartitionsToTxn: true, kmsg.AddOffsetsToTxn: true, kmsg.EndTxn: true,
	kmsg.DescribeTransactions: true, kmsg.ListTransactions: true, kmsg.WriteTxnMarkers: true,
}

func (f *front) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.conns[c] = true
		f.mu.Unlock()
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.serve(c)
			f.mu.Lock()
			delete(f.conns, c)
			f.mu.Unlock()
		}()
	}
}

// dropConnections closes every client connection, as a node restart does.
func (f *front) dropConnections() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.conns {
		c.Close()
	}
}

func (f *front) close() {
	f.mu.Lock()
	ln := f.ln
	f.mu.Unlock()
	ln.Close()
	f.acceptWG.Wait()
	f.cancel()
	f.dropConnections()
	f.wg.Wait()
}

// serve handles one client connection: one request at a time, answered in
// order, as a Kafka broker does.
func (f *front) serve(c net.Conn) {
	defer c.Close()
	var up net.Conn
	defer func() {
		if up != nil {
			up.Close()
		}
	}()
	for {
		frame, err := wire.ReadFrame(c, 100<<20, nil)
		if err != nil || len(frame) < 8 {
			return
		}
		key := int16(binary.BigEndian.Uint16(frame))
		version := int16(binary.BigEndian.Uint16(frame[2:]))
		corr := int32(binary.BigEndian.Uint32(frame[4:]))
		var out []byte
		if api, reg, ok := f.served(key); ok {
			hdr, req, err := wire.ParseRequest(frame, reg)
			if err != nil {
				return
			}
			rc := &wire.RequestContext{Header: hdr, Listener: "PLAINTEXT", Principal: wire.AnonymousPrincipal, ClientAddr: c.RemoteAddr()}
			resp, err := api.Handle(f.ctx, rc, req)
			if err != nil {
				return
			}
			kr := resp.(kmsg.Response)
			f.rewrite(kr)
			out = wire.AppendResponse(nil, corr, kr)
		} else {
			if coordinatorKeys[kmsg.Key(key)] {
				return // coordinators detached (restarting)
			}
			if up == nil {
				if up, err = net.Dial("tcp", f.upstream); err != nil {
					return
				}
			}
			if out, err = f.forward(up, frame, key, version, corr); err != nil {
				return
			}
		}
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// forward sends a request to the node and returns its framed response,
// rewritten where it names brokers or lists API versions. Produce requests
// with acks=0 are not used by these tests.
func (f *front) forward(up net.Conn, frame []byte, key, version int16, corr int32) ([]byte, error) {
	req := binary.BigEndian.AppendUint32(nil, uint32(len(frame)))
	if _, err := up.Write(append(req, frame...)); err != nil {
		return nil, err
	}
	resp, err := wire.ReadFrame(up, 100<<20, nil)
	if err != nil {
		return nil, err
	}
	switch kmsg.Key(key) {
	case kmsg.ApiVersions, kmsg.Metadata, kmsg.DescribeCluster:
		hs := wire.ResponseHeaderSize(key, version)
		if len(resp) < hs {
			break
		}
		kr := kmsg.ResponseForKey(key)
		kr.SetVersion(version)
		if err := kr.ReadFrom(resp[hs:]); err != nil || apiVersionsError(kr) {
			if key != int16(kmsg.ApiVersions) {
				break
			}
			kr = kmsg.ResponseForKey(key)
			kr.SetVersion(0)
			if kr.ReadFrom(resp[hs:]) != nil {
				break
			}
		}
		f.rewrite(kr)
		return wire.AppendResponse(nil, corr, kr), nil
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(resp))), resp...), nil
}

// rewrite points clients at the front and advertises the front's APIs.
func (f *front) rewrite(r kmsg.Response) {
	switch r := r.(type) {
	case *kmsg.ApiVersionsResponse:
		f.mu.Lock()
		apis := f.apis
		f.mu.Unlock()
		for key, a := range apis {
			found := false
			for i := range r.ApiKeys {
				if r.ApiKeys[i].ApiKey == key {
					r.ApiKeys[i].MinVersion, r.ApiKeys[i].MaxVersion = a.MinVersion, a.MaxVersion
					found = true
				}
			}
			if !found {
				k := kmsg.NewApiVersionsResponseApiKey()
				k.ApiKey, k.MinVersion, k.MaxVersion = key, a.MinVersion, a.MaxVersion
				r.ApiKeys = append(r.ApiKeys, k)
			}
		}
	case *kmsg.MetadataResponse:
		for i := range r.Brokers {
			r.Brokers[i].Host, r.Brokers[i].Port = f.host, f.port
		}
	case *kmsg.DescribeClusterResponse:
		for i := range r.Brokers {
			r.Brokers[i].Host, r.Brokers[i].Port = f.host, f.port
		}
	case *kmsg.FindCoordinatorResponse:
		if r.ErrorCode == 0 && r.NodeID >= 0 {
			r.Host, r.Port = f.host, f.port
		}
		for i := range r.Coordinators {
			if r.Coordinators[i].ErrorCode == 0 {
				r.Coordinators[i].Host, r.Coordinators[i].Port = f.host, f.port
			}
		}
	}
}

func apiVersionsError(r kmsg.Response) bool {
	av, ok := r.(*kmsg.ApiVersionsResponse)
	return ok && av.ErrorCode != 0
}
