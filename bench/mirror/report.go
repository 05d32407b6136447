package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"
	"time"
)

// samples holds one figure of every run.
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

// cell prints the median with ± half the spread.
func (s samples) cell(format string) string {
	if len(s) == 0 {
		return "-"
	}
	return fmt.Sprintf(format+" ±%.0f%%", s.median(), 100*s.spread()/2)
}

// report gathers the figures of every run.
type report struct {
	fetch, consumer, mirror, copier samples // MB/s of record values
	mirrorSetup                     samples // seconds to the first mirrored append
	createMirror                    samples // seconds
	// ratios per run: mirror/fetch, mirror/consumer and mirror/copier.
	ofFetch, ofConsumer, ofCopier samples
	failover                      samples // seconds
}

// add records one run's catch-up times (zero: not measured).
func (r *report) add(payload int64, fetch, cons, mir, cop time.Duration) {
	if fetch > 0 {
		r.fetch = append(r.fetch, mbps(payload, fetch))
	}
	if cons > 0 {
		r.consumer = append(r.consumer, mbps(payload, cons))
	}
	if mir > 0 {
		r.mirror = append(r.mirror, mbps(payload, mir))
		if fetch > 0 {
			r.ofFetch = append(r.ofFetch, fetch.Seconds()/mir.Seconds())
		}
		if cons > 0 {
			r.ofConsumer = append(r.ofConsumer, cons.Seconds()/mir.Seconds())
		}
		if cop > 0 {
			r.ofCopier = append(r.ofCopier, cop.Seconds()/mir.Seconds())
		}
	}
	if cop > 0 {
		r.copier = append(r.copier, mbps(payload, cop))
	}
}

// write prints the comparison.
func (r *report) write(w io.Writer, failoverParts int) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "catch-up\tMB/s (record values)\tmirror ÷ it (per-run median)")
	fmt.Fprintf(tw, "mirror (B fetches from A)\t%s\t\n", r.mirror.cell("%.0f"))
	fmt.Fprintf(tw, "raw Fetch loop from A, no decoding\t%s\t%s\n", r.fetch.cell("%.0f"), r.ofFetch.cell("%.2f"))
	fmt.Fprintf(tw, "franz-go consumer from A\t%s\t%s\n", r.consumer.cell("%.0f"), r.ofConsumer.cell("%.2f"))
	fmt.Fprintf(tw, "consume-then-produce copier A→C\t%s\t%s\n", r.copier.cell("%.0f"), r.ofCopier.cell("%.2f"))
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.mirrorSetup) > 0 {
		fmt.Fprintf(w, "\nmirror: AddTopicsToMirror to the first appended batch: %s s (included above)\n", r.mirrorSetup.cell("%.3f"))
	}
	if len(r.createMirror) > 0 {
		fmt.Fprintf(w, "CreateMirror, the first of the cluster (creates __mirror_state; not included): %s s\n", r.createMirror.cell("%.3f"))
	}
	if len(r.failover) > 0 {
		fmt.Fprintf(w, "failover of %d partitions (RemoveTopicsFromMirror to all STOPPED): %s s\n", failoverParts, r.failover.cell("%.2f"))
	}
	return nil
}
