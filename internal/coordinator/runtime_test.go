package coordinator_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	. "github.com/kmirror/kmirror/internal/coordinator"
	"github.com/kmirror/kmirror/internal/coordinator/coordinatortest"
	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/storage"
)

// captureHandler keeps log records for assertions.
type captureHandler struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *captureHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *captureHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.records = append(h.records, r.Clone())
	h.mu.Unlock()
	return nil
}
func (h *captureHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *captureHandler) WithGroup(string) slog.Handler      { return h }

// find returns the int64 value of attr in the first record whose message is
// msg.
func (h *captureHandler) find(msg, attr string) (int64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.records {
		if r.Message != msg {
			continue
		}
		var v int64
		found := false
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == attr {
				v, found = a.Value.Int64(), true
				return false
			}
			return true
		})
		return v, found
	}
	return 0, false
}

type fixture struct {
	t      *testing.T
	host   *coordinatortest.Host
	rt     *Runtime[*kvShard]
	clock  *ManualClock
	events *eventLog
	logs   *captureHandler
}

func newFixture(t *testing.T, host *coordinatortest.Host) *fixture {
	t.Helper()
	f := &fixture{t: t, host: host, clock: NewManualClock(time.Unix(1_700_000_000, 0)), events: &eventLog{}, logs: &captureHandler{}}
	f.rt = New[*kvShard](host, Config[*kvShard]{
		Topic:         topic,
		Partitions:    3,
		NewShard:      newKVShard(f.events),
		AppendTimeout: 10 * time.Second,
		Clock:         f.clock,
		Logger:        slog.New(f.logs),
	})
	f.rt.Start()
	t.Cleanup(f.rt.Close)
	return f
}

func (f *fixture) waitState(p int32, want PartitionState) {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, ps := range f.rt.Partitions() {
			if ps.Partition == p && ps.State == want {
				return
			}
		}
		time.Sleep(time.Millisecond)
	}
	f.t.Fatalf("partition %d never reached state %d: %+v", p, want, f.rt.Partitions())
}

func (f *fixture) waitGone(p int32) {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		found := false
		for _, ps := range f.rt.Partitions() {
			found = found || ps.Partition == p
		}
		if !found {
			return
		}
		time.Sleep(time.Millisecond)
	}
	f.t.Fatalf("partition %d still hosted: %+v", p, f.rt.Partitions())
}

func (f *fixture) get(p int32, key string) (string, bool) {
	f.t.Helper()
	var v string
	var ok bool
	if err := f.rt.Read(context.Background(), p, get(key, &v, &ok)); err != nil {
		f.t.Fatalf("read %s: %v", key, err)
	}
	return v, ok
}

func (f *fixture) set(p int32, key, value string) {
	f.t.Helper()
	if err := f.rt.Write(context.Background(), p, set(key, []byte(value))); err != nil {
		f.t.Fatalf("write %s: %v", key, err)
	}
}

