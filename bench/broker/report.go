package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"
)

// samples holds the MB/s of every run of one cell of the report.
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

func ratio(a, b samples) string {
	if len(a) == 0 || len(b) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a.median()/b.median())
}

// row is one line of the report: a workload measured on each broker and the
// raw limit that bounds it.
type row struct {
	name           string
	kmirror, kfake samples
	raw            samples
	// ceiling is what the client alone reaches on this machine, an upper
	// bound for any broker measured through it: for produce, franz-go
	// producing to a broker that discards the records (kfake's blackhole
	// mode); for consume, franz-go decoding already fetched batches
	// (clientDecode).
	ceiling samples
}

// writeReport prints the comparison table: medians with ±half the spread,
// and the ratios of medians.
func writeReport(w io.Writer, rows []*row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "workload\tkmirror MB/s\tkfake MB/s\traw MB/s\tkmirror/kfake\tkmirror/raw\tclient ceiling MB/s")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.name, r.kmirror, r.kfake, r.raw,
			ratio(r.kmirror, r.kfake), ratio(r.kmirror, r.raw), r.ceiling)
	}
	return tw.Flush()
}
