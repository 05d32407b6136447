// Command replication measures what replication costs a producer: acks=-1
// produce throughput to a topic with replication factor 3
// (min.insync.replicas=2) against a topic with replication factor 1, on the
// same three-node kmirror cluster, through the same franz-go client
// settings, in the same run.
//
//	go run ./bench/replication -runs 3
//
// The cluster is three kmirror processes on loopback ports, each broker and
// controller (the layout of config/cluster/node*.properties), built from
// this module; both topics have the same partitions spread over the same
// three leaders, so the difference is the followers' fetches and the
// leader's wait for them. Every run produces to a fresh RF=3 topic and a
// fresh RF=1 topic back to back (alternating which goes first), so the two
// cells of a run saw the same background load.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"
)

// options are the command-line settings of one invocation.
type options struct {
	runs       int
	records    int
	size       int
	partitions int
	bin        string
	dir        string
	timeout    time.Duration
	checkFlags bool // only parse and validate the flags
}

func parseFlags() (options, error) {
	var o options
	flag.IntVar(&o.runs, "runs", 3, "how many times to measure each replication factor")
	flag.IntVar(&o.records, "records", 100_000, "records per measurement")
	flag.IntVar(&o.size, "size", 1024, "record value size in bytes")
	flag.IntVar(&o.partitions, "partitions", 6, "partitions of every benchmark topic")
	flag.StringVar(&o.bin, "bin", "", "kmirror binary to run (default: go build ./cmd/kmirror)")
	flag.StringVar(&o.dir, "dir", "", "directory for the nodes' data (default: a temporary directory)")
	flag.DurationVar(&o.timeout, "case-timeout", 5*time.Minute, "give up on one measurement after this long")
	flag.BoolVar(&o.checkFlags, "check-flags", false, "parse and validate the flags, then exit without measuring (the docs test checks every documented command this way)")
	flag.Parse()
	if flag.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	if o.runs < 1 || o.records < 1 || o.size < 1 || o.partitions < 1 {
		return o, errors.New("-runs, -records, -size and -partitions must be at least 1")
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
	if o.dir == "" {
		d, err := os.MkdirTemp("", "kmirror-bench-replication-*")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		o.dir = d
	}
	if o.bin == "" {
		bin, err := buildBinary(o.dir)
		if err != nil {
			return err
		}
		o.bin = bin
	}
	c, err := startCluster(context.Background(), o.bin, o.dir)
	if err != nil {
		return err
	}
	defer c.stop()
	fmt.Printf("three kmirror nodes (broker+controller) at %s; %d records of %d bytes, %d partitions, acks=-1 idempotent, no compression; GOMAXPROCS=%d, %d CPUs\n",
		c.bootstrap(), o.records, o.size, o.partitions, runtime.GOMAXPROCS(0), runtime.NumCPU())

	values := payloads(1024, o.size)
	// An untimed round first: the first topics of a fresh cluster pay for
	// things later ones do not (the followers' first fetch sessions,
	// segment files, the page cache).
	for _, rf := range []int16{3, 1} {
		w := o
		w.records = max(o.records/10, 1)
		if _, err := measure(w, c, -1, rf, values); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	var rf3, rf1 samples
	for r := range o.runs {
		order := []int16{3, 1}
		if r%2 == 1 {
			order = []int16{1, 3}
		}
		for _, rf := range order {
			cpu0, ok0 := c.cpuSeconds()
			mb, err := measure(o, c, r, rf, values)
			if err != nil {
				return err
			}
			cpu1, ok1 := c.cpuSeconds()
			cpu := ""
			if ok0 && ok1 {
				mbTotal := float64(o.records) * float64(o.size) / 1e6
				cpu = fmt.Sprintf(" (nodes used %.2f CPU-seconds, %.1f ms per MB, including topic creation and deletion)", cpu1-cpu0, 1000*(cpu1-cpu0)/mbTotal)
			}
			fmt.Printf("run %d RF=%d: %.1f MB/s%s\n", r+1, rf, mb, cpu)
			if rf == 3 {
				rf3 = append(rf3, mb)
			} else {
				rf1 = append(rf1, mb)
			}
		}
	}
	fmt.Println()
	return writeReport(os.Stdout, rf3, rf1)
}

// measure produces to a fresh topic of replication factor rf and deletes it
// afterwards.
func measure(o options, c *cluster, run int, rf int16, values [][]byte) (float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	topic := fmt.Sprintf("bench-rf%d-run%d", rf, run+1) // run -1: the warm-up
	if err := createTopic(ctx, c.bootstrap(), topic, int32(o.partitions), rf); err != nil {
		return 0, err
	}
	mb, err := produce(ctx, c.bootstrap(), topic, o.records, values)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", topic, err)
	}
	return mb, deleteTopic(ctx, c.bootstrap(), topic)
}
