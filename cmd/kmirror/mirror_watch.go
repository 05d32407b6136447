package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/pkg/mirroradmin"
)

// Live mirror status: `kmirror mirror describe NAME --watch`, `kmirror
// mirror wait` and the progress of the topic commands' --wait. Every figure
// comes from DescribeMirrors; the two the data plane does not report — the
// copy rate and the time behind the source — are derived from successive
// samples, so they are only as fine as the sampling interval.

// defaultWatchInterval is how often --watch and wait ask the cluster.
const defaultWatchInterval = time.Second

// rateWindow is how many successive samples a partition's rate spans: one
// interval alone jumps with every fetch; a few smooth it while still
// following a change within seconds.
const rateWindow = 5

// maxErrorCell bounds a LAST-ERROR cell in the live table, so that one long
// message does not push every other line off the screen.
const maxErrorCell = 60

// partitionKey names a mirrored partition.
type partitionKey struct {
	topic     string
	partition int32
}

// hwMark is a source high watermark and when the watch first saw it.
type hwMark struct {
	at time.Time
	hw int64
}

// endMark is a destination log end offset at a sample's time.
type endMark struct {
	at  time.Time
	end int64
}

// partitionTrack is what the watch remembers of one partition.
//
// Invariants: marks ascend in both time and hw, and at most marks[0] has
// hw <= the last seen log end (it is kept to interpolate from); ends
// ascend in time, hold at most rateWindow samples, and never decrease in
// end (a truncation restarts them).
type partitionTrack struct {
	firstSeen time.Time
	marks     []hwMark
	ends      []endMark
}

// watchRow is one partition's line of the live table.
type watchRow struct {
	Topic string `json:"topic"`
	// Partition is -1 for a topic the cluster gave no partition detail for.
	Partition           int32  `json:"partition"`
	State               string `json:"state"`
	LeaderID            int32  `json:"leader_id"`
	SourceHighWatermark int64  `json:"source_high_watermark"`
	LogEndOffset        int64  `json:"destination_log_end_offset"`
	Lag                 int64  `json:"lag"`
	// RecordsPerSecond is how fast the log end advanced over the last
	// samples; nil before two samples.
	RecordsPerSecond *float64 `json:"records_per_second"`
	// SecondsBehind estimates how long ago the source had the first record
	// this cluster lacks; nil when the lag is unknown.
	SecondsBehind *float64 `json:"seconds_behind"`
	// BehindAtLeast marks SecondsBehind as a lower bound: the partition
	// was already behind when the watch started.
	BehindAtLeast bool      `json:"seconds_behind_is_lower_bound,omitempty"`
	LastFetch     time.Time `json:"last_fetch,omitzero"`
	LastError     string    `json:"last_error,omitempty"`
}

// watchSummary condenses a frame into the figures an operator decides on.
type watchSummary struct {
	Partitions int `json:"partitions"`
	// States counts the partitions per state.
	States map[string]int `json:"states"`
	// TopicsPending counts the topics without partition status: not in
	// the mirror (yet), or not described by their leaders yet.
	TopicsPending int `json:"topics_without_partition_status"`
	// MaxLag is the greatest known lag, -1 when no lag is known.
	MaxLag int64 `json:"max_lag"`
	// LagUnknown counts the partitions whose lag is not known (no fetch
	// from the source yet): MaxLag does not cover them.
	LagUnknown int `json:"partitions_with_unknown_lag"`
	// SecondsBehind is the greatest known estimate, nil when none is.
	SecondsBehind    *float64 `json:"seconds_behind"`
	BehindAtLeast    bool     `json:"seconds_behind_is_lower_bound,omitempty"`
	RecordsPerSecond float64  `json:"records_per_second"`
	Errors           int      `json:"partitions_with_errors"`
}

// watchFrame is one sample of a mirror.
type watchFrame struct {
	Mirror  string       `json:"mirror"`
	At      time.Time    `json:"time"`
	Rows    []watchRow   `json:"partitions"`
	Summary watchSummary `json:"summary"`
	// Error is why this sample failed; Rows are then the previous ones.
	Error string `json:"error,omitempty"`
}

// stateNotInMirror stands for a topic the command waits for that the
// mirror does not (yet) hold.
const stateNotInMirror = "NOT-IN-MIRROR"

