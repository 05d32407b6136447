// Package kafkacluster runs Apache Kafka 4.4.0 — the release jars that
// test/kafka/pom.xml copies into $KMIRROR_KAFKA_LIBS — for tests: a KRaft
// cluster of combined broker+controller nodes, each a child JVM listening on
// free 127.0.0.1 ports (Start), and any Kafka tool on the same class path
// (RunTool). It is the real broker users run: a mirror source, the reference
// in differential tests, the peer in benchmarks.
//
// A test that uses it fails, and is never skipped, when the jars or java are
// missing (scripts/test.sh installs both). Everything a helper starts is
// killed by the test's cleanup, and by the kernel if the test process dies.
// JVMs are slow to start on small machines: share one cluster between the
// subtests of a test where they stay independent (their own topics).
package kafkacluster

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// StartTimeout bounds how long Start and Cluster.Start wait for nodes to
// serve, and Stop for a node to exit: JVMs start slowly on two busy cores.
const StartTimeout = 120 * time.Second

// AdminUser is the SCRAM super user of a SASLSSL cluster; brokers use it
// between themselves and the helper's own clients use it.
const AdminUser = "admin"

// Option configures a cluster.
type Option func(*options)

type options struct {
	nodes int
	props map[string]string
	sasl  bool
	users map[string]string // SCRAM-SHA-512 users: name → password
	jvm   []string
}

// Nodes sets how many nodes the cluster has (default 1). Every node is a
// broker and a voter of the controller quorum.
func Nodes(n int) Option { return func(o *options) { o.nodes = n } }

// BrokerConfig sets a server.properties entry (Kafka's name) on every node,
// over the helper's defaults: unclean.leader.election.enable,
// min.insync.replicas, default.replication.factor, ...
func BrokerConfig(key, value string) Option {
	return func(o *options) { o.props[key] = value }
}

// SASLSSL makes the client and inter-broker listener SASL_SSL with
// SCRAM-SHA-512, its certificate signed by a CA the helper generates
// (TLSConfig, CAFile), and authorizes requests with Kafka's
// StandardAuthorizer: AdminUser is a super user, any other user needs ACLs.
func SASLSSL() Option { return func(o *options) { o.sasl = true } }

// SCRAMUser adds a SCRAM-SHA-512 user when the storage is formatted (the
// password must not hold a double quote). It implies nothing else: use it
// with SASLSSL.
func SCRAMUser(name, password string) Option {
	return func(o *options) { o.users[name] = password }
}

// JVMOptions replaces the broker JVMs' default options (a 512 MiB heap,
// the serial collector and only the C1 compiler, which start fastest on
// two cores); benchmarks want their own.
func JVMOptions(opts ...string) Option { return func(o *options) { o.jvm = opts } }

