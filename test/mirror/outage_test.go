package mirror_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/kmirror/kmirror/pkg/mirroradmin"
)

// TestSourceOutage kills the source (the binary, SIGKILL) while B mirrors
// it and keeps it down for 5 s (30 s with KMIRROR_LONG=1): all along, B's
// partitions stay MIRRORING and DescribeMirrors reports the error; once
// the source is back, mirroring resumes by itself, the error clears and B
// ends byte-identical with the source.
func TestSourceOutage(t *testing.T) {
	outage := 5 * time.Second
	if long() {
		outage = 30 * time.Second
	}
	a := startProcs(t, 1, nil)
	as := a.seeds()
	b := inProcess(t, 1)
	bs := seedsOf(b)
	const parts = 2
	createTopicOn(t, as, "out", parts)
	produceSome(t, as, "out", "before", 100)
	adm := newMirrorAdmin(t, bs)
	mirrorFrom(t, adm, "m", as, "out")
	waitStates(t, adm, "m", "out", parts, mirroradmin.StateMirroring)
	waitSameLogs(t, as, bs, "out", parts)

	a.node(1).kill()
	down := time.Now()
	reported := false
	for time.Since(down) < outage {
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
			t.Logf("DescribeMirrors reports the outage after %v: %q", time.Since(down).Round(time.Millisecond), ps[0].LastError)
		}
		time.Sleep(200 * time.Millisecond) // sampling the outage's duration, not waiting for an event
	}
	if !reported {
		t.Fatalf("DescribeMirrors did not report the outage within %v", outage)
	}

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