// batchOf builds a batch of key=value records (value "" → tombstone).
func batchOf(t *testing.T, kv ...string) []byte {
	t.Helper()
	var recs []record.Record
	for i := 0; i < len(kv); i += 2 {
		var v []byte
		if kv[i+1] != "" {
			v = []byte(kv[i+1])
		}
		recs = append(recs, record.Record{OffsetDelta: int32(i / 2), Key: []byte(kv[i]), Value: v})
	}
	b, err := record.Build(record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const topic = "__test"

// newHost returns a host over storage logs in a fresh directory, closed at
// the end of the test.
func newHost(t *testing.T) *coordinatortest.Host {
	t.Helper()
	h := coordinatortest.NewHost(t.TempDir(), slog.New(slog.DiscardHandler))
	t.Cleanup(func() { h.Close() })
	return h
}

// plog returns the test log of a partition.
func plog(t *testing.T, h *coordinatortest.Host, p int32) *coordinatortest.Log {
	t.Helper()
	l, err := h.Log(topic, p)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// appendData appends batches to a partition as data the coordinator did not
// write (leader appends at epoch 0).
func appendData(t *testing.T, l *coordinatortest.Log, batches ...[]byte) {
	t.Helper()
	for _, b := range batches {
		if _, err := l.Storage().AppendAsLeader(b, 0, storage.OriginCoordinator); err != nil {
			t.Fatal(err)
		}
	}
	l.Storage().SetHighWatermark(l.Storage().LogEndOffset())
}

func TestPartitionFor(t *testing.T) {
	for _, c := range []struct {
		key  string
		n    int32
		want int32
	}{
		{"", 50, 0},
		{"a", 50, 97 % 50},
		{"hello", 50, 99162322 % 50},
		{"Aa", 50, 2112 % 50},
		{"BB", 50, 2112 % 50},
		{"polygenelubricants", 50, 0}, // hashCode is MinInt32, Kafka's abs maps it to 0
		{"\U0001F600", 7, 1772899 % 7},
		{"x", 0, 0},
	} {
		if got := PartitionFor(c.key, c.n); got != c.want {
			t.Errorf("PartitionFor(%q, %d) = %d, want %d", c.key, c.n, got, c.want)
		}
	}
	// "hello world".hashCode() is 1794106052; "zzzzzz".hashCode() is
	// -685785664, whose abs lands on 685785664 % 50 = 14.
	if p := PartitionFor("hello world", 50); p != 1794106052%50 {
		t.Fatalf("hello world → %d", p)
	}
	if p := PartitionFor("zzzzzz", 50); p != 14 {
		t.Fatalf("zzzzzz → %d, want 14", p)
	}
}

func TestLoadReplaysAndServes(t *testing.T) {
	host := newHost(t)
	appendData(t, plog(t, host, 0), batchOf(t, "a", "1", "b", "2"), batchOf(t, "a", "3"), batchOf(t, "b", ""))
	f := newFixture(t, host)
	host.Lead(topic, 0, true, 1)
	f.waitState(0, PartitionActive)
	if v, ok := f.get(0, "a"); !ok || v != "3" {
		t.Fatalf("a = %q %v after load, want 3", v, ok)
	}
	if _, ok := f.get(0, "b"); ok {
		t.Fatalf("b survived its tombstone")
	}
	f.set(0, "c", "4")
	if v, _ := f.get(0, "c"); v != "4" {
		t.Fatalf("c = %q after write", v)
	}
	// Not led here: NOT_COORDINATOR.
	if err := f.rt.Write(context.Background(), 1, set("x", []byte("y"))); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("write to a partition not led: %v", err)
	}
}

func TestMalformedRecordSkippedWithOffset(t *testing.T) {
	host := newHost(t)
	l := plog(t, host, 0)
	appendData(t, l,
		batchOf(t, "a", "1"),                           // offset 0
		batchOf(t, "x", "1", "bad-key", "?", "y", "2"), // offsets 1..3, malformed at 2
	)
	// A batch with a valid CRC whose records do not decode (offset 4).
	unreadable := batchOf(t, "q", "1")
	unreadable[len(unreadable)-3] = 0x7f // the record's value length now overruns it
	record.SetBaseOffset(unreadable, 4)
	putCRC(unreadable)
	if err := l.AppendRaw(unreadable); err != nil {
		t.Fatal(err)
	}
	appendData(t, l, batchOf(t, "w", "5"), batchOf(t, "z", "6")) // offsets 5 and 6
	// Corrupt the last batch on disk: its CRC no longer matches.
	seg := filepath.Join(l.Storage().Dir(), "00000000000000000000.log")
	fh, err := os.OpenFile(seg, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := fh.Stat()
	if _, err := fh.WriteAt([]byte{0xee}, st.Size()-1); err != nil {
		t.Fatal(err)
	}
	fh.Close()

	f := newFixture(t, host)
	host.Lead(topic, 0, true, 1)
	f.waitState(0, PartitionActive)
	for k, want := range map[string]string{"a": "1", "x": "1", "y": "2", "w": "5"} {
		if v, ok := f.get(0, k); !ok || v != want {
			t.Errorf("%s = %q %v, want %q", k, v, ok, want)
		}
	}
	for _, k := range []string{"q", "z", "bad-key"} {
		if _, ok := f.get(0, k); ok {
			t.Errorf("%s was loaded", k)
		}
	}
	for msg, want := range map[string]int64{
		"skipping malformed coordinator record while loading":  2,
		"skipping unreadable records of a batch while loading": 4,
		"skipping corrupt batch while loading":                 6,
	} {
		if off, ok := f.logs.find(msg, "offset"); !ok || off != want {
			t.Errorf("%q reported at offset %d (found %v), want %d", msg, off, ok, want)
		}
	}
}

// putCRC recomputes a batch's CRC after a test edits it.
func putCRC(b []byte) {
	binary.BigEndian.PutUint32(b[record.CRCPos:], record.ComputeCRC(b))
}

func TestLoadingAnswersLoadInProgress(t *testing.T) {
	host := newHost(t)
	l := plog(t, host, 0)
	appendData(t, l, batchOf(t, "a", "1"))
	gate := make(chan struct{})
	l.HoldReads(gate)
	f := newFixture(t, host)
	host.Lead(topic, 0, true, 1)
	if err := f.rt.Write(context.Background(), 0, set("b", []byte("2"))); !errors.Is(err, kerr.CoordinatorLoadInProgress) {
		t.Fatalf("write while loading: %v", err)
	}
	var v string
	var ok bool
	if err := f.rt.Read(context.Background(), 0, get("a", &v, &ok)); !errors.Is(err, kerr.CoordinatorLoadInProgress) {
		t.Fatalf("read while loading: %v", err)
	}
	close(gate)
	f.waitState(0, PartitionActive)
	if v, ok := f.get(0, "a"); !ok || v != "1" {
		t.Fatalf("a = %q %v", v, ok)
	}
}

func TestWriteWaitsForCommit(t *testing.T) {
	host := newHost(t)
	f := newFixture(t, host)
	host.Lead(topic, 0, true, 1)
	f.waitState(0, PartitionActive)
	gate, appended := make(chan struct{}), make(chan int64, 1)
	plog(t, host, 0).HoldCommits(gate, appended)

	applied := make(chan int64, 1)
	done := make(chan error, 1)
	go func() {
		done <- f.rt.Write(context.Background(), 0, func(s *kvShard) (Result, error) {
			return Result{
				Records: []Record{{Key: []byte("k"), Value: []byte("v")}},
				Apply:   func(base int64) { s.put("k", []byte("v")); applied <- base },
			}, nil
		})
	}()
	base := <-appended // in the log, not committed yet
	select {
	case <-applied:
		t.Fatal("applied before the commit")
	case err := <-done:
		t.Fatalf("write returned before the commit: %v", err)
	default:
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := <-applied; got != base {
		t.Fatalf("applied at %d, appended at %d", got, base)
	}
	if v, _ := f.get(0, "k"); v != "v" {
		t.Fatalf("k = %q", v)
	}
}

func TestRefusedAppendLeavesState(t *testing.T) {
	host := newHost(t)
	f := newFixture(t, host)
	host.Lead(topic, 0, true, 1)
	f.waitState(0, PartitionActive)
	f.set(0, "k", "old")
	plog(t, host, 0).FailNextAppend(fmt.Errorf("too big: %w", kerr.MessageTooLarge))
	var onErr error
	err := f.rt.Write(context.Background(), 0, func(s *kvShard) (Result, error) {
		return Result{
			Records: []Record{{Key: []byte("k"), Value: []byte("new")}},
			Apply:   func(int64) { s.put("k", []byte("new")) },
			OnError: func(err error) { onErr = err },
		}, nil
	})
	if !errors.Is(err, kerr.MessageTooLarge) || !errors.Is(onErr, kerr.MessageTooLarge) {
		t.Fatalf("write: %v, OnError: %v", err, onErr)
	}
	if v, _ := f.get(0, "k"); v != "old" {
		t.Fatalf("k = %q after a refused write", v)
	}
	if f.events.count("loaded") != 1 {
		t.Fatalf("a refused write reloaded the shard")
	}
}

func TestUnknownAppendOutcomeReloads(t *testing.T) {
	host := newHost(t)
	f := newFixture(t, host)
	host.Lead(topic, 0, true, 1)
	f.waitState(0, PartitionActive)
	plog(t, host, 0).FailAfterNextAppend(fmt.Errorf("replication wait: %w", kerr.RequestTimedOut))
	applied := false
	err := f.rt.Write(context.Background(), 0, func(s *kvShard) (Result, error) {
		return Result{
			Records: []Record{{Key: []byte("k"), Value: []byte("v")}},
			Apply:   func(int64) { applied = true },
		}, nil
	})
	if !errors.Is(err, kerr.RequestTimedOut) || applied {
		t.Fatalf("write: %v, applied %v", err, applied)
	}
	// The record reached the log, so the reloaded state has it.
	f.waitState(0, PartitionActive)
	if v, ok := f.get(0, "k"); !ok || v != "v" {
		t.Fatalf("after reload k = %q %v, want the logged value", v, ok)
	}
	if f.events.count("loaded") != 2 || f.events.count("unloaded") != 1 {
		t.Fatalf("events %v", f.events.events)
	}
}

func TestLeadershipLossUnloads(t *testing.T) {
	host := newHost(t)
	f := newFixture(t, host)
	host.Lead(topic, 0, true, 1)
	f.waitState(0, PartitionActive)
	// A request parked in the shard (like a JoinGroup waiting for a
	// rebalance) fails with NOT_COORDINATOR when the shard unloads.
	waiter := make(chan error, 1)
	if err := f.rt.Write(context.Background(), 0, func(s *kvShard) (Result, error) {
		return Result{Apply: func(int64) { s.waiters = append(s.waiters, waiter) }}, nil
	}); err != nil {
		t.Fatal(err)
	}
	host.Lead(topic, 0, false, 1)
	if err := <-waiter; !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("parked request: %v", err)
	}
	f.waitGone(0)
	if err := f.rt.Write(context.Background(), 0, set("k", []byte("v"))); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("write after losing leadership: %v", err)
	}
}

func TestFencedAppendStopsServing(t *testing.T) {
	host := newHost(t)
	f := newFixture(t, host)
	host.Lead(topic, 0, true, 1)
	f.waitState(0, PartitionActive)
	f.set(0, "a", "1")
	// Leadership moves on without this runtime hearing of it yet.
	host.Fence(topic, 0, 2)
	if err := f.rt.Write(context.Background(), 0, set("b", []byte("2"))); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("fenced write: %v", err)
	}
	if err := f.rt.Write(context.Background(), 0, set("c", []byte("3"))); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("write after fencing: %v", err)
	}
	// The host reports the new epoch: the partition reloads and serves.
	host.Lead(topic, 0, true, 2)
	f.waitState(0, PartitionActive)
	f.set(0, "c", "3")
	if v, _ := f.get(0, "a"); v != "1" {
		t.Fatalf("a = %q after the epoch change", v)
	}
	if _, ok := f.get(0, "b"); ok {
		t.Fatalf("the fenced write is visible")
	}
}

