// Command mirror benchmarks kmirror's cluster mirroring side by side, in one
// run: a source node A holds a topic pre-filled with lz4 batches of 1 KiB
// records, and each run measures
//
//   - fetch:    raw Fetch requests reading the whole topic from A, one in
//     flight, without decoding a record (what A serves to one sequential
//     fetcher);
//   - consumer: a franz-go consumer reading the whole topic from A (the
//     fetch limit a user sees: no copy can be much faster than reading
//     the source);
//   - mirror:   a fresh node B mirroring the topic, from the
//     AddTopicsToMirror request until B's log ends equal A's (the mirror
//     itself is created first, untimed: the first mirror of a cluster
//     also creates __mirror_state);
//   - copier:   a MirrorMaker-style consume-then-produce copier written with
//     franz-go, from A into a fresh node C;
//
// and, on B, the time a failover of a 100-partition mirrored topic takes
// (RemoveTopicsFromMirror until every partition is STOPPED).
//
//	go run ./bench/mirror -runs 3 -mib 2048
//
// Each figure is the median of the runs with ± half the run-to-run spread;
// the ratios are medians of the per-run ratios (cells of one run were
// measured seconds apart, under the same background load).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"
)

// options are the command-line settings of one invocation.
type options struct {
	runs           int
	mib            int
	size           int
	partitions     int
	failoverParts  int
	targets        []string
	dir            string
	bConfig        map[string]string
	cpuProfile     string
	mirrorProfile  string
	caseTimeout    time.Duration
	failoverRecord int
	nodeLog        slog.Level
	checkFlags     bool // only parse and validate the flags
}

var allTargets = []string{"fetch", "consumer", "mirror", "copier", "failover"}

func parseFlags() (options, error) {
	var o options
	var targets, bcfg string
	flag.IntVar(&o.runs, "runs", 3, "how many times to repeat every measurement")
	flag.IntVar(&o.mib, "mib", 2048, "MiB of record values in the source topic (uncompressed)")
	flag.IntVar(&o.size, "size", 1024, "record value size in bytes")
	flag.IntVar(&o.partitions, "partitions", 8, "partitions of the source topic")
	flag.IntVar(&o.failoverParts, "failover-partitions", 100, "partitions of the topic failed over")
	flag.IntVar(&o.failoverRecord, "failover-records", 10_000, "records in the topic failed over")
	flag.StringVar(&targets, "targets", strings.Join(allTargets, ","), "what to measure: "+strings.Join(allTargets, ", "))
	flag.StringVar(&o.dir, "dir", "", "directory for the nodes' data (default: a temporary directory)")
	flag.StringVar(&bcfg, "b-config", "", "extra broker properties of the mirroring node B, KEY=VALUE,...")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole invocation to this file")
	flag.StringVar(&o.mirrorProfile, "mirror-cpuprofile", "", "write a CPU profile of the first run's mirror catch-up to this file")
	flag.TextVar(&o.nodeLog, "node-log", slog.LevelWarn, "least level of the nodes' logs printed (debug, info, warn, error)")
	flag.DurationVar(&o.caseTimeout, "case-timeout", 10*time.Minute, "give up on one measurement after this long")
	flag.BoolVar(&o.checkFlags, "check-flags", false, "parse and validate the flags, then exit without measuring (the docs test checks every documented command this way)")
	flag.Parse()
	if flag.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	o.targets = strings.Split(targets, ",")
	for _, t := range o.targets {
		if !slices.Contains(allTargets, t) {
			return o, fmt.Errorf("unknown target %q in -targets", t)
		}
	}
	o.bConfig = map[string]string{}
	for kv := range strings.SplitSeq(bcfg, ",") {
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return o, fmt.Errorf("-b-config %q: want KEY=VALUE", kv)
		}
		o.bConfig[k] = v
	}
	if o.runs < 1 || o.mib < 1 || o.size < 64 || o.partitions < 1 || o.failoverParts < 1 {
		return o, fmt.Errorf("-runs, -mib, -partitions, -failover-partitions must be at least 1 and -size at least 64")
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

const (
	topic         = "bulk"
	failoverTopic = "many"
)

func run(o options) (err error) {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: o.nodeLog}))
	if o.dir == "" {
		d, err := os.MkdirTemp("", "kmirror-bench-mirror-*")
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
	ctx, cancel := context.WithTimeout(context.Background(), o.caseTimeout)
	defer cancel()

	a, err := startNode("A", filepath.Join(o.dir, "a"), nil, quiet)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := a.close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	records := o.mib << 20 / o.size
	payload := int64(records) * int64(o.size)
	values := payloads(1024, o.size)
	if err := createTopic(ctx, a.addr, topic, int32(o.partitions)); err != nil {
		return err
	}
	start := time.Now()
	if err := fill(ctx, a.addr, topic, records, values); err != nil {
		return fmt.Errorf("fill %s: %w", topic, err)
	}
	ends := endOffsets(a, topic, int32(o.partitions))
	onDisk := a.logSize(topic, int32(o.partitions))
	logger.Info("source filled", "records", records, "payload_MB", payload/1e6, "on_disk_MB", onDisk/1e6,
		"took", time.Since(start).Round(time.Millisecond))
	if slices.Contains(o.targets, "failover") {
		if err := createTopic(ctx, a.addr, failoverTopic, int32(o.failoverParts)); err != nil {
			return err
		}
		if err := fill(ctx, a.addr, failoverTopic, o.failoverRecord, values); err != nil {
			return fmt.Errorf("fill %s: %w", failoverTopic, err)
		}
	}

	var rep report
	for r := 1; r <= o.runs; r++ {
		logger.Info("run", "n", r, "of", o.runs)
		if err := measureRun(o, r, a, ends, records, payload, &rep, logger, quiet); err != nil {
			return fmt.Errorf("run %d: %w", r, err)
		}
	}
	fmt.Printf("\n%d runs; source: %d partitions, %d records of %d bytes (%.0f MB of values, %.0f MB of lz4 batches on disk); GOMAXPROCS=%d, %s, %s\n\n",
		o.runs, o.partitions, records, o.size, float64(payload)/1e6, float64(onDisk)/1e6, runtime.GOMAXPROCS(0), runtime.Version(), cpuModel())
	return rep.write(os.Stdout, o.failoverParts)
}