// watchTracker turns successive descriptions of a mirror into frames. It is
// pure: the caller gives each sample's time.
type watchTracker struct {
	mirror string
	topics []string // only these topics, all when empty
	parts  map[partitionKey]*partitionTrack
	last   []watchRow
}

func newWatchTracker(mirror string, topics []string) *watchTracker {
	return &watchTracker{mirror: mirror, topics: topics, parts: map[partitionKey]*partitionTrack{}}
}

// observe records a description taken at now and returns its frame.
func (w *watchTracker) observe(now time.Time, m mirroradmin.Mirror) watchFrame {
	var rows []watchRow
	seen := map[string]bool{}
	for _, t := range m.Topics {
		if len(w.topics) > 0 && !slices.Contains(w.topics, t.Name) {
			continue
		}
		seen[t.Name] = true
		if len(t.Partitions) == 0 {
			rows = append(rows, watchRow{Topic: t.Name, Partition: -1, State: membership(t), LeaderID: -1,
				SourceHighWatermark: -1, LogEndOffset: -1, Lag: -1})
			continue
		}
		for _, p := range t.Partitions {
			rows = append(rows, w.observePartition(now, t.Name, p))
		}
	}
	for _, t := range w.topics {
		if !seen[t] {
			rows = append(rows, watchRow{Topic: t, Partition: -1, State: stateNotInMirror, LeaderID: -1,
				SourceHighWatermark: -1, LogEndOffset: -1, Lag: -1})
		}
	}
	slices.SortFunc(rows, func(a, b watchRow) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition) - int(b.Partition)
	})
	w.last = rows
	return watchFrame{Mirror: w.mirror, At: now, Rows: rows, Summary: summarizeRows(rows)}
}

// failed returns a frame for a sample that could not be taken: the last
// rows, and the reason.
func (w *watchTracker) failed(now time.Time, err error) watchFrame {
	return watchFrame{Mirror: w.mirror, At: now, Rows: w.last, Summary: summarizeRows(w.last), Error: err.Error()}
}

func (w *watchTracker) observePartition(now time.Time, topic string, p mirroradmin.PartitionStatus) watchRow {
	key := partitionKey{topic, p.Partition}
	tr := w.parts[key]
	if tr == nil {
		tr = &partitionTrack{firstSeen: now}
		w.parts[key] = tr
	}
	row := watchRow{Topic: topic, Partition: p.Partition, State: p.State.String(), LeaderID: p.LeaderID,
		SourceHighWatermark: p.SourceHighWatermark, LogEndOffset: p.DestinationLogEndOffset, Lag: p.Lag,
		LastFetch: p.LastFetch, LastError: p.LastError}

	if end := p.DestinationLogEndOffset; end >= 0 {
		if n := len(tr.ends); n > 0 && end < tr.ends[n-1].end {
			tr.ends = tr.ends[:0] // truncated: the old samples say nothing about the new log
		}
		tr.ends = append(tr.ends, endMark{now, end})
		if len(tr.ends) > rateWindow {
			tr.ends = slices.Delete(tr.ends, 0, len(tr.ends)-rateWindow)
		}
		if first, last := tr.ends[0], tr.ends[len(tr.ends)-1]; len(tr.ends) > 1 && last.at.After(first.at) {
			r := float64(last.end-first.end) / last.at.Sub(first.at).Seconds()
			row.RecordsPerSecond = &r
		}
	}

	if hw := p.SourceHighWatermark; hw >= 0 {
		if n := len(tr.marks); n > 0 && hw < tr.marks[n-1].hw {
			tr.marks = tr.marks[:0] // the source's log went back; its history no longer applies
		}
		if n := len(tr.marks); n == 0 || hw > tr.marks[n-1].hw {
			tr.marks = append(tr.marks, hwMark{now, hw})
		}
	}
	if p.Lag < 0 || p.DestinationLogEndOffset < 0 {
		return row
	}
	var behind float64
	if p.Lag > 0 {
		behind, row.BehindAtLeast = tr.behind(now, p.DestinationLogEndOffset)
	}
	row.SecondsBehind = &behind
	return row
}