var defaultJVM = []string{"-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}

// Cluster is an Apache Kafka KRaft cluster of child JVMs.
type Cluster struct {
	// t is the test that the methods fail and log to: the one that
	// started the cluster, or the one given to For.
	t testing.TB
	*cluster
}

// cluster is a Cluster's state, shared by the views For returns.
type cluster struct {
	clusterID string
	libs      string
	java      string
	opts      options
	dir       string

	certs         *certs // nil without SASLSSL
	adminPassword string

	mu    sync.Mutex
	nodes []*node
	// exited is closed, and replaced, whenever a JVM exits.
	exited chan struct{}
}

// node is one broker+controller. Its ports and directory stay the same
// across restarts.
type node struct {
	id                   int32
	dir                  string
	port, controllerPort int
	proc                 *jvm // nil while stopped
}

// jvm is one running kafka.Kafka process.
type jvm struct {
	cmd  *exec.Cmd
	out  *os.File
	done chan struct{}
	err  error // the Wait result, set before done closes
}

// Start formats and starts a cluster and returns once every node serves
// clients: each answers ApiVersions and Metadata listing every node, and
// the controller quorum answers a (validate-only) CreateTopics. The
// cluster is killed when the test ends.
func Start(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	o := options{nodes: 1, props: map[string]string{}, users: map[string]string{}, jvm: defaultJVM}
	for _, opt := range opts {
		opt(&o)
	}
	if o.nodes < 1 {
		t.Fatalf("kafkacluster: %d nodes", o.nodes)
	}
	c := &Cluster{t: t, cluster: &cluster{clusterID: storage.NewDirectoryID(), libs: Libs(t), java: javaBin(t), opts: o, exited: make(chan struct{})}}
	// The directory first: cleanups run last-in first-out, and the JVMs
	// must be dead before their directories are removed.
	c.dir = t.TempDir()
	t.Cleanup(c.shutdown)

	if o.sasl {
		var err error
		if c.certs, err = newCerts(); err != nil {
			t.Fatalf("kafkacluster: certificates: %v", err)
		}
		c.adminPassword = randomPassword()
		if err := os.WriteFile(c.CAFile(), c.certs.caPEM, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(c.ClientProperties(), []byte(c.clientProperties()), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= o.nodes; i++ {
		n := &node{
			id: int32(i), dir: filepath.Join(c.dir, "node-"+strconv.Itoa(i)),
			port: testcluster.FreePort(t), controllerPort: testcluster.FreePort(t),
		}
		if err := os.MkdirAll(n.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		c.nodes = append(c.nodes, n)
	}
	for _, n := range c.nodes {
		c.writeConfig(n)
	}

	// Format every node's storage with Kafka's own tool, in parallel: each
	// is a JVM start.
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		wg.Go(func() { errs[i] = c.format(n) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("kafkacluster: format storage: %v", err)
	}

	for _, n := range c.nodes {
		if err := c.launch(n); err != nil {
			t.Fatalf("kafkacluster: %v", err)
		}
	}
	c.waitReady()
	return c
}

// For returns a view of the same cluster whose methods fail and log to t
// instead of the test that started it: a subtest of a test that shares one
// cluster between its subtests calls Kill, Start, ... on c.For(t), so that
// a failure ends the subtest, not its parent. The cluster still lives as
// long as the test that started it.
func (c *Cluster) For(t testing.TB) *Cluster { return &Cluster{t: t, cluster: c.cluster} }

// ClusterID returns the cluster's id.
func (c *Cluster) ClusterID() string { return c.clusterID }

// NodeIDs returns the ids of the cluster's nodes (1 to n), running or not.
func (c *Cluster) NodeIDs() []int32 {
	var ids []int32
	for _, n := range c.nodes {
		ids = append(ids, n.id)
	}
	return ids
}

// node returns the node with id, failing the test if there is none.
func (c *Cluster) node(id int32) *node {
	c.t.Helper()
	if id < 1 || int(id) > len(c.nodes) {
		c.t.Fatalf("kafkacluster: no node %d", id)
	}
	return c.nodes[id-1]
}

// Addr returns the client address of node id.
func (c *Cluster) Addr(id int32) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(c.node(id).port))
}

// ControllerAddr returns the controller listener address of node id.
func (c *Cluster) ControllerAddr(id int32) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(c.node(id).controllerPort))
}

// Bootstrap returns the client addresses of every node, comma-separated:
// a bootstrap list that outlives restarts.
func (c *Cluster) Bootstrap() string { return strings.Join(c.addrs(), ",") }

func (c *Cluster) addrs() []string {
	var out []string
	for _, n := range c.nodes {
		out = append(out, c.Addr(n.id))
	}
	return out
}

// LogDir returns node id's log.dirs directory (partition directories,
// __cluster_metadata), for DumpLogSegments and on-disk checks.
func (c *Cluster) LogDir(id int32) string { return filepath.Join(c.node(id).dir, "data") }

// ServerLog returns the path of node id's log4j log.
func (c *Cluster) ServerLog(id int32) string { return filepath.Join(c.node(id).dir, "server.log") }

// ConfigFile returns the path of node id's server.properties.
func (c *Cluster) ConfigFile(id int32) string {
	return filepath.Join(c.node(id).dir, "server.properties")
}

// Running reports whether node id's JVM is started and has not exited.
func (c *Cluster) Running(id int32) bool {
	n := c.node(id)
	c.mu.Lock()
	p := n.proc
	c.mu.Unlock()
	return p != nil && !p.exited()
}

// Pid returns node id's JVM process id, failing the test when stopped.
func (c *Cluster) Pid(id int32) int { return c.proc(id).cmd.Process.Pid }

func (c *Cluster) proc(id int32) *jvm {
	c.t.Helper()
	n := c.node(id)
	c.mu.Lock()
	defer c.mu.Unlock()
	if n.proc == nil {
		c.t.Fatalf("kafkacluster: node %d is stopped", id)
	}
	return n.proc
}

// Stop shuts nodes down cleanly (SIGTERM: controlled shutdown) and waits
// for their JVMs to exit. Nodes stopped in one call get SIGTERM together:
// a broker's controlled shutdown needs the controller quorum, which the
// last nodes of a cluster stopped one by one no longer have (Kafka then
// waits for it for good).
func (c *Cluster) Stop(ids ...int32) {
	c.t.Helper()
	var procs []*jvm
	for _, id := range ids {
		procs = append(procs, c.proc(id))
	}
	for _, p := range procs {
		p.signal(syscall.SIGTERM)
		p.signal(syscall.SIGCONT) // a paused JVM handles SIGTERM once continued
	}
	deadline := time.After(StartTimeout)
	for i, p := range procs {
		select {
		case <-p.done:
		case <-deadline:
			for _, p := range procs {
				p.signal(syscall.SIGKILL)
				<-p.done
			}
			c.t.Fatalf("kafkacluster: node %d did not stop within %v of SIGTERM\n%s", ids[i], StartTimeout, c.logTail(c.node(ids[i])))
		}
		c.forget(ids[i])
	}
}

// Kill kills node id with SIGKILL (no shutdown at all) and waits for its
// JVM to exit.
func (c *Cluster) Kill(id int32) {
	c.t.Helper()
	p := c.proc(id)
	p.signal(syscall.SIGKILL)
	<-p.done
	c.forget(id)
}

func (c *Cluster) forget(id int32) {
	n := c.node(id)
	c.mu.Lock()
	n.proc = nil
	c.mu.Unlock()
}

// Pause stops node id's JVM with SIGSTOP: it holds its connections and
// answers nothing, as a machine that hangs.
func (c *Cluster) Pause(id int32) {
	c.t.Helper()
	c.proc(id).signal(syscall.SIGSTOP)
}

// Resume continues a paused node with SIGCONT.
func (c *Cluster) Resume(id int32) {
	c.t.Helper()
	c.proc(id).signal(syscall.SIGCONT)
}

// Start starts stopped or killed nodes again with their configuration and
// data, and returns once every running node serves (as Start). Nodes that
// can only serve together — a quorum of voters after the whole cluster
// stopped — are started in one call.
func (c *Cluster) Start(ids ...int32) {
	c.t.Helper()
	for _, id := range ids {
		n := c.node(id)
		c.mu.Lock()
		running := n.proc != nil
		c.mu.Unlock()
		if running {
			c.t.Fatalf("kafkacluster: node %d is running", id)
		}
		if err := c.launch(n); err != nil {
			c.t.Fatalf("kafkacluster: %v", err)
		}
	}
	c.waitReady()
}

// AdminPassword returns AdminUser's password (SASLSSL only).
func (c *Cluster) AdminPassword() string { return c.adminPassword }

// CAFile returns the path of the PEM CA certificate that signed the
// brokers' certificate (SASLSSL only).
func (c *Cluster) CAFile() string { return filepath.Join(c.dir, "ca.pem") }

// ClientProperties returns the path of a client config file for Kafka's
// tools (--command-config, --consumer.config): the security settings that
// connect as AdminUser, empty without SASLSSL.
func (c *Cluster) ClientProperties() string { return filepath.Join(c.dir, "client.properties") }

func (c *Cluster) clientProperties() string {
	if !c.opts.sasl {
		return ""
	}
	return strings.Join([]string{
		"security.protocol=SASL_SSL",
		"sasl.mechanism=SCRAM-SHA-512",
		"sasl.jaas.config=" + jaas(AdminUser, c.adminPassword),
		"ssl.truststore.type=PEM",
		"ssl.truststore.location=" + c.CAFile(),
	}, "\n") + "\n"
}

// ClientOpts returns the franz-go options that reach the cluster: every
// node as a seed and, with SASLSSL, TLS verifying the generated CA and
// SCRAM-SHA-512 as AdminUser.
func (c *Cluster) ClientOpts() []kgo.Opt {
	return c.clientOpts(c.addrs(), AdminUser, c.adminPassword)
}

// ClientOptsAs is ClientOpts authenticating as user (SASLSSL only).
func (c *Cluster) ClientOptsAs(user, password string) []kgo.Opt {
	return c.clientOpts(c.addrs(), user, password)
}

// TLSConfig returns a client TLS config that verifies the brokers against
// the generated CA, nil without SASLSSL.
func (c *Cluster) TLSConfig() *tls.Config {
	if c.certs == nil {
		return nil
	}
	return c.certs.clientTLS()
}

func (c *Cluster) clientOpts(seeds []string, user, password string) []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(seeds...)}
	if c.opts.sasl {
		opts = append(opts,
			kgo.DialTLSConfig(c.certs.clientTLS()),
			kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha512Mechanism()))
	}
	return opts
}

