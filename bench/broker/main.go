// Command broker benchmarks kmirror's produce and consume throughput side by
// side with franz-go's kfake and with the machine's raw limits (loopback TCP
// and disk writes), all in one run, and prints MB/s with the ratios
// kmirror/kfake and kmirror/raw.
//
//	go run ./bench/broker -runs 3
//
// Two load generators drive the brokers (-load): "franz", the franz-go client
// as a user runs it, and "wire", which writes pre-encoded Produce requests
// and raw Fetch requests over several connections with requests pipelined,
// decoding nothing, so that the broker rather than the client is what limits
// the figure (franz-go alone tops out below half of the raw limits on a
// small machine).
//
// Each cell is the median of -runs runs, with ± half the run-to-run spread;
// ratios are of the medians, with the range of the per-run ratios. The raw
// column for produce is the lower of loopback TCP and disk write bandwidth (a
// produced byte crosses both); for consume it is loopback TCP.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kmirror/kmirror/bench/internal/pagecache"
)

// options are the command-line settings of one benchmark invocation.
type options struct {
	runs        int
	records     int
	size        int
	partitions  int
	targets     []string
	kmirrorAddr string
	dir         string
	cpuProfile  string
	caseTimeout time.Duration

	acks       []string // "1", "all"
	lz4        []bool
	loads      []string // "franz", "wire"
	wireMB     int      // record value MB per wire produce measurement
	wireBatch  int      // records per batch of the wire generator
	wireConns  int      // connections of the wire produce generator
	wireWindow int      // requests in flight per wire produce connection
	fetchConns int      // connections of the raw fetch loop
	prime      bool     // prime the page cache before every produce measurement
	checkFlags bool     // only parse and validate the flags
}

func parseFlags() (options, error) {
	var o options
	var targets, loads, acks, lz4 string
	flag.IntVar(&o.runs, "runs", 3, "how many times to repeat every measurement")
	flag.IntVar(&o.records, "records", 100_000, "records per produce measurement")
	flag.IntVar(&o.size, "size", 1024, "record value size in bytes")
	flag.IntVar(&o.partitions, "partitions", 8, "partitions of every benchmark topic")
	flag.StringVar(&targets, "targets", "kmirror,kfake,raw,ceiling", "what to measure: kmirror, kfake, raw, ceiling (franz-go producing to a broker that discards the records, and decoding fetched batches with no broker)")
	flag.StringVar(&o.kmirrorAddr, "kmirror-addr", "", "measure an already running kmirror at this address instead of an in-process node")
	flag.StringVar(&o.dir, "dir", "", "directory for broker data and the raw disk test (default: a temporary directory)")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.DurationVar(&o.caseTimeout, "case-timeout", 5*time.Minute, "give up on one measurement after this long")
	flag.StringVar(&loads, "load", "franz,wire", "load generators: franz (the franz-go client), wire (pre-encoded requests pipelined over several connections, and a raw fetch loop)")
	flag.IntVar(&o.wireMB, "wire-mb", 1000, "record value MB per wire produce measurement")
	flag.IntVar(&o.wireBatch, "wire-batch", 32, "records per batch of the wire generator (one batch per partition in every request)")
	flag.IntVar(&o.wireConns, "wire-conns", 4, "connections of the wire produce generator")
	flag.IntVar(&o.wireWindow, "wire-window", 4, "requests in flight per wire produce connection")
	flag.IntVar(&o.fetchConns, "fetch-conns", 4, "connections of the raw fetch loop (each reads its share of the partitions, one request in flight)")
	flag.StringVar(&acks, "acks", "1,all", "acks of the produce workloads (consume rows need all)")
	flag.StringVar(&lz4, "lz4", "off,on", "lz4 compression of the workloads: off, on or both")
	flag.BoolVar(&o.checkFlags, "check-flags", false, "parse and validate the flags, then exit without measuring (the docs test checks every documented command this way)")
	flag.BoolVar(&o.prime, "prime", true, "write and delete a scratch file of a measurement's volume right before each produce and raw disk measurement, so that each finds recently freed memory (see pagecache.Prime)")
	flag.Parse()
	if flag.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	o.targets = strings.Split(targets, ",")
	for _, t := range o.targets {
		if !slices.Contains([]string{"kmirror", "kfake", "raw", "ceiling"}, t) {
			return o, fmt.Errorf("unknown target %q in -targets", t)
		}
	}
	for _, a := range strings.Split(acks, ",") {
		if a != "1" && a != "all" {
			return o, fmt.Errorf("unknown acks %q in -acks: want 1 or all", a)
		}
		o.acks = append(o.acks, a)
	}
	for _, c := range strings.Split(lz4, ",") {
		if c != "off" && c != "on" {
			return o, fmt.Errorf("unknown value %q in -lz4: want off or on", c)
		}
		o.lz4 = append(o.lz4, c == "on")
	}
	o.loads = strings.Split(loads, ",")
	for _, l := range o.loads {
		if !slices.Contains([]string{"franz", "wire"}, l) {
			return o, fmt.Errorf("unknown load %q in -load", l)
		}
	}
	if o.runs < 1 || o.records < 1 || o.size < 64 || o.partitions < 1 {
		return o, errors.New("-runs, -records, -partitions must be at least 1 and -size at least 64")
	}
	if o.wireMB < 1 || o.wireBatch < 1 || o.wireConns < 1 || o.wireWindow < 1 || o.fetchConns < 1 {
		return o, errors.New("-wire-mb, -wire-batch, -wire-conns, -wire-window and -fetch-conns must be at least 1")
	}
	return o, nil
}

