package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/kmirror/kmirror/bench/internal/pagecache"
)

// Usage: go run ./bench/storage [-runs 5] [-dir DIR] [-only 16KiB] [-v] [-prime=false]
//
// Every scenario makes -runs paired runs (see paired.go), each writing (or
// reading) the same fixed amount of data on both sides, and reports the
// median throughput of each side (raw, raw warm, log), the median of the
// per-run ratios of the log to each raw side, and their spread (min..max)
// as the run-to-run noise.
func main() {
	runs := flag.Int("runs", 5, "paired runs of each scenario")
	dir := flag.String("dir", "", "directory for the files (default: a temporary directory)")
	only := flag.String("only", "", "run only scenarios whose name contains this")
	verbose := flag.Bool("v", false, "print every run")
	prime := flag.Bool("prime", true, "write and delete a scratch file as large as a run's data before each run (see pagecache.Prime)")
	checkFlags := flag.Bool("check-flags", false, "parse and validate the flags, then exit without measuring (the docs test checks every documented command this way)")
	flag.Parse()
	if flag.NArg() > 0 || *runs < 1 {
		fmt.Fprintf(os.Stderr, "error: -runs must be at least 1 and there are no arguments (got %q)\n", flag.Args())
		os.Exit(2)
	}
	if *checkFlags {
		return
	}
	base := *dir
	if base == "" {
		d, err := os.MkdirTemp("", "kmirror-bench-storage-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer os.RemoveAll(d)
		base = d
	}
	type op struct {
		what      string
		run       func(scenario, string) (sides, error)
		scenarios []scenario
	}
	var readScenarios []scenario
	for _, s := range scenarios {
		if !s.sync && !s.follower {
			readScenarios = append(readScenarios, s)
		}
	}
	ops := []op{
		{"append", pairedAppend, scenarios},
		{"read", pairedRead, readScenarios},
	}
	fmt.Printf("%-8s %-15s %9s %9s %9s %7s %13s %9s %13s\n", "op", "scenario", "raw MB/s", "warm MB/s", "log MB/s",
		"log/raw", "min..max", "log/warm", "min..max")
	for _, o := range ops {
		for _, sc := range o.scenarios {
			if *only != "" && !strings.Contains(sc.name, *only) {
				continue
			}
			var logs, raws, warms, ratios, warmRatios []float64
			for r := 0; r < *runs; r++ {
				if *prime {
					if err := pagecache.Prime(base, primeBytes(o.what, sc)); err != nil {
						fmt.Fprintln(os.Stderr, err)
						os.Exit(1)
					}
				}
				s, err := o.run(sc, base)
				if err != nil {
					fmt.Fprintf(os.Stderr, "%s %s: %v\n", o.what, sc.name, err)
					os.Exit(1)
				}
				raws, warms, logs = append(raws, s.rawMBps()), append(warms, s.warmMBps()), append(logs, s.logMBps())
				ratios = append(ratios, s.logMBps()/s.rawMBps())
				warmRatios = append(warmRatios, s.logMBps()/s.warmMBps())
				if *verbose {
					fmt.Printf("  run %d %s %s: raw %.0f raw warm %.0f log %.0f MB/s, log/raw %.2f, log/warm %.2f\n",
						r, o.what, sc.name, s.rawMBps(), s.warmMBps(), s.logMBps(), ratios[r], warmRatios[r])
				}
			}
			fmt.Printf("%-8s %-15s %9.0f %9.0f %9.0f %7.2f %7.2f..%.2f %9.2f %7.2f..%.2f\n", o.what, sc.name,
				median(raws), median(warms), median(logs), median(ratios), slices.Min(ratios), slices.Max(ratios),
				median(warmRatios), slices.Min(warmRatios), slices.Max(warmRatios))
		}
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// primeBytes is how much page cache a run of op on sc sets up: three sides
// of its data.
func primeBytes(op string, sc scenario) int64 {
	if op == "read" {
		return 3 * readBytes
	}
	return 3 * int64(sc.appends) * int64(sc.batchRecs) * (recordSize + 20)
}