// Client returns a franz-go client of the cluster (ClientOpts, then opts),
// closed when the test ends.
func (c *Cluster) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return newClient(t, append(c.ClientOpts(), opts...))
}

// Admin returns an admin client on a new Client.
func (c *Cluster) Admin(t testing.TB) *kadm.Client {
	t.Helper()
	return kadm.NewClient(c.Client(t))
}

func newClient(t testing.TB, opts []kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatalf("kafkacluster: client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// config returns node n's server.properties.
func (c *Cluster) config(n *node) map[string]string {
	var voters []string
	for _, o := range c.nodes {
		voters = append(voters, fmt.Sprintf("%d@%s", o.id, c.ControllerAddr(o.id)))
	}
	listener := "PLAINTEXT"
	if c.opts.sasl {
		listener = "SASL_SSL"
	}
	// Internal topics as replicated as the cluster allows.
	rf, isr := strconv.Itoa(min(c.opts.nodes, 3)), strconv.Itoa(min(c.opts.nodes, 2))
	props := map[string]string{
		"node.id":                                          strconv.Itoa(int(n.id)),
		"process.roles":                                    "broker,controller",
		"listeners":                                        fmt.Sprintf("%s://%s,CONTROLLER://%s", listener, c.Addr(n.id), c.ControllerAddr(n.id)),
		"advertised.listeners":                             fmt.Sprintf("%s://%s", listener, c.Addr(n.id)),
		"listener.security.protocol.map":                   listener + ":" + listener + ",CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name":                       listener,
		"controller.listener.names":                        "CONTROLLER",
		"controller.quorum.voters":                         strings.Join(voters, ","),
		"log.dirs":                                         filepath.Join(n.dir, "data"),
		"offsets.topic.replication.factor":                 rf,
		"transaction.state.log.replication.factor":         rf,
		"transaction.state.log.min.isr":                    isr,
		"share.coordinator.state.topic.replication.factor": rf,
		"share.coordinator.state.topic.min.isr":            isr,
		"group.initial.rebalance.delay.ms":                 "0",
	}
	if c.opts.sasl {
		maps.Copy(props, map[string]string{
			"sasl.enabled.mechanisms":                               "SCRAM-SHA-512",
			"sasl.mechanism.inter.broker.protocol":                  "SCRAM-SHA-512",
			"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": jaas(AdminUser, c.adminPassword),
			"ssl.keystore.type":                                     "PEM",
			"ssl.keystore.key":                                      propertyValue(c.certs.keyPEM),
			"ssl.keystore.certificate.chain":                        propertyValue(c.certs.certPEM),
			"ssl.truststore.type":                                   "PEM",
			"ssl.truststore.location":                               c.CAFile(),
			"authorizer.class.name":                                 "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			// The controller listener is plaintext on loopback: brokers
			// register and heartbeat there as ANONYMOUS.
			"super.users": "User:" + AdminUser + ";User:ANONYMOUS",
		})
	}
	maps.Copy(props, c.opts.props)
	return props
}

// writeConfig writes node n's server.properties and log4j2 configuration.
func (c *Cluster) writeConfig(n *node) {
	c.t.Helper()
	props := c.config(n)
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(props)) {
		fmt.Fprintf(&b, "%s=%s\n", k, props[k])
	}
	if err := os.WriteFile(c.ConfigFile(n.id), []byte(b.String()), 0o600); err != nil {
		c.t.Fatal(err)
	}
	log4j := strings.ReplaceAll(serverLog4j, "SERVER_LOG", c.ServerLog(n.id))
	if err := os.WriteFile(filepath.Join(n.dir, "log4j2.properties"), []byte(log4j), 0o644); err != nil {
		c.t.Fatal(err)
	}
}

// serverLog4j sends the broker's log at INFO to server.log in its
// directory, as Kafka's config/log4j2.yaml does (in one file).
const serverLog4j = `status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = SERVER_LOG
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
`

// format runs Kafka's storage tool on node n: the cluster id, and the
// SCRAM users in the bootstrap metadata.
func (c *Cluster) format(n *node) error {
	args := []string{"format", "--config", c.ConfigFile(n.id), "--cluster-id", c.clusterID}
	users := maps.Clone(c.opts.users)
	if c.opts.sasl {
		users[AdminUser] = c.adminPassword
	}
	for _, name := range slices.Sorted(maps.Keys(users)) {
		args = append(args, "--add-scram", fmt.Sprintf(`SCRAM-SHA-512=[name=%s,password="%s"]`, name, users[name]))
	}
	ctx, cancel := context.WithTimeout(context.Background(), ToolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.java, append([]string{
		"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dlog4j2.configurationFile=" + filepath.Join(n.dir, "log4j2.properties"),
		"-cp", classPath(c.libs), "kafka.tools.StorageTool",
	}, args...)...)
	cmd.Dir = n.dir
	cmd.SysProcAttr = childAttr()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("node %d: %v\n%s", n.id, err, out)
	}
	return nil
}

