package main

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/pkg/mirroradmin"
)

// part is a partition status for the tracker tests.
func part(p int32, state mirroradmin.State, hw, end int64) mirroradmin.PartitionStatus {
	lag := int64(-1)
	if hw >= 0 && end >= 0 {
		lag = max(0, hw-end)
	}
	return mirroradmin.PartitionStatus{Partition: p, State: state, LeaderID: 1, SourceHighWatermark: hw,
		DestinationLogEndOffset: end, Lag: lag}
}

func mirrorOf(topics ...mirroradmin.MirrorTopic) mirroradmin.Mirror {
	return mirroradmin.Mirror{Name: "east", Topics: topics}
}

func topicOf(name string, parts ...mirroradmin.PartitionStatus) mirroradmin.MirrorTopic {
	return mirroradmin.MirrorTopic{Name: name, MirrorNameConfig: "east", Partitions: parts}
}

func near(got *float64, want float64) bool {
	return got != nil && math.Abs(*got-want) < 1e-6
}

func fmtPtr(p *float64) string {
	if p == nil {
		return "nil"
	}
	return strconv.FormatFloat(*p, 'f', 6, 64)
}

// TestWatchTrackerRateAndBehind drives the tracker with samples of known
// times: the rate is the log end's advance over the last samples, the time
// behind interpolates between the source high watermarks seen, and both
// restart honestly after a truncation or before enough samples.
func TestWatchTrackerRateAndBehind(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	w := newWatchTracker("east", nil)

	// First sample, already 100 behind: no rate yet; behind is a lower
	// bound (the watch does not know since when).
	f := w.observe(at(0), mirrorOf(topicOf("orders", part(0, mirroradmin.StateMirroring, 1000, 900))))
	r := f.Rows[0]
	if r.RecordsPerSecond != nil || !near(r.SecondsBehind, 0) || !r.BehindAtLeast {
		t.Fatalf("first sample: rate %s behind %s atLeast %v", fmtPtr(r.RecordsPerSecond), fmtPtr(r.SecondsBehind), r.BehindAtLeast)
	}
	if got := f.Summary.String(); got != "1/1 partitions mirroring, max lag 100 records, >0.0 s behind, 0 records/s" {
		t.Fatalf("first summary %q", got)
	}

	// One second later the source is at 2000 and we at 1500: the source
	// had offset 1500 when its high watermark passed 1501, interpolated at
	// 0.501 s between the two samples: 0.499 s ago.
	f = w.observe(at(1000), mirrorOf(topicOf("orders", part(0, mirroradmin.StateMirroring, 2000, 1500))))
	r = f.Rows[0]
	if !near(r.RecordsPerSecond, 600) || !near(r.SecondsBehind, 0.499) || r.BehindAtLeast {
		t.Fatalf("second sample: rate %s behind %s atLeast %v", fmtPtr(r.RecordsPerSecond), fmtPtr(r.SecondsBehind), r.BehindAtLeast)
	}

	// Still at 1500 half a second later, the source unchanged: the missing
	// record's age grows with the clock.
	f = w.observe(at(1500), mirrorOf(topicOf("orders", part(0, mirroradmin.StateMirroring, 2000, 1500))))
	if r = f.Rows[0]; !near(r.SecondsBehind, 0.999) {
		t.Fatalf("third sample: behind %s", fmtPtr(r.SecondsBehind))
	}

	// Caught up: 0 behind, exactly.
	f = w.observe(at(2000), mirrorOf(topicOf("orders", part(0, mirroradmin.StateMirroring, 2000, 2000))))
	if r = f.Rows[0]; !near(r.SecondsBehind, 0) || r.BehindAtLeast || f.Summary.MaxLag != 0 {
		t.Fatalf("caught up: behind %s atLeast %v lag %d", fmtPtr(r.SecondsBehind), r.BehindAtLeast, f.Summary.MaxLag)
	}
	// The rate spans the window: from 900 at 0 ms to 2000 at 2000 ms.
	if !near(r.RecordsPerSecond, 550) {
		t.Fatalf("rate over the window %s", fmtPtr(r.RecordsPerSecond))
	}
	for i := 1; i <= rateWindow; i++ {
		f = w.observe(at(2000+1000*i), mirrorOf(topicOf("orders", part(0, mirroradmin.StateMirroring, 2000+int64(10*i), 2000+int64(10*i)))))
	}
	if r = f.Rows[0]; !near(r.RecordsPerSecond, 10) {
		t.Fatalf("rate after the window slid: %s", fmtPtr(r.RecordsPerSecond))
	}

	// A truncation (log end going back) restarts the rate.
	f = w.observe(at(8000), mirrorOf(topicOf("orders", part(0, mirroradmin.StateMirroring, 2050, 10))))
	if r = f.Rows[0]; r.RecordsPerSecond != nil {
		t.Fatalf("rate after truncation %s", fmtPtr(r.RecordsPerSecond))
	}

	// Unknown lag (no fetch from the source yet): no time behind either.
	f = w.observe(at(9000), mirrorOf(topicOf("orders", part(0, mirroradmin.StatePreparing, -1, 10))))
	if r = f.Rows[0]; r.SecondsBehind != nil || f.Summary.MaxLag != -1 {
		t.Fatalf("unknown lag: behind %s max lag %d", fmtPtr(r.SecondsBehind), f.Summary.MaxLag)
	}
	if got := f.Summary.String(); got != "0/1 partitions mirroring (1 PREPARING), lag unknown, 0 records/s" {
		t.Fatalf("summary %q", got)
	}
}

