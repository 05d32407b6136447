package group_test

import (
	"context"
	"encoding/binary"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/group"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/internal/wire"
)

// groupCluster is a single kmirror node serving the group APIs, for the
// integration tests. Until the server attaches the group coordinator to its
// client listeners, the tests run the coordinator on the node's broker (its
// coordinator.Host and metadata) behind a front listener that serves the
// group APIs itself and passes every other request to the node, pointing
// clients (Metadata, FindCoordinator) at the front. Once the server serves
// groups, Bootstrap can return the node's address directly.
type groupCluster struct {
	cluster *testcluster.Cluster
	front   *front
}

// startGroupCluster starts a one-node cluster with its group coordinator.
func startGroupCluster(t *testing.T, opts ...testcluster.Option) *groupCluster {
	t.Helper()
	opts = append([]testcluster.Option{
		testcluster.Config("offsets.topic.replication.factor", "1"),
		testcluster.Config("offsets.topic.num.partitions", "5"),
		testcluster.Config("group.initial.rebalance.delay.ms", "0"),
	}, opts...)
	c := testcluster.Start(t, opts...)
	node := c.Node(1).Server()
	gc := group.New(
		func() group.Config {
			cfg := group.FromBrokerConfig(node.Config())
			cfg.Logger = slog.New(slog.DiscardHandler)
			return cfg
		}(),
		group.Deps{Host: node.Broker().CoordinatorHost(), Metadata: node.Quorum()},
	)
	gc.Start()
	f := newFront(t, c.Node(1).Addr(), gc)
	t.Cleanup(func() {
		f.close()
		gc.Close()
	})
	return &groupCluster{cluster: c, front: f}
}

// Bootstrap is the address clients use.
func (g *groupCluster) Bootstrap() string { return g.front.addr }

// front serves the group APIs and forwards the rest to one node.
type front struct {
	t        *testing.T
	ln       net.Listener
	addr     string
	host     string
	port     int32
	upstream string
	apis     map[int16]wire.API
	reg      *wire.Registry

	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	conns  map[net.Conn]bool
	wg     sync.WaitGroup
}

func newFront(t *testing.T, upstream string, gc *group.Coordinator) *front {
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
	for _, a := range gc.APIs() {
		f.apis[a.Key] = a
		f.reg.Add(a.Key, a.MinVersion, a.MaxVersion)
	}
	f.wg.Add(1)
	go f.accept()
	return f
}

func (f *front) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
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

func (f *front) close() {
	f.ln.Close()
	f.cancel()
	f.mu.Lock()
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
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
		if err != nil {
			return
		}
		if len(frame) < 8 {
			return
		}
		key := int16(binary.BigEndian.Uint16(frame))
		version := int16(binary.BigEndian.Uint16(frame[2:]))
		corr := int32(binary.BigEndian.Uint32(frame[4:]))
		var out []byte
		if api, ok := f.apis[key]; ok {
			hdr, req, err := wire.ParseRequest(frame, f.reg)
			if err != nil {
				f.t.Logf("front: %v", err)
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
// rewritten where it names brokers or lists API versions.
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
		if kr.ReadFrom(resp[hs:]) != nil || isAPIVersionsError(kr) {
			// An ApiVersions error answer has a version 0 body (listing
			// the broker's versions) whatever the request's version.
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
	case kmsg.Produce:
		// acks=0 produce requests get no response and are not used here.
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(resp))), resp...), nil
}

// rewrite points clients at the front and adds the group APIs to the
// advertised versions.
func (f *front) rewrite(r kmsg.Response) {
	switch r := r.(type) {
	case *kmsg.ApiVersionsResponse:
		for key, a := range f.apis {
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

func isAPIVersionsError(r kmsg.Response) bool {
	av, ok := r.(*kmsg.ApiVersionsResponse)
	return ok && av.ErrorCode != 0
}
