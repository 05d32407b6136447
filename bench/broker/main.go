// Command broker benchmarks kmirror's produce and consume throughput side by
// side with franz-go's kfake and with the machine's raw limits (loopback TCP
// and disk writes), all in one run and through the same franz-go client, and
// prints MB/s with the ratios kmirror/kfake and kmirror/raw.
//
//	go run ./bench/broker -runs 3
//
// Each cell is the median of -runs runs, with ± half the run-to-run spread.
// The raw column for produce is the lower of loopback TCP and disk write
// bandwidth (a produced byte crosses both); for consume it is loopback TCP.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
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
}

func parseFlags() (options, error) {
	var o options
	var targets string
	flag.IntVar(&o.runs, "runs", 3, "how many times to repeat every measurement")
	flag.IntVar(&o.records, "records", 100_000, "records per produce measurement")
	flag.IntVar(&o.size, "size", 1024, "record value size in bytes")
	flag.IntVar(&o.partitions, "partitions", 8, "partitions of every benchmark topic")
	flag.StringVar(&targets, "targets", "kmirror,kfake,raw,ceiling", "what to measure: kmirror, kfake, raw, ceiling (franz-go producing to a broker that discards the records, and decoding fetched batches with no broker)")
	flag.StringVar(&o.kmirrorAddr, "kmirror-addr", "", "measure an already running kmirror at this address instead of an in-process node")
	flag.StringVar(&o.dir, "dir", "", "directory for broker data and the raw disk test (default: a temporary directory)")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.DurationVar(&o.caseTimeout, "case-timeout", 5*time.Minute, "give up on one measurement after this long")
	flag.Parse()
	o.targets = strings.Split(targets, ",")
	for _, t := range o.targets {
		if !slices.Contains([]string{"kmirror", "kfake", "raw", "ceiling"}, t) {
			return o, fmt.Errorf("unknown target %q in -targets", t)
		}
	}
	if o.runs < 1 || o.records < 1 || o.size < 64 || o.partitions < 1 {
		return o, errors.New("-runs, -records, -partitions must be at least 1 and -size at least 64")
	}
	return o, nil
}

func main() {
	o, err := parseFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
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

	workloads := []workload{}
	for _, lz4 := range []bool{false, true} {
		for _, acks := range []string{"1", "all"} {
			workloads = append(workloads, workload{acks: acks, lz4: lz4, partitions: int32(o.partitions), records: o.records, size: o.size})
		}
	}
	values := payloads(1024, o.size)
	produceRows := map[workload]*row{}
	consumeRows := map[bool]*row{}
	var rows []*row
	for _, w := range workloads {
		produceRows[w] = &row{name: "produce " + w.String()}
		rows = append(rows, produceRows[w])
	}
	for _, lz4 := range []bool{false, true} {
		w := workload{acks: "all", lz4: lz4, partitions: int32(o.partitions)}
		consumeRows[lz4] = &row{name: "consume " + strings.Replace(w.String(), "acks=all", "        ", 1)}
		rows = append(rows, consumeRows[lz4])
	}
	loopRow := &row{name: "raw loopback TCP"}
	diskRow := &row{name: "raw disk write, no fsync"}
	syncRow := &row{name: "raw disk write + final fsync"}
	total := int64(o.records) * int64(o.size)

	for r := 1; r <= o.runs; r++ {
		logger.Info("run", "n", r, "of", o.runs)
		if slices.Contains(o.targets, "raw") {
			loop, err := loopbackTCP(total)
			if err != nil {
				return fmt.Errorf("loopback: %w", err)
			}
			noSync, withSync, err := diskWrite(o.dir, total)
			if err != nil {
				return fmt.Errorf("disk: %w", err)
			}
			loopRow.raw = append(loopRow.raw, loop)
			diskRow.raw = append(diskRow.raw, noSync)
			syncRow.raw = append(syncRow.raw, withSync)
			for _, w := range workloads {
				produceRows[w].raw = append(produceRows[w].raw, min(loop, noSync))
			}
			for _, cr := range consumeRows {
				cr.raw = append(cr.raw, loop)
			}
		}
		if err := measureRun(o, r, workloads, values, produceRows, consumeRows, logger); err != nil {
			return err
		}
	}

	fmt.Printf("\n%d runs; %d records of %d bytes per produce (%.0f MB payload), %d partitions; GOMAXPROCS=%d, %s, %s\n\n",
		o.runs, o.records, o.size, float64(total)/1e6, o.partitions, runtime.GOMAXPROCS(0), runtime.Version(), cpuModel())
	return writeReport(os.Stdout, append(rows, loopRow, diskRow, syncRow))
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
// workload on all of them back to back, so that the brokers compared in one
// row ran under the same background load (this machine is shared).
func measureRun(o options, r int, workloads []workload, values [][]byte,
	produceRows map[workload]*row, consumeRows map[bool]*row, logger *slog.Logger) (err error) {
	targets := map[string]target{}
	defer func() {
		for name, t := range targets {
			if cerr := t.close(); cerr != nil && err == nil {
				err = fmt.Errorf("%s: close: %w", name, cerr)
			}
		}
	}()
	for _, name := range o.targets {
		if name == "raw" {
			continue
		}
		t, err := startTarget(name, o, r)
		if err != nil {
			return err
		}
		targets[name] = t
	}
	for _, name := range o.targets {
		if t, ok := targets[name]; ok {
			if err := warmUp(t, workloads[0], values, o); err != nil {
				return fmt.Errorf("%s: warm-up: %w", name, err)
			}
		}
	}
	for i, w := range workloads {
		for _, name := range o.targets {
			t, ok := targets[name]
			if !ok {
				continue
			}
			if err := measureWorkload(t, name, i, w, values, o, produceRows, consumeRows, logger); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	return nil
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
func measureWorkload(t target, name string, i int, w workload, values [][]byte, o options,
	produceRows map[workload]*row, consumeRows map[bool]*row, logger *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.caseTimeout)
	defer cancel()
	topic := fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), i)
	if err := createTopic(ctx, t.bootstrap(), topic, w.partitions); err != nil {
		return err
	}
	p, err := produce(ctx, t.bootstrap(), topic, w, values)
	if err != nil {
		return fmt.Errorf("produce %s: %w", w, err)
	}
	logger.Info("produce", "target", name, "workload", w.String(), "MB/s", fmt.Sprintf("%.1f", p))
	pr := produceRows[w]
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
		cr := consumeRows[w.lz4]
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
