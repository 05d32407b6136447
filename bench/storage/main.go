package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// Usage: go run ./bench/storage [-runs 5] [-dir DIR] [-only 16KiB] [-v]
//
// Every scenario runs its raw and log sides alternately, -runs times each,
// each run writing (or reading) the same fixed amount of data, and reports
// the median throughput of each side, the ratio of the medians, and the
// spread (min..max) of the per-run ratios as the run-to-run noise.
func main() {
	runs := flag.Int("runs", 5, "runs of each side of each scenario")
	dir := flag.String("dir", "", "directory for the files (default: a temporary directory)")
	only := flag.String("only", "", "run only scenarios whose name contains this")
	verbose := flag.Bool("v", false, "print every run")
	flag.Parse()
	testing.Init()
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
	type pair struct {
		what      string
		log, raw  func(*testing.B, scenario, string)
		scenarios []scenario
	}
	var readScenarios []scenario
	for _, s := range scenarios {
		if !s.sync && !s.follower {
			readScenarios = append(readScenarios, s)
		}
	}
	pairs := []pair{
		{"append", benchLogAppend, benchRawAppend, scenarios},
		{"read", benchLogRead, benchRawRead, readScenarios},
	}
	fmt.Printf("%-8s %-12s %12s %12s %7s %15s\n", "op", "scenario", "raw MB/s", "log MB/s", "ratio", "ratio min..max")
	for _, p := range pairs {
		for _, sc := range p.scenarios {
			if *only != "" && !strings.Contains(sc.name, *only) {
				continue
			}
			var logs, raws, ratios []float64
			n := sc.appends
			if p.what == "read" {
				n = reads
			}
			if err := flag.Set("test.benchtime", fmt.Sprintf("%dx", n)); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			for r := 0; r < *runs; r++ {
				raw := mbps(testing.Benchmark(func(b *testing.B) { p.raw(b, sc, base) }))
				lg := mbps(testing.Benchmark(func(b *testing.B) { p.log(b, sc, base) }))
				raws, logs = append(raws, raw), append(logs, lg)
				if *verbose {
					fmt.Printf("  run %d %s %s: raw %.0f log %.0f MB/s\n", r, p.what, sc.name, raw, lg)
				}
				ratios = append(ratios, lg/raw)
			}
			rm, lm := median(raws), median(logs)
			fmt.Printf("%-8s %-12s %12.0f %12.0f %7.2f %7.2f..%.2f\n", p.what, sc.name, rm, lm, lm/rm, slices.Min(ratios), slices.Max(ratios))
		}
	}
}

func mbps(r testing.BenchmarkResult) float64 {
	if r.T <= 0 {
		return 0
	}
	return float64(r.Bytes) * float64(r.N) / r.T.Seconds() / 1e6
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
