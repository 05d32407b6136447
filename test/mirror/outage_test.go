package mirror_test

import (
	"fmt"
	"testing"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/pkg/mirroradmin"
)

// TestSourceOutage kills the source (the binary, SIGKILL) while B mirrors
// it and keeps it down until B has reported the outage and then had its
// own chances to give up: 50 more failed fetches (300 with KMIRROR_LONG=1)
// and two more failed sync rounds, each a reading of the source's
// metadata. All along, B's partitions stay MIRRORING; once the source is
// back, mirroring resumes by itself, the error clears and B ends
// byte-identical with the source. The outage lasts as long as B needs for
// those events, however loaded the machine: no wall-clock window decides.
func TestSourceOutage(t *testing.T) {
	retries := 50.0
	if long() {
		retries = 300
	}
	a := startProcs(t, 1, nil)
	as := a.seeds()
	b := inProcess(t, 1)
	bs, bn := seedsOf(b), b.Nodes()[0]
	const parts = 2
	createTopicOn(t, as, "out", parts)
	produceSome(t, as, "out", "before", 100)
	adm := newMirrorAdmin(t, bs)
	mirrorFrom(t, adm, "m", as, "out")
	waitStates(t, adm, "m", "out", parts, mirroradmin.StateMirroring)
	waitSameLogs(t, as, bs, "out", parts)

	a.node(1).kill()
	fetchFailures := func() float64 {
		return metricSum(t, bn, "kmirror_mirror_fetch_failures_total", map[string]string{"mirror": "m"})
	}
	syncErrors := func() float64 {
		return metricSum(t, bn, "kmirror_mirror_sync_errors_total", map[string]string{"mirror": "m"})
	}
	reported := false
	var fetchesAt, syncsAt float64
	waitUntil(t, "the outage reported, then the fetchers' and the sync's retries", func() (bool, string) {
		ps, err := partitionStatuses(t, adm, "m", "out")
		if err != nil {
			t.Fatal(err)
		}
		all := len(ps) == parts
		for _, p := range ps {
			if p.State != mirroradmin.StateMirroring {
				t.Fatalf("out-%d left MIRRORING during the outage: %v (%s)", p.Partition, p.State, p.LastError)
			}
			if p.LastError == "" {
				all = false
			}
		}
		if all && !reported {
			reported = true
			fetchesAt, syncsAt = fetchFailures(), syncErrors()
			t.Logf("DescribeMirrors reports the outage: %q", ps[0].LastError)
		}
		f, s := fetchFailures(), syncErrors()
		return reported && f >= fetchesAt+retries && s >= syncsAt+2,
			fmt.Sprintf("reported %v; failed fetches %v (%v at the report), sync errors %v (%v)", reported, f, fetchesAt, s, syncsAt)
	})

	a.node(1).start()
	produceSome(t, as, "out", "after", 100)
	waitSameLogs(t, as, bs, "out", parts)
	waitUntil(t, "the error cleared", func() (bool, string) {
		ps, err := partitionStatuses(t, adm, "m", "out")
		if err != nil {
			return false, err.Error()
		}
		for _, p := range ps {
			if p.State != mirroradmin.StateMirroring || p.LastError != "" || p.Lag != 0 {
				return false, fmt.Sprintf("out-%d: %v lag %d error %q", p.Partition, p.State, p.Lag, p.LastError)
			}
		}
		return true, ""
	})
}

// metricSum returns the sum of the samples of a counter or gauge of an
// in-process node's registry whose labels include labels (0 when none).
func metricSum(t testing.TB, n *testcluster.Node, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := n.Server().Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			matched := 0
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok {
					if v != lp.GetValue() {
						continue metrics
					}
					matched++
				}
			}
			if matched == len(labels) {
				sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return sum
}