// behind estimates how long ago the source first had the record at offset
// end (the first one this cluster lacks): between the last sample whose
// high watermark did not cover it and the first that did, assuming the
// source grew evenly in between. When no sample before the first covering
// one exists, the answer is that sample's age, a lower bound (atLeast).
func (tr *partitionTrack) behind(now time.Time, end int64) (seconds float64, atLeast bool) {
	// Drop the marks the destination has passed, keeping the last of them.
	i := 0
	for i+1 < len(tr.marks) && tr.marks[i+1].hw <= end {
		i++
	}
	tr.marks = tr.marks[i:]
	if len(tr.marks) == 0 {
		return 0, false
	}
	covering, before := tr.marks[0], hwMark{}
	if covering.hw <= end {
		if len(tr.marks) == 1 {
			return 0, false // the source's last known end is behind us
		}
		before, covering = tr.marks[0], tr.marks[1]
	}
	if before.at.IsZero() {
		return now.Sub(covering.at).Seconds(), true
	}
	frac := float64(end-before.hw+1) / float64(covering.hw-before.hw)
	since := before.at.Add(time.Duration(frac * float64(covering.at.Sub(before.at))))
	return math.Max(0, now.Sub(since).Seconds()), false
}

// summarizeRows adds up a frame's rows.
func summarizeRows(rows []watchRow) watchSummary {
	s := watchSummary{States: map[string]int{}, MaxLag: -1}
	for _, r := range rows {
		if r.Partition < 0 {
			s.TopicsPending++
			continue
		}
		s.Partitions++
		s.States[r.State]++
		if r.Lag > s.MaxLag {
			s.MaxLag = r.Lag
		}
		if r.Lag < 0 {
			s.LagUnknown++
		}
		if r.RecordsPerSecond != nil {
			s.RecordsPerSecond += *r.RecordsPerSecond
		}
		if r.SecondsBehind != nil && (s.SecondsBehind == nil || *r.SecondsBehind > *s.SecondsBehind) {
			v := *r.SecondsBehind
			s.SecondsBehind, s.BehindAtLeast = &v, r.BehindAtLeast
		}
		if r.LastError != "" {
			s.Errors++
		}
	}
	return s
}

