package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/pkg/mirroradmin"
)

// metricsWait bounds each wait of the metrics tests.
const metricsWait = 60 * time.Second

// sample is one line of a Prometheus text scrape.
type sample struct {
	labels map[string]string
	value  float64
}

// scrape is a parsed /metrics answer: samples by name (histograms'
// _bucket, _sum and _count lines under their own names) and the metric
// families announced by # TYPE lines.
type scrape struct {
	samples  map[string][]sample
	families map[string]bool
}

// get fetches url and returns the status and body.
func get(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// scrapeNode fetches and parses a node's /metrics.
func scrapeNode(t testing.TB, n *testcluster.Node) scrape {
	t.Helper()
	addr := n.Server().MetricsAddr()
	if addr == nil {
		t.Fatalf("node %d serves no metrics listener", n.ID)
	}
	code, body := get(t, "http://"+addr.String()+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics answered %d: %s", code, body)
	}
	s, err := parseScrape(body)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// parseScrape parses the Prometheus text format (what kmirror serves:
// no timestamps on samples).
func parseScrape(text string) (scrape, error) {
	s := scrape{samples: map[string][]sample{}, families: map[string]bool{}}
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			s.families[strings.Fields(rest)[0]] = true
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, labels, value, err := parseSample(line)
		if err != nil {
			return s, fmt.Errorf("%q: %w", line, err)
		}
		s.samples[name] = append(s.samples[name], sample{labels, value})
	}
	return s, nil
}

func parseSample(line string) (string, map[string]string, float64, error) {
	labels := map[string]string{}
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return "", nil, 0, fmt.Errorf("no value")
	}
	name, rest := line[:i], line[i:]
	if rest[0] == '{' {
		rest = rest[1:]
		for !strings.HasPrefix(rest, "}") {
			eq := strings.Index(rest, `="`)
			if eq < 0 {
				return "", nil, 0, fmt.Errorf("bad labels")
			}
			key := strings.TrimPrefix(rest[:eq], ",")
			rest = rest[eq+2:]
			var val strings.Builder
			for {
				if rest == "" {
					return "", nil, 0, fmt.Errorf("unterminated label value")
				}
				c := rest[0]
				rest = rest[1:]
				if c == '\\' && rest != "" {
					switch rest[0] {
					case 'n':
						val.WriteByte('\n')
					default:
						val.WriteByte(rest[0])
					}
					rest = rest[1:]
					continue
				}
				if c == '"' {
					break
				}
				val.WriteByte(c)
			}
			labels[key] = val.String()
			rest = strings.TrimPrefix(rest, ",")
		}
		rest = rest[1:]
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
	return name, labels, v, err
}

// value returns the value of the sample of name whose labels include
// want, and whether there is one.
func (s scrape) value(name string, want map[string]string) (float64, bool) {
	for _, sm := range s.samples[name] {
		match := true
		for k, v := range want {
			if sm.labels[k] != v {
				match = false
				break
			}
		}
		if match {
			return sm.value, true
		}
	}
	return 0, false
}

// waitScrape polls n's /metrics until cond holds.
func waitScrape(t testing.TB, n *testcluster.Node, what string, cond func(scrape) bool) scrape {
	t.Helper()
	deadline := time.Now().Add(metricsWait)
	for {
		s := scrapeNode(t, n)
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond) // polling a scrape; there is no event to wait on
	}
}

// documentedMetric matches a metric name in the first column of a table
// of docs/metrics.md.
var documentedMetric = regexp.MustCompile("^\\| `(kmirror_[a-z0-9_]+)` \\|")

// documentedMetrics returns the metrics docs/metrics.md lists.
func documentedMetrics(t testing.TB) []string {
	t.Helper()
	b, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if m := documentedMetric.FindStringSubmatch(line); m != nil {
			out = append(out, m[1])
		}
	}
	if len(out) < 40 {
		t.Fatalf("docs/metrics.md lists only %d metrics: is the table format still `| `name` | ...`?", len(out))
	}
	return out
}

// mirroringCluster starts a one-node cluster with small internal topics,
// quick mirror reactions and its metrics listener on a free port.
func mirroringCluster(t testing.TB) *testcluster.Cluster {
	t.Helper()
	return testcluster.Start(t,
		testcluster.Config("offsets.topic.replication.factor", "1"),
		testcluster.Config("offsets.topic.num.partitions", "3"),
		testcluster.Config("transaction.state.log.replication.factor", "1"),
		testcluster.Config("transaction.state.log.min.isr", "1"),
		testcluster.Config("transaction.state.log.num.partitions", "3"),
		testcluster.Config("mirror.state.topic.num.partitions", "3"),
		testcluster.Config("mirror.state.topic.replication.factor", "1"),
		testcluster.Config("replica.fetch.wait.max.ms", "100"),
		testcluster.Config("replica.fetch.backoff.ms", "100"),
		testcluster.Config("mirror.metadata.refresh.interval.ms", "1000"),
		testcluster.Config("metrics.listener", "127.0.0.1:0"),
	)
}

