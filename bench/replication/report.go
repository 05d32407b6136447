package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"
)

// samples holds the MB/s of every run of one measurement.
type samples []float64

func (s samples) median() float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	c := slices.Clone(s)
	slices.Sort(c)
	if len(c)%2 == 1 {
		return c[len(c)/2]
	}
	return (c[len(c)/2-1] + c[len(c)/2]) / 2
}

// spread is the run-to-run noise: (max-min)/median, as a fraction.
func (s samples) spread() float64 {
	if len(s) < 2 {
		return 0
	}
	return (slices.Max(s) - slices.Min(s)) / s.median()
}

func (s samples) String() string {
	if len(s) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f ±%.0f%%", s.median(), 100*s.spread()/2)
}

// writeReport prints MB/s per replication factor (median ± half the
// spread, every run) and the ratio RF=3 / RF=1: of the medians, and the
// range of the per-run ratios (each run measured both back to back).
func writeReport(w io.Writer, rf3, rf1 samples) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "topic\tMB/s (median ±half spread)\truns")
	fmt.Fprintf(tw, "RF=3 min.insync.replicas=2\t%s\t%s\n", rf3, runs(rf3))
	fmt.Fprintf(tw, "RF=1\t%s\t%s\n", rf1, runs(rf1))
	if err := tw.Flush(); err != nil {
		return err
	}
	var ratios samples
	for i := range min(len(rf3), len(rf1)) {
		ratios = append(ratios, rf3[i]/rf1[i])
	}
	_, err := fmt.Fprintf(w, "\nRF=3 / RF=1: %.2f of the medians; per run %.2f..%.2f %s\n",
		rf3.median()/rf1.median(), slices.Min(ratios), slices.Max(ratios), runs(ratios))
	return err
}

func runs(s samples) string {
	out := "["
	for i, v := range s {
		if i > 0 {
			out += " "
		}
		out += fmt.Sprintf("%.2f", v)
	}
	return out + "]"
}
