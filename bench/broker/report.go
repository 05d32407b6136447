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

// ratio is the ratio of the medians of a and b and, with several runs, the
// range of the per-run ratios (a[i] and b[i] were measured in the same run,
// under the same background load).
func ratio(a, b samples) string {
	if len(a) == 0 || len(b) == 0 {
		return "-"
	}
	s := fmt.Sprintf("%.2f", a.median()/b.median())
	if len(a) == len(b) && len(a) > 1 {
		per := make(samples, len(a))
		for i := range a {
			per[i] = a[i] / b[i]
		}
		s += fmt.Sprintf(" (%.2f..%.2f)", slices.Min(per), slices.Max(per))
	}
	return s
}

// row is one line of the report: a workload measured on each broker and the
// raw limit that bounds it.
type row struct {
	name           string
	kmirror, kfake samples
	raw            samples
	// relay is, for produce, the raw relay: loopback into a file, both
	// costs paid on the same cores (relayTCPToDisk).
	relay samples
	// cores and others are, per kmirror measurement, how many cores this
	// process (kmirror and the generator) and everything else on the
	// machine kept busy (cpuUse); only the wire rows record them.
	cores, others samples
	// cpuPerGB is, per measurement of the raw rows and of kmirror in the
	// wire rows, the process's CPU seconds per GB moved
	// (coreSecondsPerGB).
	cpuPerGB samples
	// ceiling is what the client alone reaches on this machine, an upper
	// bound for any broker measured through it: for franz-go produce,
	// franz-go producing to a broker that discards the records (kfake's
	// blackhole mode); for franz-go consume, franz-go decoding already
	// fetched batches (clientDecode); for wire produce, the generator
	// writing to a produceSink.
	ceiling samples
}

// addCores records the CPU use of a kmirror measurement of bytes between two
// samples.
func (r *row) addCores(from, to cpuSample, bytes int64) {
	if self, others, _, ok := cpuUse(from, to); ok {
		r.cores = append(r.cores, self)
		r.others = append(r.others, others)
	}
	r.addCPUPerGB(from, to, bytes)
}

// addCPUPerGB records the process's CPU seconds per GB of a measurement.
func (r *row) addCPUPerGB(from, to cpuSample, bytes int64) {
	if c, ok := coreSecondsPerGB(from, to, bytes); ok {
		r.cpuPerGB = append(r.cpuPerGB, c)
	}
}

// cpuPerGBCell is the median core-seconds per GB.
func (r *row) cpuPerGBCell() string {
	if len(r.cpuPerGB) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", r.cpuPerGB.median())
}

// coresCell is the median cores of this process and, in parentheses, of
// everything else.
func (r *row) coresCell() string {
	if len(r.cores) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f (%.2f)", r.cores.median(), r.others.median())
}

// writeReport prints the comparison table: medians with ±half the spread,
// and the ratios of medians with the range of the per-run ratios.
func writeReport(w io.Writer, rows []*row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "workload\tkmirror MB/s\tkfake MB/s\traw MB/s\tkmirror/kfake\tkmirror/raw\traw relay MB/s\tkmirror/relay\tclient ceiling MB/s\tkmirror/ceiling\tcores: kmirror+generator (others)\tprocess core-s per GB")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.name, r.kmirror, r.kfake, r.raw,
			ratio(r.kmirror, r.kfake), ratio(r.kmirror, r.raw), r.relay, ratio(r.kmirror, r.relay), r.ceiling, ratio(r.kmirror, r.ceiling),
			r.coresCell(), r.cpuPerGBCell())
	}
	return tw.Flush()
}
