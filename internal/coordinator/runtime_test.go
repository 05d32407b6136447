package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/record"
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
	host   *testHost
	rt     *Runtime[*kvShard]
	clock  *ManualClock
	events *eventLog
	logs   *captureHandler
}

func newFixture(t *testing.T, host *testHost) *fixture {
	t.Helper()
	f := &fixture{t: t, host: host, clock: NewManualClock(time.Unix(1_700_000_000, 0)), events: &eventLog{}, logs: &captureHandler{}}
	f.rt = New[*kvShard](host, Config[*kvShard]{
		Topic:         "__test",
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

func memHost() *testHost {
	return newTestHost(func(int32) (backingLog, error) { return &memLog{}, nil })
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
	// Keys whose Java hash is negative land on abs(hash) % n.
	if h := javaStringHash("hello world"); h != 1794106052 {
		t.Fatalf("hash of %q = %d", "hello world", h)
	}
	if h, p := javaStringHash("zzzzzz"), PartitionFor("zzzzzz", 50); h != -685785664 || p != 14 {
		t.Fatalf("hash of zzzzzz %d mapped to %d, want -685785664 → 14", h, p)
	}
}

func TestLoadReplaysAndServes(t *testing.T) {
	host := memHost()
	l := host.log(0)
	for _, b := range [][]byte{batchOf(t, "a", "1", "b", "2"), batchOf(t, "a", "3"), batchOf(t, "b", "")} {
		if _, err := l.b.append(b, 0); err != nil {
			t.Fatal(err)
		}
	}
	f := newFixture(t, host)
	host.lead(0, true, 1)
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
	host := memHost()
	l := host.log(0)
	l.b.append(batchOf(t, "a", "1"), 0)                           // offset 0
	l.b.append(batchOf(t, "x", "1", "bad-key", "?", "y", "2"), 0) // offsets 1..3, bad at 2
	// A batch whose CRC is wrong: skipped whole, reported at its offset 4.
	corrupt := batchOf(t, "z", "1")
	corrupt[len(corrupt)-1] ^= 0xff
	record.SetBaseOffset(corrupt, 4)
	l.b.(*memLog).appendRaw(corrupt, 5)
	l.b.append(batchOf(t, "w", "5"), 0) // offset 5
	f := newFixture(t, host)
	host.lead(0, true, 1)
	f.waitState(0, PartitionActive)
	for k, want := range map[string]string{"a": "1", "x": "1", "y": "2", "w": "5"} {
		if v, ok := f.get(0, k); !ok || v != want {
			t.Errorf("%s = %q %v, want %q", k, v, ok, want)
		}
	}
	if _, ok := f.get(0, "z"); ok {
		t.Errorf("record of a corrupt batch was loaded")
	}
	if off, ok := f.logs.find("skipping malformed coordinator record while loading", "offset"); !ok || off != 2 {
		t.Errorf("malformed record reported at offset %d (found %v), want 2", off, ok)
	}
	if off, ok := f.logs.find("skipping corrupt batch while loading", "offset"); !ok || off != 4 {
		t.Errorf("corrupt batch reported at offset %d (found %v), want 4", off, ok)
	}
}

func TestLoadingAnswersLoadInProgress(t *testing.T) {
	host := memHost()
	l := host.log(0)
	l.b.append(batchOf(t, "a", "1"), 0)
	gate := make(chan struct{})
	l.readGate = gate
	f := newFixture(t, host)
	host.lead(0, true, 1)
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
	host := memHost()
	f := newFixture(t, host)
	host.lead(0, true, 1)
	f.waitState(0, PartitionActive)
	l := host.log(0)
	gate, appended := make(chan struct{}), make(chan int64, 1)
	l.mu.Lock()
	l.gate, l.appended = gate, appended
	l.mu.Unlock()

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
	host := memHost()
	f := newFixture(t, host)
	host.lead(0, true, 1)
	f.waitState(0, PartitionActive)
	f.set(0, "k", "old")
	l := host.log(0)
	l.mu.Lock()
	l.failNext = fmt.Errorf("too big: %w", kerr.MessageTooLarge)
	l.mu.Unlock()
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
	host := memHost()
	f := newFixture(t, host)
	host.lead(0, true, 1)
	f.waitState(0, PartitionActive)
	l := host.log(0)
	l.mu.Lock()
	l.failAfter = fmt.Errorf("replication wait: %w", kerr.RequestTimedOut)
	l.mu.Unlock()
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
	host := memHost()
	f := newFixture(t, host)
	host.lead(0, true, 1)
	f.waitState(0, PartitionActive)
	// A request parked in the shard (like a JoinGroup waiting for a
	// rebalance) fails with NOT_COORDINATOR when the shard unloads.
	waiter := make(chan error, 1)
	if err := f.rt.Write(context.Background(), 0, func(s *kvShard) (Result, error) {
		return Result{Apply: func(int64) { s.waiters = append(s.waiters, waiter) }}, nil
	}); err != nil {
		t.Fatal(err)
	}
	host.lead(0, false, 1)
	if err := <-waiter; !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("parked request: %v", err)
	}
	f.waitGone(0)
	if err := f.rt.Write(context.Background(), 0, set("k", []byte("v"))); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("write after losing leadership: %v", err)
	}
}

func TestFencedAppendStopsServing(t *testing.T) {
	host := memHost()
	f := newFixture(t, host)
	host.lead(0, true, 1)
	f.waitState(0, PartitionActive)
	f.set(0, "a", "1")
	// Leadership moves on without this runtime hearing of it yet.
	host.mu.Lock()
	host.leaders[0] = 2
	host.mu.Unlock()
	if err := f.rt.Write(context.Background(), 0, set("b", []byte("2"))); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("fenced write: %v", err)
	}
	if err := f.rt.Write(context.Background(), 0, set("c", []byte("3"))); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("write after fencing: %v", err)
	}
	// The host reports the new epoch: the partition reloads and serves.
	host.lead(0, true, 2)
	f.waitState(0, PartitionActive)
	f.set(0, "c", "3")
	if v, _ := f.get(0, "a"); v != "1" {
		t.Fatalf("a = %q after the epoch change", v)
	}
}

func TestRestartRestoresState(t *testing.T) {
	host := memHost()
	f := newFixture(t, host)
	host.lead(0, true, 1)
	host.lead(2, true, 1)
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
	f.rt.Close()

	f2 := newFixture(t, host)
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
}

func TestTimers(t *testing.T) {
	host := memHost()
	f := newFixture(t, host)
	host.lead(0, true, 1)
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
	host.lead(0, false, 1)
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
	host := memHost()
	f := newFixture(t, host)
	for i := 0; i < 3; i++ {
		if err := f.rt.EnsureTopic(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if len(host.ensured) != 1 || host.ensured[0].Name != "__test" || host.ensured[0].Partitions != 3 {
		t.Fatalf("ensured %+v", host.ensured)
	}
}