// launch starts node n's JVM and returns at once.
func (c *Cluster) launch(n *node) error {
	out, err := os.OpenFile(filepath.Join(n.dir, "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	args := append(slices.Clone(c.opts.jvm),
		"-Djava.awt.headless=true",
		"-Dlog4j2.configurationFile="+filepath.Join(n.dir, "log4j2.properties"),
		"-cp", classPath(c.libs), "kafka.Kafka", c.ConfigFile(n.id))
	cmd := exec.Command(c.java, args...)
	cmd.Dir = n.dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("start node %d: %w", n.id, err)
	}
	p := &jvm{cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		out.Close()
		close(p.done)
		c.mu.Lock()
		close(c.exited)
		c.exited = make(chan struct{})
		c.mu.Unlock()
	}()
	c.mu.Lock()
	n.proc = p
	c.mu.Unlock()
	return nil
}

// signal sends sig to the JVM's process group.
func (p *jvm) signal(sig syscall.Signal) {
	if p.exited() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
}

func (p *jvm) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// running returns the nodes whose JVM is started, and a channel closed
// when a JVM exits after that.
func (c *Cluster) running() ([]*node, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*node
	for _, n := range c.nodes {
		if n.proc != nil {
			out = append(out, n)
		}
	}
	return out, c.exited
}