func main() {
	o, err := parseFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}
	if o.checkFlags {
		return
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if o.dir == "" {
		d, err := os.MkdirTemp("", "kmirror-bench-*")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		o.dir = d
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	var workloads []workload
	for _, lz4 := range o.lz4 {
		for _, acks := range o.acks {
			workloads = append(workloads, workload{acks: acks, lz4: lz4, partitions: int32(o.partitions), records: o.records, size: o.size})
		}
	}
	values := payloads(1024, o.size)
	rows := newRowSet(o, workloads)
	var batches map[bool]produceBatches
	if slices.Contains(o.loads, "wire") {
		batches = map[bool]produceBatches{}
		for _, lz4 := range []bool{false, true} {
			pb, err := encodeProduceBatches(int32(o.partitions), o.wireBatch, values, lz4)
			if err != nil {
				return err
			}
			batches[lz4] = pb
		}
	}
	total := int64(o.records) * int64(o.size)
	wireTotal := int64(o.wireMB) * 1e6

	for r := 1; r <= o.runs; r++ {
		logger.Info("run", "n", r, "of", o.runs)
		if err := measureRun(o, r, workloads, values, batches, rows, logger); err != nil {
			return err
		}
	}

	fmt.Printf("\n%d runs; %d partitions; GOMAXPROCS=%d, %s, %s\n", o.runs, o.partitions, runtime.GOMAXPROCS(0), runtime.Version(), cpuModel())
	if slices.Contains(o.loads, "franz") {
		fmt.Printf("franz: %d records of %d bytes per produce (%.0f MB of values) through franz-go\n", o.records, o.size, float64(total)/1e6)
	}
	if batches != nil {
		fmt.Printf("wire: %.0f MB of values per produce; requests of %d batches of %d records (%d KiB uncompressed, %d KiB lz4), %d connections x %d in flight; fetch over %d connection(s)\n",
			float64(wireTotal)/1e6, o.partitions, o.wireBatch, batches[false].bytes()>>10, batches[true].bytes()>>10, o.wireConns, o.wireWindow, o.fetchConns)
	}
	fmt.Println()
	return writeReport(os.Stdout, rows.all())
}

// rowSet is the report's rows, found by what they measure.
type rowSet struct {
	produce, wireProduce map[workload]*row
	consume, wireConsume map[bool]*row // by lz4
	ordered              []*row
	// raw holds the rows of the raw measurements themselves by name, in
	// rawOrder.
	raw      map[string]*row
	rawOrder []string
}

func newRowSet(o options, workloads []workload) *rowSet {
	rs := &rowSet{
		produce: map[workload]*row{}, wireProduce: map[workload]*row{},
		consume: map[bool]*row{}, wireConsume: map[bool]*row{},
		raw: map[string]*row{},
	}
	consumeName := func(lz4 bool) string {
		w := workload{acks: "all", lz4: lz4, partitions: int32(o.partitions)}
		return strings.Replace(w.String(), "acks=all", "        ", 1)
	}
	if slices.Contains(o.loads, "franz") {
		for _, w := range workloads {
			rs.produce[w] = &row{name: "produce " + w.String()}
			rs.ordered = append(rs.ordered, rs.produce[w])
		}
		for _, lz4 := range o.lz4 {
			rs.consume[lz4] = &row{name: "consume " + consumeName(lz4)}
			rs.ordered = append(rs.ordered, rs.consume[lz4])
		}
	}
	if slices.Contains(o.loads, "wire") {
		for _, w := range workloads {
			rs.wireProduce[w] = &row{name: "wire produce " + w.String()}
			rs.ordered = append(rs.ordered, rs.wireProduce[w])
		}
		for _, lz4 := range o.lz4 {
			rs.wireConsume[lz4] = &row{name: "wire consume " + consumeName(lz4)}
			rs.ordered = append(rs.ordered, rs.wireConsume[lz4])
		}
	}
	return rs
}

// rawRow returns the row of the raw measurement name, creating it.
func (rs *rowSet) rawRow(name string) *row {
	r, ok := rs.raw[name]
	if !ok {
		r = &row{name: name}
		rs.raw[name] = r
		rs.rawOrder = append(rs.rawOrder, name)
	}
	return r
}

// all is every row in report order.
func (rs *rowSet) all() []*row {
	out := slices.Clone(rs.ordered)
	for _, name := range rs.rawOrder {
		out = append(out, rs.raw[name])
	}
	return out
}

// measureRaw measures the machine's limits for total bytes, beside a
// workload's broker measurements, and gives that workload's rows their raw
// figures: produce (pr) the lower of loopback and disk, since a produced
// byte crosses both, and the relay (both in a row on the same cores);
// consume (cr, nil if none) loopback. Loopback is the better of one
// connection and as many as the wire generator uses.
//
// piece, if not 0, is the size of the batches the broker writes in this
// workload: the disk write is then also measured in pieces of that size
// spread over the topic's partitions (diskWritePieces), for information.
func measureRaw(o options, total int64, piece int, pr, cr *row, rs *rowSet, logger *slog.Logger) error {
	// timed runs one raw measurement and logs its figure with the cores it
	// kept busy.
	cpu := map[string][2]cpuSample{} // by what: the samples around it
	timed := func(what string, f func() (float64, error)) (float64, error) {
		before := sampleCPU()
		v, err := f()
		if err != nil {
			return 0, fmt.Errorf("%s: %w", what, err)
		}
		after := sampleCPU()
		cpu[what] = [2]cpuSample{before, after}
		logger.Info("raw", append([]any{"what", what, "MB", total / 1e6, "MB/s", fmt.Sprintf("%.1f", v)}, cpuAttrs(before, after)...)...)
		return v, nil
	}
	loop1What, loopNWhat := "loopback, 1 connection", fmt.Sprintf("loopback, %d connections", o.wireConns)
	diskWhat := "disk write"
	piecesWhat := fmt.Sprintf("disk write in %d-byte pieces over %d files", piece, o.partitions)
	relayWhat := fmt.Sprintf("relay loopback -> disk, %d connections", o.wireConns)
	loop1, err := timed(loop1What, func() (float64, error) { return loopbackTCP(total, 1, rawChunk) })
	if err != nil {
		return err
	}
	loopN, err := timed(loopNWhat, func() (float64, error) {
		return loopbackTCP(total, o.wireConns, rawChunk)
	})
	if err != nil {
		return err
	}
	if err := o.settle(total); err != nil {
		return err
	}
	// The fsync'ed figure is for information; at the wire generator's
	// volume it would write gigabytes to the shared machine's disk each
	// time, so only the smaller franz-go volume gets it.
	sync := total <= int64(o.records)*int64(o.size)
	var withSync float64
	noSync, err := timed(diskWhat, func() (float64, error) {
		v, s, err := diskWrite(o.dir, total, sync)
		withSync = s
		return v, err
	})
	if err != nil {
		return err
	}
	var pieces float64
	if piece > 0 {
		if err := o.settle(total); err != nil {
			return err
		}
		pieces, err = timed(piecesWhat, func() (float64, error) {
			return diskWritePieces(o.dir, total, piece, o.partitions)
		})
		if err != nil {
			return err
		}
	}
	if err := o.settle(total); err != nil {
		return err
	}
	relay, err := timed(relayWhat, func() (float64, error) {
		return relayTCPToDisk(o.dir, total, o.wireConns)
	})
	if err != nil {
		return err
	}
	mb := fmt.Sprintf(", %.0f MB", float64(total)/1e6)
	// add gives a raw row its figure and, when the measurement is its own
	// (what != ""), its CPU cost per GB.
	add := func(name, what string, v float64) {
		r := rs.rawRow(name + mb)
		r.raw = append(r.raw, v)
		if c, ok := cpu[what]; ok {
			r.addCPUPerGB(c[0], c[1], total)
		}
	}
	add("raw loopback TCP, 1 connection", loop1What, loop1)
	add(fmt.Sprintf("raw loopback TCP, %d connections", o.wireConns), loopNWhat, loopN)
	// With sync, the write's samples also span the final fsync, whose wait
	// for the disk is not CPU time.
	add("raw disk write, no fsync", diskWhat, noSync)
	if sync {
		add("raw disk write + final fsync", "", withSync)
	}
	if piece > 0 {
		add(fmt.Sprintf("raw disk write, batch-sized (%d B) over %d files", piece, o.partitions), piecesWhat, pieces)
	}
	add(fmt.Sprintf("raw relay loopback -> disk, %d connections", o.wireConns), relayWhat, relay)
	loop := max(loop1, loopN)
	pr.raw = append(pr.raw, min(loop, noSync))
	pr.relay = append(pr.relay, relay)
	if cr != nil {
		cr.raw = append(cr.raw, loop)
	}
	return nil
}

// settle puts the process and the machine in the same state before every
// produce and raw disk measurement of n bytes. The heap is collected and
// its free memory returned to the kernel: the brokers, the clients and the
// generators share this process, and a heap left large by an earlier
// measurement (kfake keeps a whole topic in memory) made the next one's
// allocations free of page faults, so that kfake's franz-go produce ran
// ~1.5x faster late in an invocation than early. Then, with -prime, the
// page cache is primed (pagecache.Prime).
func (o options) settle(n int64) error {
	debug.FreeOSMemory()
	if !o.prime {
		return nil
	}
	return pagecache.Prime(o.dir, n)
}

// startTarget starts broker name for run r.
func startTarget(name string, o options, r int) (target, error) {
	switch name {
	case "kfake":
		return startKfake()
	case "ceiling":
		return startKfake(kfake.BlackholeProduce())
	case "kmirror":
		if o.kmirrorAddr != "" {
			return externalTarget{o.kmirrorAddr}, nil
		}
		quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		return startKmirror(fmt.Sprintf("%s/kmirror-run%d", o.dir, r), quiet)
	}
	return nil, fmt.Errorf("unknown target %q", name)
}

// measureRun starts a fresh broker of every target and measures each
// workload on all of them and the raw limits back to back, so that the
// cells compared in one row ran under the same background load (this
// machine is shared, and its page cache's speed changes with what ran just
// before). The order rotates from one workload and run to the next, so that
// no target is always measured first or last.
func measureRun(o options, r int, workloads []workload, values [][]byte, batches map[bool]produceBatches,
	rs *rowSet, logger *slog.Logger) (err error) {
	targets := map[string]target{}
	defer func() {
		for name, t := range targets {
			if cerr := t.close(); cerr != nil && err == nil {
				err = fmt.Errorf("%s: close: %w", name, cerr)
			}
		}
	}()
	var names []string
	for _, name := range o.targets {
		if name == "raw" {
			continue
		}
		t, err := startTarget(name, o, r)
		if err != nil {
			return err
		}
		targets[name] = t
		names = append(names, name)
	}
	for _, name := range names {
		if err := warmUp(targets[name], workloads[0], values, o); err != nil {
			return fmt.Errorf("%s: warm-up: %w", name, err)
		}
	}
	if slices.Contains(o.targets, "raw") {
		names = append(names, "raw")
	}
	turn := r
	if slices.Contains(o.loads, "franz") {
		for i, w := range workloads {
			for _, name := range rotate(names, turn) {
				var err error
				if name == "raw" {
					err = measureRaw(o, w.bytes(), 0, rs.produce[w], consumeRow(rs.consume, w), rs, logger)
				} else {
					err = measureWorkload(targets[name], name, i, w, values, o, rs, logger)
				}
				if err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
			}
			turn++
		}
	}
	if batches != nil {
		for i, w := range workloads {
			for _, name := range rotate(names, turn) {
				var err error
				if name == "raw" {
					err = measureRaw(o, int64(o.wireMB)*1e6, len(batches[w.lz4].batches[0]), rs.wireProduce[w], consumeRow(rs.wireConsume, w), rs, logger)
				} else {
					err = measureWire(targets[name], name, i, w, batches[w.lz4], o, rs, logger)
				}
				if err != nil {
					return fmt.Errorf("%s: wire: %w", name, err)
				}
			}
			turn++
		}
	}
	return nil
}

// consumeRow is the consume row measured after w's produce, nil if w is
// not consumed (only acks=all topics are).
func consumeRow(rows map[bool]*row, w workload) *row {
	if w.acks != "all" {
		return nil
	}
	return rows[w.lz4]
}

// rotate returns names starting at element k (modulo their number).
func rotate(names []string, k int) []string {
	if len(names) == 0 {
		return nil
	}
	k %= len(names)
	return append(slices.Clone(names[k:]), names[:k]...)
}

// warmUp produces a fifth of w's records into a throwaway topic of a fresh
// broker, untimed. A broker's first seconds are not its steady state (a
// small heap collected often, empty buffer pools, a new node's own metadata
// writes): without this, whichever workload came first measured low on a
// fresh kmirror node.
func warmUp(t target, w workload, values [][]byte, o options) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.caseTimeout)
	defer cancel()
	topic := fmt.Sprintf("bench-warmup-%d", time.Now().UnixNano())
	if err := createTopic(ctx, t.bootstrap(), topic, w.partitions); err != nil {
		return err
	}
	w.records = max(w.records/5, 1)
	if _, err := produce(ctx, t.bootstrap(), topic, w, values); err != nil {
		return err
	}
	return deleteTopic(ctx, t.bootstrap(), topic)
}

