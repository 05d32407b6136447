package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
)

// Usage: go run ./bench/storage [-runs 5] [-dir DIR] [-only 16KiB] [-v]
//
// Every scenario makes -runs paired runs (see paired.go), each writing (or
// reading) the same fixed amount of data on both sides, and reports the
// median throughput of each side, the median of the per-run ratios, and
// their spread (min..max) as the run-to-run noise.
func main() {
	runs := flag.Int("runs", 5, "paired runs of each scenario")
	dir := flag.String("dir", "", "directory for the files (default: a temporary directory)")
	only := flag.String("only", "", "run only scenarios whose name contains this")
	verbose := flag.Bool("v", false, "print every run")
	flag.Parse()
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
	fmt.Printf("%-8s %-15s %9s %9s %7s %13s\n", "op", "scenario", "raw MB/s", "log MB/s", "log/raw", "min..max")
	for _, o := range ops {
		for _, sc := range o.scenarios {
			if *only != "" && !strings.Contains(sc.name, *only) {
				continue
			}
			var logs, raws, ratios []float64
			for r := 0; r < *runs; r++ {
				s, err := o.run(sc, base)
				if err != nil {
					fmt.Fprintf(os.Stderr, "%s %s: %v\n", o.what, sc.name, err)
					os.Exit(1)
				}
				raws, logs = append(raws, s.rawMBps()), append(logs, s.logMBps())
				ratios = append(ratios, s.logMBps()/s.rawMBps())
				if *verbose {
					fmt.Printf("  run %d %s %s: raw %.0f log %.0f MB/s, ratio %.2f\n", r, o.what, sc.name, s.rawMBps(), s.logMBps(), ratios[r])
				}
			}
			fmt.Printf("%-8s %-15s %9.0f %9.0f %7.2f %7.2f..%.2f\n", o.what, sc.name, median(raws), median(logs), median(ratios), slices.Min(ratios), slices.Max(ratios))
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