// waitReady polls until every running node serves (see Start), failing
// the test when a JVM exits or StartTimeout passes.
func (c *Cluster) waitReady() {
	c.t.Helper()
	deadline := time.Now().Add(StartTimeout)
	for {
		running, exited := c.running()
		for _, n := range running {
			if n.proc.exited() {
				c.t.Fatalf("kafkacluster: node %d exited while starting: %v\n%s", n.id, n.proc.err, c.logTail(n))
			}
		}
		err := c.probe(running)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			var tails strings.Builder
			for _, n := range running {
				tails.WriteString(c.logTail(n))
			}
			c.t.Fatalf("kafkacluster: the cluster did not serve within %v: %v\n%s", StartTimeout, err, tails.String())
		}
		// Poll again soon, or at once when a JVM exits.
		timer := time.NewTimer(250 * time.Millisecond)
		select {
		case <-timer.C:
		case <-exited:
			timer.Stop()
		}
	}
}

// readyCheckTopic is the name of the topic the readiness check validates
// (never creates).
const readyCheckTopic = "kafkacluster-ready-check"

// probe checks once that every node in running answers ApiVersions and a
// Metadata that lists every node in running as a broker, and that the
// controller quorum validates a topic replicated on all of them.
func (c *Cluster) probe(running []*node) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, n := range running {
		opts := c.clientOpts([]string{c.Addr(n.id)}, AdminUser, c.adminPassword)
		cl, err := kgo.NewClient(append(opts, kgo.DialTimeout(2*time.Second))...)
		if err != nil {
			return err
		}
		err = c.probeNode(ctx, cl.SeedBrokers()[0], n, running)
		cl.Close()
		if err != nil {
			return fmt.Errorf("node %d: %w", n.id, err)
		}
	}
	return nil
}

