package mirror

import (
	"testing"
	"time"
)

func TestLagClockSeconds(t *testing.T) {
	t0 := time.UnixMilli(1_700_000_000_000)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	cases := []struct {
		name    string
		clock   func() lagClock
		hw, leo int64
		now     time.Time
		want    float64
		ok      bool
	}{
		{"source unknown", newLagClock, -1, 10, at(0), 0, false},
		{"no lag", newLagClock, 10, 10, at(time.Hour), 0, true},
		{"lag without any reference point", newLagClock, 20, 10, at(0), 0, false},
		{"since caught up", func() lagClock {
			c := newLagClock()
			c.observed(10, 10, at(0))
			return c
		}, 20, 10, at(7 * time.Second), 7, true},
		{"a newer mirrored record moves the point", func() lagClock {
			c := newLagClock()
			c.observed(10, 10, at(0))
			c.mirrored(at(5 * time.Second).UnixMilli())
			return c
		}, 20, 10, at(7 * time.Second), 2, true},
		{"an older mirrored record does not", func() lagClock {
			c := newLagClock()
			c.mirrored(at(-time.Minute).UnixMilli())
			c.observed(10, 10, at(0))
			return c
		}, 20, 10, at(3 * time.Second), 3, true},
		{"a behind observation does not catch up", func() lagClock {
			c := newLagClock()
			c.observed(10, 10, at(0))
			c.observed(20, 12, at(4*time.Second))
			return c
		}, 20, 12, at(6 * time.Second), 6, true},
		{"a record from the future clamps to 0", func() lagClock {
			c := newLagClock()
			c.mirrored(at(time.Minute).UnixMilli())
			return c
		}, 20, 10, at(0), 0, true},
	}
	for _, tc := range cases {
		got, ok := tc.clock().seconds(tc.hw, tc.leo, tc.now)
		if ok != tc.ok || got != tc.want {
			t.Errorf("%s: seconds = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// TestOffsetsAnsweredLosesToFetch: a ListOffsets answer asked before a
// fetch response's high watermark arrived must not replace it.
func TestOffsetsAnsweredLosesToFetch(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	s := newLiveStats(now)
	stale, gen := s.staleFor(time.Second, now)
	if !stale {
		t.Fatal("a partition with no high watermark yet is not stale")
	}
	s.sourceHW(50, 50, now.Add(time.Millisecond))
	s.offsetsAnswered(40, 50, gen, now)
	if got := s.snapshot().SourceHW; got != 50 {
		t.Fatalf("source high watermark %d after a late ListOffsets answer, want the fetch's 50", got)
	}
	_, gen = s.staleFor(time.Second, now)
	s.offsetsAnswered(70, 50, gen, now.Add(2*time.Second))
	snap := s.snapshot()
	if snap.SourceHW != 70 || !snap.Lag.hwAt.Equal(now.Add(2*time.Second)) {
		t.Fatalf("after a current ListOffsets answer: hw %d at %v, want 70 at +2s", snap.SourceHW, snap.Lag.hwAt)
	}
	if stale, _ := s.staleFor(time.Second, now.Add(2500*time.Millisecond)); stale {
		t.Fatal("a high watermark learned 0.5 s ago is stale for 1 s")
	}
	if secs, ok := snap.Lag.seconds(snap.SourceHW, 50, now.Add(3*time.Second)); !ok || secs != 3-0.001 {
		t.Fatalf("lag seconds %v %v, want 2.999 (caught up at the fetch 1 ms after t0)", secs, ok)
	}
}