func TestRestartRestoresState(t *testing.T) {
	dir := t.TempDir()
	host := coordinatortest.NewHost(dir, slog.New(slog.DiscardHandler))
	f := newFixture(t, host)
	host.Lead(topic, 0, true, 1)
	host.Lead(topic, 2, true, 1)
	f.waitState(0, PartitionActive)
	f.waitState(2, PartitionActive)
	f.set(0, "a", "1")
	f.set(2, "b", "2")
	f.set(0, "a", "3")
	// A transaction: pending until its marker.
	if err := f.rt.Write(context.Background(), 0, func(s *kvShard) (Result, error) {
		return Result{Records: []Record{{Key: []byte("t"), Value: []byte("txn")}}, Producer: &Producer{ID: 7, Epoch: 0},
			Apply: func(int64) {}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := f.rt.Write(context.Background(), 0, func(s *kvShard) (Result, error) {
		m := Marker{ProducerID: 7, ProducerEpoch: 0, CoordinatorEpoch: 3, Commit: true}
		return Result{Marker: &m, Apply: func(int64) { s.complete(m) }}, nil
	}); err != nil {
		t.Fatal(err)
	}
	// An aborted one.
	if err := f.rt.Write(context.Background(), 0, func(s *kvShard) (Result, error) {
		return Result{Records: []Record{{Key: []byte("u"), Value: []byte("aborted")}}, Producer: &Producer{ID: 8, Epoch: 0},
			Apply: func(int64) {}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := f.rt.Write(context.Background(), 0, func(s *kvShard) (Result, error) {
		m := Marker{ProducerID: 8, ProducerEpoch: 0, CoordinatorEpoch: 3, Commit: false}
		return Result{Marker: &m, Apply: func(int64) { s.complete(m) }}, nil
	}); err != nil {
		t.Fatal(err)
	}
	f.rt.Close()
	if err := host.Close(); err != nil {
		t.Fatal(err)
	}

	// A new node process over the same directory.
	host2 := coordinatortest.NewHost(dir, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { host2.Close() })
	host2.Lead(topic, 0, true, 2)
	host2.Lead(topic, 2, true, 2)
	f2 := newFixture(t, host2)
	f2.waitState(0, PartitionActive)
	f2.waitState(2, PartitionActive)
	for _, c := range []struct {
		p    int32
		k, v string
	}{{0, "a", "3"}, {2, "b", "2"}, {0, "t", "txn"}} {
		if v, ok := f2.get(c.p, c.k); !ok || v != c.v {
			t.Errorf("after restart %d/%s = %q %v, want %q", c.p, c.k, v, ok, c.v)
		}
	}
	if _, ok := f2.get(0, "u"); ok {
		t.Errorf("aborted write visible after restart")
	}
}

func TestTimers(t *testing.T) {
	host := newHost(t)
	f := newFixture(t, host)
	host.Lead(topic, 0, true, 1)
	f.waitState(0, PartitionActive)
	fired := make(chan string, 4)
	schedule := func(key string, d time.Duration, val string) {
		t.Helper()
		if err := f.rt.Write(context.Background(), 0, func(s *kvShard) (Result, error) {
			return Result{Apply: func(int64) {
				s.ctx.Timers.Schedule(key, f.clock.Now().Add(d), func(s *kvShard) (Result, error) {
					return Result{Records: []Record{{Key: []byte(key), Value: []byte(val)}}, Apply: func(int64) {
						s.put(key, []byte(val))
						fired <- key + "=" + val
					}}, nil
				})
			}}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	schedule("t1", 5*time.Second, "first")
	schedule("t1", 8*time.Second, "second") // replaces the first
	schedule("t2", 6*time.Second, "x")
	f.clock.Advance(6 * time.Second)
	if got := <-fired; got != "t2=x" {
		t.Fatalf("fired %s, want t2=x", got)
	}
	f.clock.Advance(2 * time.Second)
	if got := <-fired; got != "t1=second" {
		t.Fatalf("fired %s, want t1=second", got)
	}
	if v, _ := f.get(0, "t1"); v != "second" {
		t.Fatalf("t1 = %q", v)
	}
	// Unloading stops pending timers.
	schedule("t3", time.Second, "never")
	host.Lead(topic, 0, false, 1)
	f.waitGone(0)
	deadline := time.Now().Add(10 * time.Second)
	for f.clock.Pending() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d timers still registered after unload", f.clock.Pending())
		}
		time.Sleep(time.Millisecond)
	}
	if !f.events.has("unloaded") {
		t.Fatal("shard not told it was unloaded")
	}
}

func TestEnsureTopicOnce(t *testing.T) {
	host := newHost(t)
	f := newFixture(t, host)
	for i := 0; i < 3; i++ {
		if err := f.rt.EnsureTopic(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if ts := host.Topics(); len(ts) != 1 || ts[0].Name != topic || ts[0].Partitions != 3 {
		t.Fatalf("ensured %+v", ts)
	}
}