func (c *Cluster) probeNode(ctx context.Context, b *kgo.Broker, n *node, running []*node) error {
	if _, err := b.Request(ctx, kmsg.NewPtrApiVersionsRequest()); err != nil {
		return fmt.Errorf("ApiVersions: %w", err)
	}
	resp, err := b.Request(ctx, kmsg.NewPtrMetadataRequest())
	if err != nil {
		return fmt.Errorf("metadata request: %w", err)
	}
	brokers := map[int32]bool{}
	for _, b := range resp.(*kmsg.MetadataResponse).Brokers {
		brokers[b.NodeID] = true
	}
	for _, o := range running {
		if !brokers[o.id] {
			return fmt.Errorf("metadata lists brokers %v, not yet %d", slices.Sorted(maps.Keys(brokers)), o.id)
		}
	}
	// The quorum check once per round, through the first node.
	if n != running[0] {
		return nil
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.ValidateOnly = true
	req.TimeoutMillis = 5000
	topic := kmsg.NewCreateTopicsRequestTopic()
	topic.Topic = readyCheckTopic
	topic.NumPartitions = 1
	topic.ReplicationFactor = int16(len(running))
	req.Topics = append(req.Topics, topic)
	cresp, err := b.Request(ctx, req)
	if err != nil {
		return fmt.Errorf("CreateTopics: %w", err)
	}
	for _, t := range cresp.(*kmsg.CreateTopicsResponse).Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("CreateTopics (validate only): %w", err)
		}
	}
	return nil
}

// logTail returns the end of node n's server log and JVM output.
func (c *Cluster) logTail(n *node) string {
	var b strings.Builder
	for _, f := range []string{"stdout.log", "server.log"} {
		data, _ := os.ReadFile(filepath.Join(n.dir, f))
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		lines = lines[max(0, len(lines)-40):]
		fmt.Fprintf(&b, "--- node %d %s (last %d lines):\n%s\n", n.id, f, len(lines), strings.Join(lines, "\n"))
	}
	return b.String()
}

// shutdown kills every JVM; it is the test's cleanup. A failed test gets
// the end of each node's log.
func (c *Cluster) shutdown() {
	for _, n := range c.nodes {
		c.mu.Lock()
		p := n.proc
		n.proc = nil
		c.mu.Unlock()
		if p != nil {
			p.signal(syscall.SIGKILL)
			<-p.done
		}
		if c.t.Failed() {
			c.t.Log(c.logTail(n))
		}
	}
}

// jaas returns a SCRAM login module setting.
func jaas(user, password string) string {
	return fmt.Sprintf(`org.apache.kafka.common.security.scram.ScramLoginModule required username="%s" password="%s";`, user, password)
}

func randomPassword() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // never fails since Go 1.24
	return hex.EncodeToString(b)
}