// measureWorkload produces w into a fresh topic of one broker, consumes it
// back (acks=all workloads), and deletes the topic.
func measureWorkload(t target, name string, i int, w workload, values [][]byte, o options, rs *rowSet, logger *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.caseTimeout)
	defer cancel()
	topic := fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), i)
	if err := createTopic(ctx, t.bootstrap(), topic, w.partitions); err != nil {
		return err
	}
	if err := o.settle(w.bytes()); err != nil {
		return err
	}
	p, err := produce(ctx, t.bootstrap(), topic, w, values)
	if err != nil {
		return fmt.Errorf("produce %s: %w", w, err)
	}
	logger.Info("produce", "target", name, "workload", w.String(), "MB/s", fmt.Sprintf("%.1f", p))
	pr := rs.produce[w]
	switch name {
	case "ceiling":
		// Nothing was stored, so there is nothing to consume.
		pr.ceiling = append(pr.ceiling, p)
		return deleteTopic(ctx, t.bootstrap(), topic)
	case "kmirror":
		pr.kmirror = append(pr.kmirror, p)
	default:
		pr.kfake = append(pr.kfake, p)
	}
	if w.acks == "all" {
		c, err := consume(ctx, t.bootstrap(), topic, w.records+1, w.bytes())
		if err != nil {
			return fmt.Errorf("consume %s: %w", w, err)
		}
		logger.Info("consume", "target", name, "workload", w.String(), "MB/s", fmt.Sprintf("%.1f", c))
		cr := rs.consume[w.lz4]
		if name == "kmirror" {
			cr.kmirror = append(cr.kmirror, c)
		} else {
			cr.kfake = append(cr.kfake, c)
		}
		if name == decodeOn(o.targets) {
			d, err := clientDecode(ctx, t.bootstrap(), topic, w.partitions, w.records+1, w.bytes())
			if err != nil {
				return fmt.Errorf("client decode %s: %w", w, err)
			}
			logger.Info("client decode", "workload", w.String(), "MB/s", fmt.Sprintf("%.1f", d))
			cr.ceiling = append(cr.ceiling, d)
		}
	}
	return deleteTopic(ctx, t.bootstrap(), topic)
}