// String renders the summary line, e.g. "12/12 partitions mirroring, max
// lag 40 records, 0.2 s behind".
func (s watchSummary) String() string {
	switch {
	case s.Partitions == 0 && s.TopicsPending == 0:
		return "no partitions in the mirror"
	case s.Partitions == 0:
		return fmt.Sprintf("no partition status yet (%d %s)", s.TopicsPending, plural(int64(s.TopicsPending), "topic", "topics"))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d/%d partitions mirroring", s.States[mirroradmin.StateMirroring.String()], s.Partitions)
	if others := s.otherStates(mirroradmin.StateMirroring.String()); others != "" {
		fmt.Fprintf(&b, " (%s)", others)
	}
	switch {
	case s.MaxLag < 0:
		b.WriteString(", lag unknown")
	case s.LagUnknown > 0:
		fmt.Fprintf(&b, ", max lag %d %s (%d unknown)", s.MaxLag, plural(s.MaxLag, "record", "records"), s.LagUnknown)
	default:
		fmt.Fprintf(&b, ", max lag %d %s", s.MaxLag, plural(s.MaxLag, "record", "records"))
	}
	if s.SecondsBehind != nil {
		fmt.Fprintf(&b, ", %s s behind", seconds(*s.SecondsBehind, s.BehindAtLeast))
	}
	fmt.Fprintf(&b, ", %s records/s", rate(s.RecordsPerSecond))
	if s.Errors > 0 {
		fmt.Fprintf(&b, ", %d with errors", s.Errors)
	}
	if s.TopicsPending > 0 {
		fmt.Fprintf(&b, ", %d %s without partition status", s.TopicsPending, plural(int64(s.TopicsPending), "topic", "topics"))
	}
	return b.String()
}

// otherStates lists the counts of the states other than except, e.g.
// "1 PAUSED, 2 STOPPING", in a fixed order.
func (s watchSummary) otherStates(except string) string {
	names := make([]string, 0, len(s.States))
	for name := range s.States {
		if name != except {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = strconv.Itoa(s.States[name]) + " " + name
	}
	return strings.Join(parts, ", ")
}

// count returns how many rows are in state.
func (s watchSummary) count(state mirroradmin.State) int { return s.States[state.String()] }

// caughtUp reports whether every partition of the frame mirrors with a
// known lag of at most maxLag.
func (f watchFrame) caughtUp(maxLag int64) bool {
	if len(f.Rows) == 0 || f.Error != "" {
		return false
	}
	for _, r := range f.Rows {
		if r.State != mirroradmin.StateMirroring.String() || r.Lag < 0 || r.Lag > maxLag {
			return false
		}
	}
	return true
}

// allIn reports whether every partition of the frame is in state.
func (f watchFrame) allIn(state mirroradmin.State) bool {
	if len(f.Rows) == 0 || f.Error != "" {
		return false
	}
	for _, r := range f.Rows {
		if r.State != state.String() || r.Partition < 0 {
			return false
		}
	}
	return true
}

// errorsText lists the partitions' last errors for a failure message.
func (f watchFrame) errorsText() string {
	var parts []string
	for _, r := range f.Rows {
		if r.LastError != "" {
			parts = append(parts, fmt.Sprintf("%s-%d: %s", r.Topic, r.Partition, r.LastError))
		}
	}
	if f.Error != "" {
		parts = append(parts, f.Error)
	}
	return strings.Join(parts, "; ")
}

// render writes the frame as a header, the table and the summary line.
func (f watchFrame) render(w io.Writer, interval time.Duration) error {
	fmt.Fprintf(w, "Mirror %s at %s, every %s (Ctrl-C to stop)\n\n", tableCell(f.Mirror), f.At.UTC().Format("15:04:05 MST"), interval)
	rows := make([][]string, 0, len(f.Rows))
	for _, r := range f.Rows {
		part, rps, behind, fetched := "-", "-", "-", "-"
		if r.Partition >= 0 {
			part = strconv.Itoa(int(r.Partition))
		}
		if r.RecordsPerSecond != nil {
			rps = rate(*r.RecordsPerSecond)
		}
		if r.SecondsBehind != nil {
			behind = seconds(*r.SecondsBehind, r.BehindAtLeast) + "s"
		}
		if !r.LastFetch.IsZero() {
			fetched = seconds(math.Max(0, f.At.Sub(r.LastFetch).Seconds()), false) + "s ago"
		}
		leader := "-"
		if r.LeaderID >= 0 {
			leader = strconv.Itoa(int(r.LeaderID))
		}
		rows = append(rows, []string{tableCell(r.Topic), part, r.State, leader, offset(r.SourceHighWatermark),
			offset(r.LogEndOffset), offset(r.Lag), rps, behind, fetched, clip(tableCell(r.LastError), maxErrorCell)})
	}
	if err := writeTable(w, []string{"TOPIC", "PARTITION", "STATE", "LEADER", "SOURCE-HW", "LOG-END", "LAG", "RECORDS/S", "BEHIND", "LAST-FETCH", "LAST-ERROR"}, rows); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s\n", f.Summary)
	if f.Error != "" {
		fmt.Fprintf(w, "last refresh failed (retrying): %s\n", tableCell(f.Error))
	}
	return nil
}

// seconds formats a duration in seconds with one decimal, ">" marking a
// lower bound.
func seconds(s float64, atLeast bool) string {
	v := strconv.FormatFloat(s, 'f', 1, 64)
	if atLeast {
		return ">" + v
	}
	return v
}

// rate formats records per second: whole numbers from 10 up, one decimal
// below.
func rate(r float64) string {
	if r >= 10 || r == 0 {
		return strconv.FormatFloat(r, 'f', 0, 64)
	}
	return strconv.FormatFloat(r, 'f', 1, 64)
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// clip shortens s to at most n characters, marking the cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// isTerminal reports whether w is a terminal that understands cursor
// control: a character device, with TERM not "dumb".
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	return fi.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb"
}

// ANSI control sequences of the live displays.
const (
	ansiHome       = "\x1b[H"  // cursor to the top left
	ansiClearAll   = "\x1b[2J" // erase the screen
	ansiClearLine  = "\x1b[K"  // erase to the end of the line
	ansiClearBelow = "\x1b[J"  // erase from the cursor to the end of the screen
)

// screen shows successive frames: on a terminal each one replaces the
// previous in place (from the top of the screen, as watch(1) does, so that
// wrapped lines cannot throw the redraw off), elsewhere they follow each
// other separated by a blank line.
type screen struct {
	w      io.Writer
	tty    bool
	frames int
}

// show writes one frame's text.
func (s *screen) show(text string) error {
	var b strings.Builder
	switch {
	case s.tty && s.frames == 0:
		b.WriteString(ansiHome + ansiClearAll)
	case s.tty:
		b.WriteString(ansiHome)
	case s.frames > 0:
		b.WriteString("\n")
	}
	if s.tty {
		for _, line := range strings.SplitAfter(text, "\n") {
			if l, ok := strings.CutSuffix(line, "\n"); ok {
				b.WriteString(l + ansiClearLine + "\n")
			} else {
				b.WriteString(line)
			}
		}
		b.WriteString(ansiClearBelow)
	} else {
		b.WriteString(text)
	}
	s.frames++
	_, err := io.WriteString(s.w, b.String())
	return err
}

// progressLine shows a one-line progress report: rewritten in place on a
// terminal, a new line only when it changed elsewhere.
type progressLine struct {
	w    io.Writer
	tty  bool
	last string
}

func (p *progressLine) show(line string) {
	if p.tty {
		fmt.Fprintf(p.w, "\r%s%s", line, ansiClearLine)
	} else if line != p.last {
		fmt.Fprintln(p.w, line)
	}
	p.last = line
}

// done ends an in-place line so that what follows starts on its own.
func (p *progressLine) done() {
	if p.tty && p.last != "" {
		fmt.Fprintln(p.w)
	}
}

// sampler takes successive samples of one mirror.
type sampler struct {
	adm     *mirroradmin.Client
	name    string
	timeout time.Duration // per request
	tracker *watchTracker
	now     func() time.Time
	// source, when set, is a client of the source cluster: the lag is
	// then measured against the source's end offsets as of this sample
	// instead of the high watermark of the mirror's last fetch.
	source *kadm.Client
}

// errMirrorGone is a sample that cannot succeed by retrying.
var errMirrorGone = errors.New("mirror cannot be described")

// sample describes the mirror once. A failure the next sample may not see
// (a broker restarting, a timeout) yields a frame with Error set and a nil
// error; an unknown mirror or a refusal yields an error wrapping
// errMirrorGone.
func (s *sampler) sample(ctx context.Context) (watchFrame, error) {
	rctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ms, err := s.adm.DescribeMirrors(rctx, s.name)
	now := s.now()
	if err != nil {
		if ctx.Err() != nil {
			return watchFrame{}, ctx.Err()
		}
		return s.tracker.failed(now, err), nil
	}
	m, ok := ms.On(s.name)
	if !ok {
		return s.tracker.failed(now, errors.New("the cluster did not describe it")), nil
	}
	if m.Err != nil {
		if kerr.IsRetriable(m.Err) {
			return s.tracker.failed(now, m.Err), nil
		}
		return watchFrame{}, fmt.Errorf("%w %s: %w", errMirrorGone, s.name, m.Err)
	}
	if s.source != nil {
		if err := s.sourceEnds(rctx, m); err != nil {
			if ctx.Err() != nil {
				return watchFrame{}, ctx.Err()
			}
			return s.tracker.failed(now, fmt.Errorf("source end offsets: %w", err)), nil
		}
	}
	return s.tracker.observe(now, m), nil
}

// sourceEnds replaces the source high watermarks of m's partitions, which
// date from each partition's last fetch, with the source's end offsets
// now, and the lags with the distance to them. The mirror's figure can be
// stale (a throttled or backing-off fetcher, a source partition that stopped
// changing): after the producers stop, only the source can say that
// nothing is missing.
func (s *sampler) sourceEnds(ctx context.Context, m mirroradmin.Mirror) error {
	var topics []string
	for _, t := range m.Topics {
		if len(s.tracker.topics) == 0 || slices.Contains(s.tracker.topics, t.Name) {
			topics = append(topics, t.Name)
		}
	}
	if len(topics) == 0 {
		return nil
	}
	ends, err := s.source.ListEndOffsets(ctx, topics...)
	if err != nil {
		return err
	}
	for _, t := range m.Topics {
		for i := range t.Partitions {
			p := &t.Partitions[i]
			end, ok := ends.Lookup(t.Name, p.Partition)
			if !ok || end.Err != nil {
				p.SourceHighWatermark, p.Lag = -1, -1
				continue
			}
			p.SourceHighWatermark, p.Lag = end.Offset, -1
			if p.DestinationLogEndOffset >= 0 {
				p.Lag = max(0, end.Offset-p.DestinationLogEndOffset)
			}
		}
	}
	return nil
}

// sourceFlags name the source cluster for wait's --source-bootstrap.
type sourceFlags struct {
	bootstrap     string
	commandConfig string
}

func (f *sourceFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.bootstrap, "source-bootstrap", "",
		"the source cluster's brokers: measure the lag against the source's end offsets now, not the mirror's last fetch")
	cmd.Flags().StringVar(&f.commandConfig, "source-command-config", "",
		"client properties file for a secured source cluster (as --command-config)")
}

// client returns a client of the source cluster, nil without
// --source-bootstrap.
func (f *sourceFlags) client() (*kgo.Client, error) {
	if f.bootstrap == "" {
		if f.commandConfig != "" {
			return nil, errors.New("--source-command-config needs --source-bootstrap")
		}
		return nil, nil
	}
	seeds := strings.Split(f.bootstrap, ",")
	opts := []kgo.Opt{kgo.SeedBrokers(seeds...)}
	sec, err := propertiesFileOpts("--source-command-config", f.commandConfig)
	if err != nil {
		return nil, err
	}
	opts = append(opts, sec...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("source client: %w", err)
	}
	return cl, nil
}

// newSampler returns a sampler of the mirror name over adm.
func (f *mirrorFlags) newSampler(adm *mirroradmin.Client, name string, topics []string) *sampler {
	return &sampler{adm: adm, name: name, timeout: f.timeout, tracker: newWatchTracker(name, topics), now: time.Now}
}

// watch refreshes the mirror's live table every interval until ctx ends
// (Ctrl-C), which is a normal end. With JSON output every sample is one
// line of JSON.
func (f *mirrorFlags) watch(ctx context.Context, adm *mirroradmin.Client, name string, interval time.Duration, format outputFormat, out io.Writer) error {
	s := f.newSampler(adm, name, nil)
	scr := &screen{w: out, tty: format == formatTable && isTerminal(out)}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		frame, err := s.sample(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if format == formatJSON {
			err = writeJSONLine(out, frame)
		} else {
			var b strings.Builder
			if err = frame.render(&b, interval); err == nil {
				err = scr.show(b.String())
			}
		}
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// writeJSONLine writes v as one line of JSON.
func writeJSONLine(w io.Writer, v any) error {
	var b strings.Builder
	if err := writeJSON(&b, v); err != nil {
		return err
	}
	_, err := io.WriteString(w, strings.Join(strings.Fields(b.String()), " ")+"\n")
	return err
}

// waitFor samples the mirror until done accepts a frame, showing each
// frame's progress on progress, and returns the last frame. It gives up
// when ctx ends, with an error that tells what was still missing.
func (f *mirrorFlags) waitFor(ctx context.Context, s *sampler, interval time.Duration, progress *progressLine,
	line func(watchFrame) string, done func(watchFrame) bool) (watchFrame, error) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	start := s.now()
	var last watchFrame
	for {
		frame, err := s.sample(ctx)
		if err != nil && ctx.Err() == nil {
			progress.done()
			return last, err
		}
		if err == nil {
			last = frame
			progress.show(line(frame))
			if done(frame) {
				progress.done()
				return frame, nil
			}
		}
		select {
		case <-ctx.Done():
			progress.done()
			msg := fmt.Sprintf("gave up after %s", s.now().Sub(start).Round(100*time.Millisecond))
			if errors.Is(ctx.Err(), context.Canceled) {
				msg = "interrupted"
			}
			if last.Rows == nil && last.Error == "" {
				return last, errors.New(msg + " before the first answer")
			}
			if e := last.errorsText(); e != "" {
				msg += "; errors: " + e
			}
			return last, fmt.Errorf("%s: %s", msg, last.Summary)
		case <-tick.C:
		}
	}
}

// waitStates is the state a topic command's --wait waits for.
var waitStates = map[string]mirroradmin.State{
	"add-topics":    mirroradmin.StateMirroring,
	"pause-topics":  mirroradmin.StatePaused,
	"resume-topics": mirroradmin.StateMirroring,
	"remove-topics": mirroradmin.StateStopped,
}

// waitForState waits until every partition of topics is in state, showing
// how many are, for a topic command's --wait.
func (f *mirrorFlags) waitForState(ctx context.Context, adm *mirroradmin.Client, name string, topics []string,
	state mirroradmin.State, interval time.Duration, stderr io.Writer) error {
	s := f.newSampler(adm, name, topics)
	progress := &progressLine{w: stderr, tty: isTerminal(stderr)}
	line := func(fr watchFrame) string {
		l := fmt.Sprintf("waiting for %s: %d/%d partitions %s", name, fr.Summary.count(state), fr.Summary.Partitions, state)
		if others := fr.Summary.otherStates(state.String()); others != "" {
			l += " (" + others + ")"
		}
		return l
	}
	_, err := f.waitFor(ctx, s, interval, progress, line, func(fr watchFrame) bool { return fr.allIn(state) })
	if err != nil {
		return fmt.Errorf("waiting for the partitions of %s to be %s: %w", name, state, err)
	}
	return nil
}

func newMirrorWaitCommand(f *mirrorFlags) *cobra.Command {
	var (
		maxLag   int64
		interval time.Duration
		source   sourceFlags
	)
	cmd := &cobra.Command{
		Use:   "wait NAME [TOPIC...] --max-lag N",
		Short: "Wait until every partition of a mirror (or of the given topics) is MIRRORING with a lag of at most --max-lag records",
		Long: `Wait until every partition of the mirror NAME — or of the given topics of it —
is MIRRORING and at most --max-lag records behind the source's high
watermark, showing progress on stderr; then print the summary and exit 0.
--timeout bounds the whole wait: when it passes first, the command exits 1
naming what was missing (partitions not MIRRORING, the largest lag, the
partitions' last errors).

The lag is the mirror's own figure: the distance from this cluster's log end
to the source's high watermark as of the partition's last fetch (see
LAST-FETCH in describe). A fetcher that is throttled or backing off reports
an older, smaller lag. With --source-bootstrap the command asks the source
for its end offsets at every sample instead, which is what a planned failover
needs: stop the producers on the source, then

  kmirror mirror wait NAME --max-lag 0 --source-bootstrap SOURCE:9092

returns only when every record the source holds is on this cluster.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if maxLag < 0 {
				return fmt.Errorf("invalid --max-lag %d: must be 0 or more", maxLag)
			}
			if interval <= 0 {
				return fmt.Errorf("invalid --interval %s: must be positive", interval)
			}
			name, topics := args[0], dedupe(args[1:])
			src, err := source.client()
			if err != nil {
				return err
			}
			if src != nil {
				defer src.Close()
			}
			return f.run(cmd, func(ctx context.Context, adm *mirroradmin.Client, format outputFormat) error {
				s := f.newSampler(adm, name, topics)
				if src != nil {
					s.source = kadm.NewClient(src)
				}
				stderr := cmd.ErrOrStderr()
				progress := &progressLine{w: stderr, tty: isTerminal(stderr)}
				line := func(fr watchFrame) string { return "waiting for " + name + ": " + fr.Summary.String() }
				frame, err := f.waitFor(ctx, s, interval, progress, line, func(fr watchFrame) bool { return fr.caughtUp(maxLag) })
				if err != nil {
					return fmt.Errorf("mirror %s did not reach a lag of at most %d: %w", name, maxLag, err)
				}
				if format == formatJSON {
					return writeJSON(cmd.OutOrStdout(), frame)
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "mirror %s caught up: %s\n", name, frame.Summary)
				return err
			})
		},
	}
	cmd.Flags().Int64Var(&maxLag, "max-lag", 0, "the largest lag, in records, that counts as caught up")
	cmd.Flags().DurationVar(&interval, "interval", defaultWatchInterval, "how often to ask the cluster")
	source.register(cmd)
	return cmd
}