// TestWatchSummaryAndConditions checks the summary line and the
// conditions wait and --wait stop on.
func TestWatchSummaryAndConditions(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	w := newWatchTracker("east", []string{"orders", "payments", "absent"})
	failing := part(1, mirroradmin.StateFailed, 50, 10)
	failing.LastError = "source unreachable"
	m := mirrorOf(
		topicOf("orders", part(0, mirroradmin.StateMirroring, 100, 60), failing),
		topicOf("payments", part(0, mirroradmin.StatePaused, 7, 7)),
		topicOf("ignored", part(0, mirroradmin.StateMirroring, 5, 0)),
	)
	f := w.observe(now, m)
	want := "1/3 partitions mirroring (1 FAILED, 1 PAUSED), max lag 40 records, >0.0 s behind, 0 records/s, 1 with errors, 1 topic without partition status"
	if got := f.Summary.String(); got != want {
		t.Fatalf("summary\n got %q\nwant %q", got, want)
	}
	if len(f.Rows) != 4 || f.Rows[0].Topic != "absent" || f.Rows[0].State != stateNotInMirror {
		t.Fatalf("rows %+v", f.Rows)
	}
	if f.caughtUp(1000) || f.allIn(mirroradmin.StatePaused) {
		t.Fatal("a mixed frame counts as done")
	}
	if !strings.Contains(f.errorsText(), "orders-1: source unreachable") {
		t.Fatalf("errors text %q", f.errorsText())
	}

	w = newWatchTracker("east", nil)
	f = w.observe(now, mirrorOf(topicOf("orders", part(0, mirroradmin.StateMirroring, 100, 95), part(1, mirroradmin.StateMirroring, 3, 3))))
	if !f.caughtUp(5) || f.caughtUp(4) {
		t.Fatalf("caughtUp with max lag %d", f.Summary.MaxLag)
	}
	f = w.observe(now, mirrorOf(topicOf("orders", part(0, mirroradmin.StateMirroring, 100, 100), part(1, mirroradmin.StateMirroring, -1, 0))))
	if got := f.Summary.String(); f.caughtUp(5) || !strings.Contains(got, "max lag 0 records (1 unknown)") {
		t.Fatalf("a partition of unknown lag: caught up %v, summary %q", f.caughtUp(5), got)
	}
	f = w.observe(now, mirrorOf(topicOf("orders", part(0, mirroradmin.StateStopped, 100, 100), part(1, mirroradmin.StateStopped, 3, 3))))
	if !f.allIn(mirroradmin.StateStopped) || f.caughtUp(100) {
		t.Fatal("allIn(STOPPED)")
	}
	if failedFrame := w.failed(now, errTest); failedFrame.allIn(mirroradmin.StateStopped) || failedFrame.Error == "" || len(failedFrame.Rows) != 2 {
		t.Fatalf("a failed sample keeps the last rows but is never done: %+v", failedFrame)
	}
	if got := (watchFrame{}).Summary.String(); got != "no partitions in the mirror" {
		t.Fatalf("empty summary %q", got)
	}
	f = newWatchTracker("east", []string{"a", "b"}).observe(now, mirrorOf())
	if got := f.Summary.String(); got != "no partition status yet (2 topics)" || f.caughtUp(0) || f.allIn(mirroradmin.StateStopped) {
		t.Fatalf("summary of absent topics %q", got)
	}
	if (watchFrame{}).caughtUp(0) {
		t.Fatal("a mirror without partitions counts as caught up")
	}
}

var errTest = errorString("broker went away")

type errorString string

func (e errorString) Error() string { return string(e) }