// measureRun measures every target once, back to back, with fresh
// destination nodes.
func measureRun(o options, r int, a *node, ends []int64, records int, payload int64, rep *report, logger, quiet *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.caseTimeout)
	defer cancel()
	var fetch, cons, mir, cop time.Duration
	if slices.Contains(o.targets, "fetch") {
		d, err := fetchAll(ctx, a.addr, topic, ends)
		if err != nil {
			return fmt.Errorf("fetch: %w", err)
		}
		fetch = d
		logger.Info("fetch", "took", d.Round(time.Millisecond), "MB/s", fmt.Sprintf("%.0f", mbps(payload, d)))
	}
	if slices.Contains(o.targets, "consumer") {
		d, err := consumeAll(ctx, a.addr, topic, records)
		if err != nil {
			return fmt.Errorf("consumer: %w", err)
		}
		cons = d
		logger.Info("consumer", "took", d.Round(time.Millisecond), "MB/s", fmt.Sprintf("%.0f", mbps(payload, d)))
	}
	var b *node
	if slices.Contains(o.targets, "mirror") || slices.Contains(o.targets, "failover") {
		var err error
		b, err = startNode("B", filepath.Join(o.dir, fmt.Sprintf("b%d", r)), o.bConfig, quiet)
		if err != nil {
			return err
		}
		defer b.close()
		d, err := createMirror(ctx, a, b, "bench")
		if err != nil {
			return err
		}
		rep.createMirror = append(rep.createMirror, d.Seconds())
	}
	if slices.Contains(o.targets, "mirror") {
		if r == 1 && o.mirrorProfile != "" {
			f, err := os.Create(o.mirrorProfile)
			if err != nil {
				return err
			}
			defer f.Close()
			if err := pprof.StartCPUProfile(f); err != nil {
				return fmt.Errorf("-mirror-cpuprofile: %w", err)
			}
		}
		d, setup, err := mirrorCatchUp(ctx, b, "bench", topic, ends)
		if r == 1 && o.mirrorProfile != "" {
			pprof.StopCPUProfile()
		}
		if err != nil {
			return fmt.Errorf("mirror: %w", err)
		}
		mir = d
		rep.mirrorSetup = append(rep.mirrorSetup, setup.Seconds())
		logger.Info("mirror", "took", d.Round(time.Millisecond), "MB/s", fmt.Sprintf("%.0f", mbps(payload, d)),
			"to_first_append", setup.Round(time.Millisecond))
	}
	if slices.Contains(o.targets, "copier") {
		c, err := startNode("C", filepath.Join(o.dir, fmt.Sprintf("c%d", r)), nil, quiet)
		if err != nil {
			return err
		}
		defer c.close()
		if err := createTopic(ctx, c.addr, topic, int32(len(ends))); err != nil {
			return err
		}
		d, err := copyTopic(ctx, a.addr, c.addr, topic, records)
		if err != nil {
			return fmt.Errorf("copier: %w", err)
		}
		cop = d
		logger.Info("copier", "took", d.Round(time.Millisecond), "MB/s", fmt.Sprintf("%.0f", mbps(payload, d)))
	}
	if slices.Contains(o.targets, "failover") {
		d, err := failoverTime(ctx, a, b, "bench", failoverTopic, int32(o.failoverParts))
		if err != nil {
			return fmt.Errorf("failover: %w", err)
		}
		rep.failover = append(rep.failover, d.Seconds())
		logger.Info("failover", "partitions", o.failoverParts, "took", d.Round(time.Millisecond))
	}
	rep.add(payload, fetch, cons, mir, cop)
	return nil
}

// mbps is decimal megabytes per second.
func mbps(n int64, d time.Duration) float64 { return float64(n) / 1e6 / d.Seconds() }

// cpuModel names the processor for the report header.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}
