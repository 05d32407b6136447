package storage

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// scrape gathers c and returns each sample as "name{dir}" -> value (the
// sample count for histograms).
func scrape(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := mf.GetName()
			for _, lp := range m.GetLabel() {
				key += "{" + lp.GetValue() + "}"
			}
			switch {
			case m.GetHistogram() != nil:
				out[key] = float64(m.GetHistogram().GetSampleCount())
			default:
				out[key] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

func TestManagerMetrics(t *testing.T) {
	clk := newTestClock()
	d1, d2 := t.TempDir(), t.TempDir()
	cfg := testManagerConfig(d1, d2)
	cfg.Now = clk.Now
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Shutdown()
	var logs []*Log
	for p := range int32(3) {
		l, err := m.GetOrCreateLog(TopicPartition{"events", p}, [16]byte{7}, smallConfig())
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, l)
	}
	got := scrape(t, m.Collector())
	if n := got["kmirror_log_flush_duration_seconds"]; n != 0 {
		t.Fatalf("%v flushes before any append", n)
	}
	appendN(t, logs[0], clk, 4, 2)
	if err := logs[0].Flush(); err != nil {
		t.Fatal(err)
	}
	if err := logs[0].Flush(); err != nil { // nothing left to sync: not a flush
		t.Fatal(err)
	}
	got = scrape(t, m.Collector())
	if n := got["kmirror_log_flush_duration_seconds"]; n != 1 {
		t.Fatalf("flush histogram count %v, want 1", n)
	}
	var parts, size, segs float64
	for _, d := range []string{d1, d2} {
		parts += got["kmirror_log_dir_partitions{"+d+"}"]
		size += got["kmirror_log_dir_size_bytes{"+d+"}"]
		segs += got["kmirror_log_dir_segments{"+d+"}"]
	}
	if parts != 3 || segs != 3 {
		t.Fatalf("partitions %v segments %v over both dirs, want 3 and 3 (%v)", parts, segs, got)
	}
	if want := float64(logs[0].Size()); size != want || want == 0 {
		t.Fatalf("size %v over both dirs, want %v", size, want)
	}
}