// measureWire measures w with the wire generator on one broker: produce
// into a fresh topic and, for acks=all, the raw fetch loop reading it back,
// then deletes the topic. On the "ceiling" target the generator writes to a
// produceSink instead (a kfake blackhole broker would be measured through
// kfake's request decoding, not only the generator's).
func measureWire(t target, name string, i int, w workload, pb produceBatches, o options, rs *rowSet, logger *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.caseTimeout)
	defer cancel()
	acks := int16(1)
	if w.acks == "all" {
		acks = -1
	}
	topic := fmt.Sprintf("bench-wire-%d-%d", time.Now().UnixNano(), i)
	requests := int((int64(o.wireMB)*1e6 + pb.payload - 1) / pb.payload)
	load := newProduceLoad(topic, acks, pb)
	pr := rs.wireProduce[w]
	if name == "ceiling" {
		sink, err := startProduceSink(topic, w.partitions)
		if err != nil {
			return err
		}
		if err := o.settle(int64(requests) * load.payload); err != nil {
			return errors.Join(err, sink.close())
		}
		before := sampleCPU()
		p, err := wireProduce(ctx, sink.addr(), load, requests, o.wireConns, o.wireWindow)
		after := sampleCPU()
		if cerr := sink.close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("produce %s to a sink: %w", w, err)
		}
		logger.Info("wire produce", append([]any{"target", name, "workload", w.String(), "MB/s", fmt.Sprintf("%.1f", p)},
			cpuAttrs(before, after)...)...)
		pr.ceiling = append(pr.ceiling, p)
		return nil
	}
	if err := createTopic(ctx, t.bootstrap(), topic, w.partitions); err != nil {
		return err
	}
	// The generator writes every partition through the first bootstrap
	// broker: a single-node cluster (a partition led elsewhere fails the
	// run with NOT_LEADER_OR_FOLLOWER).
	addr, _, _ := strings.Cut(t.bootstrap(), ",")
	if err := o.settle(int64(requests) * load.payload); err != nil {
		return err
	}
	before := sampleCPU()
	p, err := wireProduce(ctx, addr, load, requests, o.wireConns, o.wireWindow)
	if err != nil {
		return fmt.Errorf("produce %s: %w", w, err)
	}
	after := sampleCPU()
	logger.Info("wire produce", append([]any{"target", name, "workload", w.String(), "MB/s", fmt.Sprintf("%.1f", p)},
		cpuAttrs(before, after)...)...)
	if name == "kmirror" {
		pr.kmirror = append(pr.kmirror, p)
		pr.addCores(before, after, int64(requests)*load.payload)
	} else {
		pr.kfake = append(pr.kfake, p)
	}
	if w.acks == "all" {
		ends := make([]int64, w.partitions)
		for q := range ends {
			ends[q] = int64(requests) * int64(pb.records)
		}
		before := sampleCPU()
		d, err := wireFetch(ctx, addr, topic, ends, o.fetchConns)
		if err != nil {
			return fmt.Errorf("fetch %s: %w", w, err)
		}
		after := sampleCPU()
		c := mbps(int64(requests)*load.payload, d)
		logger.Info("wire consume", append([]any{"target", name, "workload", w.String(), "MB/s", fmt.Sprintf("%.1f", c)},
			cpuAttrs(before, after)...)...)
		cr := rs.wireConsume[w.lz4]
		if name == "kmirror" {
			cr.kmirror = append(cr.kmirror, c)
			cr.addCores(before, after, int64(requests)*load.payload)
		} else {
			cr.kfake = append(cr.kfake, c)
		}
	}
	return deleteTopic(ctx, t.bootstrap(), topic)
}

// decodeOn names the target whose topics the consume rows' client ceiling
// (clientDecode) is measured on, "" if the ceiling is not wanted: any
// stored copy of the records will do, the decoding does not involve the
// broker.
func decodeOn(targets []string) string {
	if !slices.Contains(targets, "ceiling") {
		return ""
	}
	for _, t := range []string{"kmirror", "kfake"} {
		if slices.Contains(targets, t) {
			return t
		}
	}
	return ""
}

// cpuAttrs are log fields saying how many cores were busy between two
// samples (cpuUse), nothing where /proc cannot be read.
func cpuAttrs(from, to cpuSample) []any {
	self, others, steal, ok := cpuUse(from, to)
	if !ok {
		return nil
	}
	return []any{"cores_self", fmt.Sprintf("%.2f", self), "cores_others", fmt.Sprintf("%.2f", others),
		"cores_stolen", fmt.Sprintf("%.2f", steal)}
}

// cpuModel names the processor for the report header.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}