// produceTo writes n records to a partition of topic.
func produceTo(t testing.TB, c *testcluster.Cluster, topic string, partition int32, n int) {
	t.Helper()
	cl := c.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	ctx := testCtx(t, metricsWait)
	for i := range n {
		r := &kgo.Record{Partition: partition, Value: []byte(value(topic, partition, i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce to %s-%d: %v", topic, partition, err)
		}
	}
}

// TestMetricsOfAMirroringNode scrapes /metrics of a destination node: a
// paused partition's lag rises with the source and falls to 0 after
// resume; after a failover, local traffic, a refused produce and the
// syncs, one scrape holds every metric docs/metrics.md lists, and the
// Grafana dashboard queries only documented metrics.
func TestMetricsOfAMirroringNode(t *testing.T) {
	src := mirroringCluster(t)
	dst := mirroringCluster(t)
	node := dst.Nodes()[0]
	ctx := testCtx(t, 4*metricsWait)

	createTopic(t, src.Admin(t), "orders", 2, nil)
	createTopic(t, src.Admin(t), "moved", 1, nil)
	for p := range int32(2) {
		produceTo(t, src, "orders", p, 10)
	}
	produceTo(t, src, "moved", 0, 5)

	adm, err := mirroradmin.NewFromAddrs(dst.BootstrapAddrs())
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if err := adm.CreateMirror(ctx, "m", map[string]string{"bootstrap.servers": src.Bootstrap()}); err != nil {
		t.Fatal(err)
	}
	if rs, err := adm.AddTopics(ctx, "m", "orders", "moved"); err != nil || rs.Error() != nil {
		t.Fatalf("add topics: %v %v", err, rs.Error())
	}
	part := func(topic string, p int32) map[string]string {
		return map[string]string{"mirror": "m", "topic": topic, "partition": strconv.Itoa(int(p))}
	}
	inState := func(s scrape, topic string, p int32, state string) bool {
		l := part(topic, p)
		l["state"] = state
		v, ok := s.value("kmirror_mirror_partition_state", l)
		return ok && v == 1
	}
	lag := func(s scrape, topic string, p int32) (offsets, seconds float64, ok bool) {
		o, ok1 := s.value("kmirror_mirror_partition_lag_offsets", part(topic, p))
		sec, ok2 := s.value("kmirror_mirror_partition_lag_seconds", part(topic, p))
		return o, sec, ok1 && ok2
	}
	caughtUp := func(s scrape) bool {
		for p := range int32(2) {
			if o, sec, ok := lag(s, "orders", p); !ok || o != 0 || sec != 0 {
				return false
			}
		}
		return true
	}
	waitScrape(t, node, "orders mirrored with no lag", func(s scrape) bool {
		return inState(s, "orders", 0, "MIRRORING") && inState(s, "orders", 1, "MIRRORING") &&
			inState(s, "moved", 0, "MIRRORING") && caughtUp(s)
	})

	// Paused: no fetch carries the partitions, yet the lag follows the
	// source.
	if rs, err := adm.PauseTopics(ctx, "m", "orders"); err != nil || rs.Error() != nil {
		t.Fatalf("pause: %v %v", err, rs.Error())
	}
	waitScrape(t, node, "orders PAUSED", func(s scrape) bool {
		return inState(s, "orders", 0, "PAUSED") && inState(s, "orders", 1, "PAUSED")
	})
	produceTo(t, src, "orders", 0, 15)
	produceTo(t, src, "orders", 1, 7)
	s := waitScrape(t, node, "the lag of the paused partitions to rise to 15 and 7", func(s scrape) bool {
		o0, _, ok0 := lag(s, "orders", 0)
		o1, _, ok1 := lag(s, "orders", 1)
		return ok0 && ok1 && o0 == 15 && o1 == 7
	})
	for p := range int32(2) {
		if _, sec, _ := lag(s, "orders", p); sec <= 0 {
			t.Errorf("orders-%d: lag of %v s while records are missing, want > 0", p, sec)
		}
	}

	if rs, err := adm.ResumeTopics(ctx, "m", "orders"); err != nil || rs.Error() != nil {
		t.Fatalf("resume: %v %v", err, rs.Error())
	}
	s = waitScrape(t, node, "the lag to fall to 0 after resume", func(s scrape) bool {
		return inState(s, "orders", 0, "MIRRORING") && inState(s, "orders", 1, "MIRRORING") && caughtUp(s)
	})
	if v, _ := s.value("kmirror_mirror_partition_fetched_records_total", part("orders", 0)); v != 25 {
		t.Errorf("orders-0: %v records mirrored, want 25", v)
	}

	// A failover, so that the failover histogram has an observation.
	if rs, err := adm.Failover(ctx, "m", "moved"); err != nil || rs.Error() != nil {
		t.Fatalf("failover: %v %v", err, rs.Error())
	}
	// Its partition shows STOPPED until the failover is recorded as complete
	// (mirror.name m.stopped), when its driver, and the partition's series,
	// go; the histogram keeps the failover.
	waitScrape(t, node, "moved failed over", func(s scrape) bool {
		v, ok := s.value("kmirror_mirror_failover_duration_seconds_count", map[string]string{"mirror": "m"})
		return ok && v == 1
	})

	// Client traffic on the destination: a local topic produced to and
	// consumed, and a produce to a mirrored (read-only) topic refused.
	createTopic(t, dst.Admin(t), "local", 1, nil)
	produceTo(t, dst, "local", 0, 3)
	cons := dst.Client(t, kgo.ConsumeTopics("local"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for got := 0; got < 3; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	cons.Close()
	refused := dst.Client(t, kgo.DefaultProduceTopic("orders"), kgo.RecordRetries(0), kgo.RecordDeliveryTimeout(5*time.Second))
	if err := refused.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err == nil {
		t.Fatal("a produce to a mirrored topic was accepted")
	}
	refused.Close()

	docs := documentedMetrics(t)
	s = waitScrape(t, node, "every documented metric", func(s scrape) bool {
		for _, name := range docs {
			if !s.families[name] {
				return false
			}
		}
		return true
	})
	var missing []string
	for _, name := range docs {
		if !s.families[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("documented but not scraped: %v", missing)
	}
	if v, ok := s.value("kmirror_mirror_failover_duration_seconds_count", map[string]string{"mirror": "m"}); !ok || v != 1 {
		t.Errorf("failover histogram count %v, want 1", v)
	}
	if v, ok := s.value("kmirror_topic_messages_in_total", map[string]string{"topic": "local"}); !ok || v != 3 {
		t.Errorf("messages in for the local topic: %v, want 3", v)
	}
	if v, ok := s.value("kmirror_topic_messages_in_total", map[string]string{"topic": "orders"}); ok && v != 0 {
		t.Errorf("mirrored records counted as produced: %v", v)
	}
	if v, ok := s.value("kmirror_request_errors_total", map[string]string{"api": "Produce"}); !ok || v < 1 {
		t.Errorf("Produce errors %v, want the refused produce counted", v)
	}
	if v, ok := s.value("kmirror_request_duration_seconds_count", map[string]string{"api": "Produce"}); !ok || v < 4 {
		t.Errorf("Produce requests %v, want at least 4", v)
	}

	// Every kmirror_* metric scraped is documented.
	for name := range s.families {
		if strings.HasPrefix(name, "kmirror_") && !slices.Contains(docs, name) {
			t.Errorf("scraped but not documented in docs/metrics.md: %s", name)
		}
	}
	checkDashboard(t, docs)
}

// dashboardMetric finds the metric names in the dashboard's queries.
var dashboardMetric = regexp.MustCompile(`kmirror_[a-z0-9_]+`)

// checkDashboard checks that docs/grafana-dashboard.json is valid JSON
// whose queries use documented metrics only.
func checkDashboard(t *testing.T, docs []string) {
	t.Helper()
	b, err := os.ReadFile("../../docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	queries := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			queries++
			for _, name := range dashboardMetric.FindAllString(tg.Expr, -1) {
				base := name
				for _, suffix := range []string{"_bucket", "_count", "_sum"} {
					if b, ok := strings.CutSuffix(name, suffix); ok && slices.Contains(docs, b) {
						base = b
					}
				}
				if !slices.Contains(docs, base) {
					t.Errorf("dashboard panel %q queries %s, which docs/metrics.md does not list", p.Title, name)
				}
			}
		}
	}
	if queries < 20 {
		t.Errorf("the dashboard has only %d queries", queries)
	}
}

// TestReadyzFollowsStartup: a node of a two-voter quorum restarted alone
// serves /healthz at once but answers /readyz with 503 and what it waits
// for, until the other voter is back; then 200.
func TestReadyzFollowsStartup(t *testing.T) {
	ports := []int{testcluster.FreePort(t), testcluster.FreePort(t)}
	c := testcluster.Start(t, testcluster.Nodes(2),
		testcluster.NodeConfig(1, "metrics.listener", "127.0.0.1:"+strconv.Itoa(ports[0])),
		testcluster.NodeConfig(2, "metrics.listener", "127.0.0.1:"+strconv.Itoa(ports[1])))
	base := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	if code, body := get(t, base+"/readyz"); code != http.StatusOK || strings.TrimSpace(body) != "ready" {
		t.Fatalf("/readyz of a started node: %d %q", code, body)
	}
	n1, n2 := c.Node(1), c.Node(2)
	n2.Stop()
	n1.Stop()

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		n1.Start() // returns once the quorum has a leader again
	}()
	defer wg.Wait()
	deadline := time.Now().Add(metricsWait)
	var code int
	var body string
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			code, body = resp.StatusCode, string(b)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restarting node's metrics listener never answered: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // the listener binds early in Start; there is no event to wait on
	}
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "not ready: starting: ") {
		t.Fatalf("/readyz while the quorum lacks a voter: %d %q, want 503 with the start-up stage", code, body)
	}
	if code, body := get(t, base+"/healthz"); code != http.StatusOK || strings.TrimSpace(body) != "ok" {
		t.Fatalf("/healthz of a starting node: %d %q", code, body)
	}

	n2.Start()
	wg.Wait()
	deadline = time.Now().Add(metricsWait)
	for {
		code, body = get(t, base+"/readyz")
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz after both voters are back: %d %q", code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