// terminal applies the control sequences the live table uses to a screen
// of lines, as a terminal would, and returns what it shows.
func terminal(t *testing.T, out string) []string {
	t.Helper()
	var lines []string
	row, col := 0, 0
	put := func(c rune) {
		for len(lines) <= row {
			lines = append(lines, "")
		}
		r := []rune(lines[row])
		for len(r) < col {
			r = append(r, ' ')
		}
		if col < len(r) {
			r[col] = c
		} else {
			r = append(r, c)
		}
		lines[row] = string(r)
		col++
	}
	for i := 0; i < len(out); {
		switch {
		case strings.HasPrefix(out[i:], ansiHome):
			row, col = 0, 0
			i += len(ansiHome)
		case strings.HasPrefix(out[i:], ansiClearAll):
			lines = nil
			i += len(ansiClearAll)
		case strings.HasPrefix(out[i:], ansiClearLine):
			if row < len(lines) && col < len([]rune(lines[row])) {
				lines[row] = string([]rune(lines[row])[:col])
			}
			i += len(ansiClearLine)
		case strings.HasPrefix(out[i:], ansiClearBelow):
			if row < len(lines) {
				if col < len([]rune(lines[row])) {
					lines[row] = string([]rune(lines[row])[:col])
				}
				lines = lines[:row+1]
			}
			i += len(ansiClearBelow)
		case out[i] == '\x1b':
			t.Fatalf("unexpected control sequence %q", out[i:min(len(out), i+6)])
		case out[i] == '\r':
			col = 0
			i++
		case out[i] == '\n':
			row, col = row+1, 0
			i++
		default:
			r := []rune(out[i:])[0]
			put(r)
			i += len(string(r))
		}
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// TestScreenRedrawsInPlace shows a long frame then a shorter one with
// longer lines on a terminal: the screen then holds exactly the second
// frame, with nothing of the first left over. Off a terminal the frames
// follow each other.
func TestScreenRedrawsInPlace(t *testing.T) {
	first := "header one\nrow a is long\nrow b\nrow c\nsummary 1\n"
	second := "header two\nrow a is much longer now\nsummary 2\n"
	var out bytes.Buffer
	s := &screen{w: &out, tty: true}
	if err := s.show(first); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(terminal(t, out.String()), "\n"); got != strings.TrimSuffix(first, "\n") {
		t.Fatalf("first frame shows\n%s", got)
	}
	if err := s.show(second); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(terminal(t, out.String()), "\n"); got != strings.TrimSuffix(second, "\n") {
		t.Fatalf("after the redraw the terminal shows\n%s", got)
	}

	out.Reset()
	s = &screen{w: &out}
	_ = s.show(first)
	_ = s.show(second)
	if out.String() != first+"\n"+second || strings.Contains(out.String(), "\x1b") {
		t.Fatalf("plain frames %q", out.String())
	}

	out.Reset()
	p := &progressLine{w: &out, tty: true}
	p.show("waiting: 1/3")
	p.show("waiting: 3/3 done")
	p.show("x")
	p.done()
	if got := terminal(t, out.String()); len(got) != 1 || got[0] != "x" {
		t.Fatalf("progress line shows %q", got)
	}
	out.Reset()
	p = &progressLine{w: &out}
	p.show("a")
	p.show("a")
	p.show("b")
	p.done()
	if out.String() != "a\nb\n" {
		t.Fatalf("plain progress %q", out.String())
	}
}

// TestFrameRender checks the live table's columns for one frame.
func TestFrameRender(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	w := newWatchTracker("east", nil)
	p := part(0, mirroradmin.StateMirroring, 140, 89)
	p.LastFetch = now.Add(-1500 * time.Millisecond)
	p.LastError = "fetch: " + strings.Repeat("x", 100) + "\tend"
	w.observe(now.Add(-time.Second), mirrorOf(topicOf("orders", part(0, mirroradmin.StateMirroring, 40, 40))))
	f := w.observe(now, mirrorOf(topicOf("orders", p), mirroradmin.MirrorTopic{Name: "fresh", MirrorNameConfig: "east"}))
	var b strings.Builder
	if err := f.render(&b, time.Second); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	if !strings.HasPrefix(text, "Mirror east at 03:04:05 UTC, every 1s (Ctrl-C to stop)\n\nTOPIC") {
		t.Fatalf("header:\n%s", text)
	}
	if !rowHas(text, "orders", "MIRRORING", "140", "89", "51", "49", "0.5s", "1.5s ago", "fetch: xxx") || strings.Contains(text, "\tend") {
		t.Fatalf("orders row:\n%s", text)
	}
	if !rowHas(text, "fresh", "-", "MIRRORING") {
		t.Fatalf("a topic without partitions:\n%s", text)
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "orders") && len([]rune(line)) > 200 {
			t.Fatalf("the error cell was not clipped: %d characters", len([]rune(line)))
		}
	}
	if !strings.HasSuffix(text, "\n1/1 partitions mirroring, max lag 51 records, 0.5 s behind, 49 records/s, 1 with errors, 1 topic without partition status\n") {
		t.Fatalf("summary:\n%s", text)
	}
}
