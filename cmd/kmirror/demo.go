package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/server"
	"github.com/kmirror/kmirror/pkg/mirroradmin"
)

func init() {
	addCommand(newDemoCommand())
}

// The names the demo uses on both clusters.
const (
	demoTopic      = "orders"
	demoPartitions = 3
	demoMirror     = "demo"
	demoGroup      = "demo-readers"
)

// demoGroupReads is how many records of each partition, at least, the
// group reads on A before it commits.
const demoGroupReads = 1000

// demoStepTimeout bounds each step of the demo, so that a cluster that does
// not do its part ends the demo with an error instead of hanging it.
const demoStepTimeout = 90 * time.Second

// demoProduceEvery is the producer's pace on the source: 200 records/s.
const demoProduceEvery = 5 * time.Millisecond

// demoBacklog is how many records A holds before the mirror starts, and
// demoThrottle the bytes per second B's mirror fetchers may copy: together
// they make a catch-up of a few seconds, slow enough to watch.
const (
	demoBacklog  = 20000
	demoThrottle = 256 << 10
)

// demoSampleInterval is how often the demo samples the mirror while it
// shows the catch-up and the failover.
const demoSampleInterval = 250 * time.Millisecond

type demoFlags struct {
	duration time.Duration
	keep     bool
}

func newDemoCommand() *cobra.Command {
	f := &demoFlags{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run two local clusters, mirror a topic from one to the other and fail it over",
		Long: `Show cluster mirroring on this machine, with nothing to set up:

  1. start two single-node clusters, A (the source) and B (the destination),
     in a temporary directory, on free ports of 127.0.0.1;
  2. create the topic "orders" on A, with a producer writing to it steadily;
  3. create the mirror "demo" on B and add "orders": B copies A's records byte
     for byte, at the same offsets; the catch-up is shown live;
  4. let the consumer group "demo-readers" read part of "orders" on A and
     commit its offsets;
  5. fail over: stop the producer on A, wait until B has every record, remove
     "orders" from the mirror, wait until it is writable on B;
  6. write to "orders" on B, the new primary, and carry the group over: it
     resumes on B at the offsets it committed on A;

then print how to explore both clusters with kcat and the kmirror CLI, and
keep them running until Ctrl-C, or until --duration has passed since the
start (the steps always complete first). The clusters' data and logs are
removed on exit unless --keep is given.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDemo(cmd, f) },
	}
	cmd.Flags().DurationVar(&f.duration, "duration", 0, "stop by itself this long after the start, instead of waiting for Ctrl-C (0: wait)")
	cmd.Flags().BoolVar(&f.keep, "keep", false, "keep the clusters' data directories and logs")
	return cmd
}

// runDemo owns everything the demo starts: the signal watcher, the two
// nodes, the producer, and the temporary directory, all stopped or removed
// before it returns.
func runDemo(cmd *cobra.Command, f *demoFlags) error {
	if f.duration < 0 {
		return fmt.Errorf("invalid --duration %s: must not be negative", f.duration)
	}
	start := time.Now()
	out := cmd.OutOrStdout()

	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	interrupted := &atomic.Bool{}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	watcherDone := make(chan struct{})
	defer close(watcherDone)
	go func() {
		select {
		case <-sigs:
			interrupted.Store(true)
			cancel()
		case <-watcherDone:
			return
		}
		select {
		case <-sigs:
			fmt.Fprintln(cmd.ErrOrStderr(), "second signal: exiting at once, leaving the temporary directory behind")
			os.Exit(130)
		case <-watcherDone:
		}
	}()

	dir, err := os.MkdirTemp("", "kmirror-demo-")
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	d := &demo{out: out, dir: dir, tty: isTerminal(out)}
	err = d.run(ctx)
	if err == nil {
		err = d.explore(ctx, start, f.duration)
	}
	if interrupted.Load() {
		if !d.failedOver {
			fmt.Fprintln(out, "\nInterrupted before the failover completed.")
		}
		err = nil
	}
	fmt.Fprintln(out, "\nStopping both clusters...")
	if serr := d.stop(); serr != nil && err == nil {
		err = serr
	}
	if f.keep {
		fmt.Fprintf(out, "Kept the clusters' data and logs in %s\n", dir)
	} else if rerr := os.RemoveAll(dir); rerr != nil {
		if err == nil {
			err = fmt.Errorf("demo: remove %s: %w", dir, rerr)
		}
	} else {
		fmt.Fprintf(out, "Removed %s\n", dir)
	}
	return err
}

// demo is the state of one run.
type demo struct {
	out  io.Writer
	dir  string
	tty  bool
	a, b *demoNode

	producer   *demoProducer
	failedOver bool
}

// demoNode is one in-process single-node cluster of the demo.
type demoNode struct {
	name string
	dir  string
	addr string
	node *server.Node
	log  *os.File
}

// step prints a step's heading.
func (d *demo) step(n int, title string) {
	fmt.Fprintf(d.out, "\n[%d/6] %s\n", n, title)
}

func (d *demo) printf(format string, args ...any) {
	fmt.Fprintf(d.out, "      "+format+"\n", args...)
}

// stepContext bounds one step.
func stepContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, demoStepTimeout)
}

// run performs the six steps.
func (d *demo) run(ctx context.Context) error {
	d.step(1, "Starting two single-node clusters in "+d.dir)
	if err := d.startNodes(ctx); err != nil {
		return err
	}
	d.printf("cluster A (the source):      %s   (node log: %s)", d.a.addr, d.a.log.Name())
	d.printf("cluster B (the destination): %s   (node log: %s)", d.b.addr, d.b.log.Name())

	clA, err := kgo.NewClient(kgo.SeedBrokers(d.a.addr))
	if err != nil {
		return err
	}
	defer clA.Close()
	clB, err := kgo.NewClient(kgo.SeedBrokers(d.b.addr))
	if err != nil {
		return err
	}
	defer clB.Close()
	admA, admB := kadm.NewClient(clA), kadm.NewClient(clB)

	d.step(2, fmt.Sprintf("Creating topic %q (%d partitions) on A, with a producer writing 200 records/s", demoTopic, demoPartitions))
	if err := d.createTopic(ctx, admA); err != nil {
		return err
	}
	if err := d.backlog(ctx); err != nil {
		return err
	}
	if d.producer, err = startDemoProducer(d.a.addr); err != nil {
		return err
	}
	if err := d.waitProduced(ctx, 100); err != nil {
		return err
	}
	d.printf("%d records on A: a backlog of %d, then the steady producer", demoBacklog+d.producer.acked.Load(), demoBacklog)

	d.step(3, fmt.Sprintf("Creating mirror %q on B (source: A) and adding %q", demoMirror, demoTopic))
	mirror, err := mirroradmin.NewFromAddrs([]string{d.b.addr})
	if err != nil {
		return err
	}
	defer mirror.Close()
	if err := d.createMirror(ctx, mirror); err != nil {
		return err
	}
	d.printf("B now copies A's batches unchanged (same offsets, producer ids, timestamps); %q is read-only on B.", demoTopic)
	d.printf("B's mirror fetchers are throttled to %d KiB/s (mirror.replication.throttled.rate), so that", demoThrottle>>10)
	d.printf("the catch-up takes a few seconds. Catching up, as `kmirror mirror wait %s --max-lag 50` shows it:", demoMirror)
	frame, err := d.waitMirror(ctx, mirror, nil, func(f watchFrame) bool { return f.caughtUp(50) })
	if err != nil {
		return err
	}
	d.printf("Caught up while A keeps producing. The live table (`kmirror mirror describe %s --watch`):", demoMirror)
	var table strings.Builder
	if err := frame.render(&table, demoSampleInterval); err != nil {
		return err
	}
	for _, line := range strings.Split(strings.TrimRight(table.String(), "\n"), "\n")[2:] {
		d.printf("%s", strings.TrimRight("  "+line, " "))
	}

	d.step(4, fmt.Sprintf("Consumer group %q reads on A and commits its offsets", demoGroup))
	committed, err := d.consumeOnA(ctx)
	if err != nil {
		return err
	}
	d.printf("committed on A: %s", formatOffsets(committed))

	d.step(5, fmt.Sprintf("Failover of %q to B", demoTopic))
	n, err := d.producer.stop()
	if err != nil {
		return fmt.Errorf("producer on A: %w", err)
	}
	d.printf("stopped the producer on A after %d records (a planned failover stops the writes first);", n)
	d.printf("waiting until B has every record A holds, as `kmirror mirror wait %s --max-lag 0 --source-bootstrap %s` does:", demoMirror, d.a.addr)
	if _, err := d.waitMirror(ctx, mirror, admA, func(f watchFrame) bool { return f.caughtUp(0) }); err != nil {
		return err
	}
	d.printf("B has every record of A (lag 0 against A's end offsets); removing %q from the mirror:", demoTopic)
	began := time.Now()
	if err := d.removeTopic(ctx, mirror); err != nil {
		return err
	}
	if _, err := d.waitMirror(ctx, mirror, nil, func(f watchFrame) bool { return f.allIn(mirroradmin.StateStopped) }); err != nil {
		return err
	}
	d.failedOver = true
	d.printf("Failover complete in %s: %q is writable on B, every partition STOPPED.", time.Since(began).Round(10*time.Millisecond), demoTopic)
	if err := d.compareEnds(ctx, admA, admB); err != nil {
		return err
	}

	d.step(6, "B is the new primary")
	written, err := d.produceOnB(ctx, clB)
	if err != nil {
		return err
	}
	d.printf("a producer wrote 10 records to %q on B: %s", demoTopic, written)
	return d.carryGroupOver(ctx, admA, admB, committed)
}

// startNodes starts A and B side by side.
func (d *demo) startNodes(ctx context.Context) error {
	nodes := []*demoNode{{name: "a"}, {name: "b"}}
	extra := []map[string]string{nil, {"mirror.replication.throttled.rate": strconv.Itoa(demoThrottle)}}
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		n.dir = filepath.Join(d.dir, n.name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = n.start(ctx, extra[i])
		}()
	}
	wg.Wait()
	d.a, d.b = nodes[0], nodes[1]
	return errors.Join(errs...)
}

// start runs the node on two free ports of 127.0.0.1, with its log in
// node.log of its directory.
func (n *demoNode) start(ctx context.Context, extra map[string]string) error {
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(n.dir, "node.log"))
	if err != nil {
		return err
	}
	n.log = logFile
	kl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("cluster %s: %w", n.name, err)
	}
	cl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		kl.Close()
		return fmt.Errorf("cluster %s: %w", n.name, err)
	}
	props := map[string]string{
		"node.id":                   "1",
		"process.roles":             "broker,controller",
		"listeners":                 "PLAINTEXT://" + kl.Addr().String() + ",CONTROLLER://" + cl.Addr().String(),
		"controller.listener.names": "CONTROLLER",
		"controller.quorum.voters":  "1@" + cl.Addr().String(),
		"log.dirs":                  filepath.Join(n.dir, "data"),
		// One node: internal topics of one replica and a few partitions,
		// so that the demo starts in seconds.
		"offsets.topic.replication.factor":         "1",
		"offsets.topic.num.partitions":             "5",
		"transaction.state.log.replication.factor": "1",
		"transaction.state.log.min.isr":            "1",
		"transaction.state.log.num.partitions":     "5",
		"mirror.state.topic.replication.factor":    "1",
		"mirror.state.topic.num.partitions":        "5",
		"group.initial.rebalance.delay.ms":         "0",
		"replica.fetch.wait.max.ms":                "100",
	}
	for k, v := range extra {
		props[k] = v
	}
	cfg, _, err := config.Load("", nil, props)
	if err != nil {
		kl.Close()
		cl.Close()
		return fmt.Errorf("cluster %s: %w", n.name, err)
	}
	logger := slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelInfo})).With("cluster", n.name)
	node, err := server.New(cfg, logger, server.WithListener("PLAINTEXT", kl), server.WithListener("CONTROLLER", cl))
	if err != nil {
		kl.Close()
		cl.Close()
		return fmt.Errorf("cluster %s: %w", n.name, err)
	}
	sctx, cancel := stepContext(ctx)
	defer cancel()
	if err := node.Start(sctx); err != nil {
		return fmt.Errorf("start cluster %s: %w", n.name, err)
	}
	n.node, n.addr = node, kl.Addr().String()
	return nil
}

// stop stops the producer and both nodes and closes their logs.
func (d *demo) stop() error {
	var errs []error
	if d.producer != nil {
		if _, err := d.producer.stop(); err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, fmt.Errorf("producer on A: %w", err))
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, n := range []*demoNode{d.a, d.b} {
		if n == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if n.node != nil {
				ctx, cancel := context.WithTimeout(context.Background(), demoStepTimeout)
				defer cancel()
				if err := n.node.Shutdown(ctx); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("stop cluster %s: %w", n.name, err))
					mu.Unlock()
				}
			}
			if n.log != nil {
				n.log.Close()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (d *demo) createTopic(ctx context.Context, adm *kadm.Client) error {
	sctx, cancel := stepContext(ctx)
	defer cancel()
	resp, err := adm.CreateTopic(sctx, demoPartitions, 1, nil, demoTopic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s on A: %w", demoTopic, err)
	}
	return nil
}

// backlog writes demoBacklog records to A at once.
func (d *demo) backlog(ctx context.Context) error {
	sctx, cancel := stepContext(ctx)
	defer cancel()
	recs := make([]*kgo.Record, demoBacklog)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: demoTopic, Partition: int32(i % demoPartitions),
			Key: []byte("customer-" + strconv.Itoa(i%10)), Value: []byte("backlog order " + strconv.Itoa(i))}
	}
	// Uncompressed, so that the throttle sees the records' real size, and
	// in small batches, which the throttle and the group's small fetches
	// can take one at a time.
	pcl, err := kgo.NewClient(kgo.SeedBrokers(d.a.addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(16<<10))
	if err != nil {
		return err
	}
	defer pcl.Close()
	if err := pcl.ProduceSync(sctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("produce on A: %w", err)
	}
	return nil
}

// compareEnds prints the partitions' end offsets on both clusters after
// the failover.
func (d *demo) compareEnds(ctx context.Context, admA, admB *kadm.Client) error {
	sctx, cancel := stepContext(ctx)
	defer cancel()
	var ends [2]kadm.ListedOffsets
	for i, adm := range []*kadm.Client{admA, admB} {
		l, err := adm.ListEndOffsets(sctx, demoTopic)
		if err == nil {
			err = l.Error()
		}
		if err != nil {
			return fmt.Errorf("end offsets: %w", err)
		}
		ends[i] = l
	}
	var a, b []string
	oneMore := true
	for p := range int32(demoPartitions) {
		ea, _ := ends[0].Lookup(demoTopic, p)
		eb, _ := ends[1].Lookup(demoTopic, p)
		a = append(a, strconv.FormatInt(ea.Offset, 10))
		b = append(b, strconv.FormatInt(eb.Offset, 10))
		oneMore = oneMore && eb.Offset == ea.Offset+1
	}
	d.printf("end offsets of partitions 0-%d: A %s, B %s", demoPartitions-1, strings.Join(a, "/"), strings.Join(b, "/"))
	if oneMore {
		d.printf("one more on B: the failover's barrier, a control batch that consumers never see.")
	}
	return nil
}

// waitProduced waits until the producer has n acknowledged records.
func (d *demo) waitProduced(ctx context.Context, n int64) error {
	sctx, cancel := stepContext(ctx)
	defer cancel()
	select {
	case <-d.producer.reached(n):
		return nil
	case err := <-d.producer.failed:
		return fmt.Errorf("producer on A: %w", err)
	case <-sctx.Done():
		return fmt.Errorf("producer on A: %d records after %s: %w", d.producer.acked.Load(), demoStepTimeout, sctx.Err())
	}
}

func (d *demo) createMirror(ctx context.Context, adm *mirroradmin.Client) error {
	sctx, cancel := stepContext(ctx)
	defer cancel()
	if err := adm.CreateMirror(sctx, demoMirror, map[string]string{"bootstrap.servers": d.a.addr}); err != nil {
		return fmt.Errorf("create mirror %s on B: %w", demoMirror, err)
	}
	rs, err := adm.AddTopics(sctx, demoMirror, demoTopic)
	if err == nil {
		err = rs.Error()
	}
	if err != nil {
		return fmt.Errorf("add %s to mirror %s: %w", demoTopic, demoMirror, err)
	}
	return nil
}

func (d *demo) removeTopic(ctx context.Context, adm *mirroradmin.Client) error {
	sctx, cancel := stepContext(ctx)
	defer cancel()
	rs, err := adm.RemoveTopics(sctx, demoMirror, demoTopic)
	if err == nil {
		err = rs.Error()
	}
	if err != nil {
		return fmt.Errorf("remove %s from mirror %s: %w", demoTopic, demoMirror, err)
	}
	return nil
}

// waitMirror samples the mirror, showing its summary line live, until done
// accepts a frame. With source set, the lags are measured against the
// source's end offsets at each sample, as `mirror wait --source-bootstrap`
// does.
func (d *demo) waitMirror(ctx context.Context, adm *mirroradmin.Client, source *kadm.Client, done func(watchFrame) bool) (watchFrame, error) {
	sctx, cancel := stepContext(ctx)
	defer cancel()
	f := &mirrorFlags{timeout: demoStepTimeout}
	s := f.newSampler(adm, demoMirror, []string{demoTopic})
	s.source = source
	progress := &progressLine{w: d.out, tty: d.tty}
	line := func(fr watchFrame) string { return "      " + fr.Summary.String() }
	frame, err := f.waitFor(sctx, s, demoSampleInterval, progress, line, done)
	if err != nil {
		return frame, fmt.Errorf("mirror %s: %w", demoMirror, err)
	}
	return frame, nil
}

// consumeOnA lets the group read part of every partition on A and commit,
// and returns the committed offsets.
func (d *demo) consumeOnA(ctx context.Context) (map[int32]int64, error) {
	sctx, cancel := stepContext(ctx)
	defer cancel()
	// Small fetches, so that the group moves through the partitions side
	// by side and commits in the middle of each.
	cl, err := kgo.NewClient(kgo.SeedBrokers(d.a.addr), kgo.ConsumerGroup(demoGroup), kgo.ConsumeTopics(demoTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.FetchMaxPartitionBytes(4<<10))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	read, perPartition := 0, map[int32]int{}
	enough := func() bool {
		for p := range int32(demoPartitions) {
			if perPartition[p] < demoGroupReads {
				return false
			}
		}
		return true
	}
	for !enough() {
		fs := cl.PollRecords(sctx, demoGroupReads)
		if err := sctx.Err(); err != nil {
			return nil, fmt.Errorf("consume on A: %d records read: %w", read, err)
		}
		if err := fs.Err(); err != nil {
			return nil, fmt.Errorf("consume on A: %w", err)
		}
		fs.EachRecord(func(r *kgo.Record) { perPartition[r.Partition]++ })
		read += fs.NumRecords()
	}
	if err := cl.CommitUncommittedOffsets(sctx); err != nil {
		return nil, fmt.Errorf("commit on A: %w", err)
	}
	d.printf("read %d records on A", read)
	adm := kadm.NewClient(cl)
	offs, err := adm.FetchOffsets(sctx, demoGroup)
	if err == nil {
		err = offs.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("fetch the group's offsets on A: %w", err)
	}
	committed := map[int32]int64{}
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == demoTopic {
			committed[o.Partition] = o.At
		}
	})
	return committed, nil
}

// produceOnB writes ten records to B, spread over the partitions, and
// describes where they went.
func (d *demo) produceOnB(ctx context.Context, cl *kgo.Client) (string, error) {
	sctx, cancel := stepContext(ctx)
	defer cancel()
	recs := make([]*kgo.Record, 10)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: demoTopic, Partition: int32(i % demoPartitions),
			Key: []byte("customer-" + strconv.Itoa(i)), Value: []byte("written on B after the failover #" + strconv.Itoa(i))}
	}
	pcl, err := kgo.NewClient(kgo.SeedBrokers(d.b.addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return "", err
	}
	defer pcl.Close()
	rs := pcl.ProduceSync(sctx, recs...)
	if err := rs.FirstErr(); err != nil {
		return "", fmt.Errorf("produce on B: %w", err)
	}
	first, last := map[int32]int64{}, map[int32]int64{}
	for _, r := range rs {
		p, o := r.Record.Partition, r.Record.Offset
		if f, ok := first[p]; !ok || o < f {
			first[p] = o
		}
		last[p] = max(last[p], o)
	}
	var parts []string
	for p := range int32(demoPartitions) {
		parts = append(parts, fmt.Sprintf("%s-%d offsets %d-%d", demoTopic, p, first[p], last[p]))
	}
	return strings.Join(parts, ", "), nil
}

// carryGroupOver moves the group to B at the offsets it committed on A and
// lets it read the rest of the topic there.
func (d *demo) carryGroupOver(ctx context.Context, admA, admB *kadm.Client, committed map[int32]int64) error {
	sctx, cancel := stepContext(ctx)
	defer cancel()
	onB := map[int32]int64{}
	if offs, err := admB.FetchOffsets(sctx, demoGroup); err == nil {
		offs.Each(func(o kadm.OffsetResponse) {
			if o.Topic == demoTopic && o.Err == nil && o.At >= 0 {
				onB[o.Partition] = o.At
			}
		})
	}
	synced := len(committed) > 0
	for p, o := range committed {
		synced = synced && onB[p] == o
	}
	switch {
	case synced:
		d.printf("Consumer group %q moves to B: the mirror's group-offset sync already copied the", demoGroup)
		d.printf("offsets it committed on A — the same numbers are the same records on both clusters.")
	default:
		if len(onB) == 0 {
			d.printf("Consumer group %q moves to B. B holds no offsets of the group: the mirror did not", demoGroup)
			d.printf("sync them (this build does not, or its periodic sync had not run yet).")
		} else {
			d.printf("Consumer group %q moves to B. B holds older offsets of the group (%s):", demoGroup, formatOffsets(onB))
			d.printf("the mirror syncs them periodically, and A's last commit came after.")
		}
		d.printf("So the demo commits on B the offsets the group committed on A itself — the same")
		d.printf("numbers are the same records on both clusters.")
		offsets := kadm.Offsets{}
		for p, o := range committed {
			offsets.Add(kadm.Offset{Topic: demoTopic, Partition: p, At: o, LeaderEpoch: -1})
		}
		resp, err := admB.CommitOffsets(sctx, demoGroup, offsets)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			return fmt.Errorf("commit the group's offsets on B: %w", err)
		}
	}
	ends, err := admB.ListEndOffsets(sctx, demoTopic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return fmt.Errorf("end offsets on B: %w", err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(d.b.addr), kgo.ConsumerGroup(demoGroup), kgo.ConsumeTopics(demoTopic), kgo.DisableAutoCommit())
	if err != nil {
		return err
	}
	defer cl.Close()
	firstOn := map[int32]*kgo.Record{}
	next := map[int32]int64{}
	fromA, fromB := 0, 0
	done := func() bool {
		for p := range int32(demoPartitions) {
			if end, _ := ends.Lookup(demoTopic, p); next[p] < end.Offset {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(sctx)
		if err := sctx.Err(); err != nil {
			return fmt.Errorf("consume on B: %w", err)
		}
		if err := fs.Err(); err != nil {
			return fmt.Errorf("consume on B: %w", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if _, ok := firstOn[r.Partition]; !ok {
				firstOn[r.Partition] = r
			}
			next[r.Partition] = r.Offset + 1
			if strings.HasPrefix(string(r.Value), "written on B") {
				fromB++
			} else {
				fromA++
			}
			cl.MarkCommitRecords(r)
		})
	}
	if err := cl.CommitMarkedOffsets(sctx); err != nil {
		return fmt.Errorf("commit on B: %w", err)
	}
	for p := range int32(demoPartitions) {
		r, at := firstOn[p], committed[p]
		if r == nil {
			continue
		}
		same := "written on B after the failover (A's partition ends at the committed offset, where B has its barrier)"
		if onA, err := recordAt(sctx, d.a.addr, p, at); err == nil && onA != nil {
			if string(onA.Value) == string(r.Value) && r.Offset == at {
				same = fmt.Sprintf("the same record as at offset %d on A (%q)", at, r.Value)
			} else {
				same = fmt.Sprintf("NOT the record at offset %d on A (%q on A, %q on B)", at, onA.Value, r.Value)
			}
		}
		d.printf("%s-%d: committed %d on A; the group's first record on B is offset %d, %s", demoTopic, p, at, r.Offset, same)
	}
	d.printf("the group read %d records on B: %d copied from A that it had not read yet, and the %d written on B;", fromA+fromB, fromA, fromB)
	d.printf("it committed its offsets on B.")
	return nil
}

// recordAt reads the record at offset in partition p of the demo topic on
// the cluster at addr; nil when the partition ends before it.
func recordAt(ctx context.Context, addr string, p int32, offset int64) (*kgo.Record, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		demoTopic: {p: kgo.NewOffset().At(offset)},
	}))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, demoTopic)
	if err != nil {
		return nil, err
	}
	if end, ok := ends.Lookup(demoTopic, p); !ok || end.Offset <= offset {
		return nil, nil
	}
	for {
		fs := cl.PollRecords(ctx, 1)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := fs.Err(); err != nil {
			return nil, err
		}
		if rs := fs.Records(); len(rs) > 0 {
			return rs[0], nil
		}
	}
}

// explore prints how to look at both clusters, then waits for Ctrl-C or
// the end of --duration.
func (d *demo) explore(ctx context.Context, start time.Time, duration time.Duration) error {
	a, b := d.a.addr, d.b.addr
	segment := filepath.Join(d.b.dir, "data", demoTopic+"-0", "00000000000000000000.log")
	fmt.Fprintf(d.out, `
Explore the two clusters while they run:
  kcat -b %[1]s -L                                   # A's brokers and topics
  kcat -b %[2]s -C -t %[3]s -o beginning -e -f '%%p %%o %%s\n'   # B's copy, then the writes after the failover
  kmirror topic describe %[3]s --bootstrap-server %[2]s
  kmirror mirror describe %[4]s --bootstrap-server %[2]s
  kmirror consume %[3]s --bootstrap-server %[2]s --from-beginning --print-partition --print-offset --max-messages 20
  kmirror group describe %[5]s --bootstrap-server %[2]s
  kmirror dump-log --print-data %[6]s   # look for the mirrorPidReset barrier
`, a, b, demoTopic, demoMirror, demoGroup, segment)
	if duration > 0 {
		left := time.Until(start.Add(duration))
		if left <= 0 {
			fmt.Fprintln(d.out, "\n--duration has passed.")
			return nil
		}
		fmt.Fprintf(d.out, "\nStopping in %s (--duration %s); Ctrl-C stops now.\n", left.Round(100*time.Millisecond), duration)
		t := time.NewTimer(left)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		return nil
	}
	fmt.Fprintln(d.out, "\nPress Ctrl-C to stop both clusters.")
	<-ctx.Done()
	return nil
}

// formatOffsets prints partition offsets as "orders-0@104, orders-1@98".
func formatOffsets(offs map[int32]int64) string {
	parts := make([]int32, 0, len(offs))
	for p := range offs {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = fmt.Sprintf("%s-%d@%d", demoTopic, p, offs[p])
	}
	return strings.Join(out, ", ")
}

// demoProducer writes to the source steadily until stopped. It owns its
// client and goroutine; stop ends both.
type demoProducer struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
	acked  atomic.Int64
	failed chan error // the first produce error, once

	mu      sync.Mutex
	waiters map[int64][]chan struct{}

	stopOnce sync.Once
	n        int64
	err      error
}

func startDemoProducer(addr string) (*demoProducer, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(demoTopic), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &demoProducer{cl: cl, cancel: cancel, done: make(chan struct{}), failed: make(chan error, 1), waiters: map[int64][]chan struct{}{}}
	go p.loop(ctx)
	return p, nil
}

func (p *demoProducer) loop(ctx context.Context) {
	defer close(p.done)
	tick := time.NewTicker(demoProduceEvery)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rec := &kgo.Record{Key: []byte("customer-" + strconv.Itoa(i%10)), Value: []byte("order " + strconv.Itoa(i))}
		// Not ctx: stop waits for the records in flight instead of
		// failing them.
		p.cl.Produce(context.Background(), rec, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case p.failed <- err:
				default:
				}
				return
			}
			n := p.acked.Add(1)
			p.mu.Lock()
			for at, ws := range p.waiters {
				if n >= at {
					for _, w := range ws {
						close(w)
					}
					delete(p.waiters, at)
				}
			}
			p.mu.Unlock()
		})
	}
}

// reached returns a channel closed once n records are acknowledged.
func (p *demoProducer) reached(n int64) <-chan struct{} {
	ch := make(chan struct{})
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.acked.Load() >= n {
		close(ch)
		return ch
	}
	p.waiters[n] = append(p.waiters[n], ch)
	return ch
}

// stop ends the loop, waits for the records in flight and closes the
// client; it returns how many records were acknowledged. Later calls return
// the same.
func (p *demoProducer) stop() (int64, error) {
	p.stopOnce.Do(func() {
		p.cancel()
		<-p.done
		ctx, cancel := context.WithTimeout(context.Background(), demoStepTimeout)
		defer cancel()
		p.err = p.cl.Flush(ctx)
		p.cl.Close()
		p.n = p.acked.Load()
		select {
		case err := <-p.failed:
			p.err = errors.Join(p.err, err)
		default:
		}
	})
	return p.n, p.err
}
