package storage

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// managerAppend appends one plain batch of records to l and moves its high
// watermark to the end.
func managerAppend(t *testing.T, l *Log, clk *testClock, recs ...kv) {
	t.Helper()
	if _, err := l.AppendAsLeader(kvBatch(t, plain(0, clk.Ms()), recs...), 0, OriginClient); err != nil {
		t.Fatal(err)
	}
	l.SetHighWatermark(l.LogEndOffset())
}

// dirtyLog fills l with versions of a few keys, rolled so that all but the
// last record are cleanable.
func dirtyLog(t *testing.T, l *Log, clk *testClock, versions int) {
	t.Helper()
	for i := 0; i < versions; i++ {
		managerAppend(t, l, clk, put(fmt.Sprintf("k%d", i%3), fmt.Sprint(i)))
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	managerAppend(t, l, clk, put("active", "x"))
}

// TestManagerCleanerThreads: started cleaner threads compact a dirty log in
// the background, record the checkpoint in cleaner-offset-checkpoint, and a
// restarted Manager reads it back.
func TestManagerCleanerThreads(t *testing.T) {
	clk := newTestClock()
	dir := t.TempDir()
	cfg := testManagerConfig(dir)
	cfg.Now = clk.Now
	cfg.Cleaner = CleanerConfig{Threads: 2, BackoffMs: 5, DedupeBufferSize: 1 << 20}
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tp := TopicPartition{"compacted", 0}
	l, err := m.GetOrCreateLog(tp, [16]byte{1}, compactConfig())
	if err != nil {
		t.Fatal(err)
	}
	dirtyLog(t, l, clk, 60)
	end := l.LogEndOffset() - 1 // the active segment's base
	m.Start()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if cp, ok := m.CleanerCheckpoint(tp); ok && cp == end {
			break
		}
		if time.Now().After(deadline) {
			cp, ok := m.CleanerCheckpoint(tp)
			t.Fatalf("not cleaned in time: checkpoint %d %v", cp, ok)
		}
		time.Sleep(5 * time.Millisecond) // polling with a deadline
	}
	wantRecords(t, l, "57:k0=57", "58:k1=58", "59:k2=59", "60:active=x")
	cps, err := ReadOffsetCheckpoint(filepath.Join(dir, CleanerOffsetCheckpointFileName))
	if err != nil || cps[tp] != end {
		t.Fatalf("checkpoint file %v %v", cps, err)
	}
	if err := m.Shutdown(); err != nil {
		t.Fatal(err)
	}
	m, err = NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Shutdown()
	if cp, ok := m.CleanerCheckpoint(tp); !ok || cp != end {
		t.Fatalf("checkpoint after restart %d %v", cp, ok)
	}
}

// TestManagerChoosesDirtiestLog: only compacted logs above their
// min.cleanable.dirty.ratio (or with a record older than
// max.compaction.lag.ms) are cleaned, dirtiest first.
func TestManagerChoosesDirtiestLog(t *testing.T) {
	clk := newTestClock()
	cfg := testManagerConfig(t.TempDir())
	cfg.Now = clk.Now
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Shutdown()
	mk := func(name string, c LogConfig, versions int) *Log {
		l, err := m.GetOrCreateLog(TopicPartition{name, 0}, [16]byte{}, c)
		if err != nil {
			t.Fatal(err)
		}
		dirtyLog(t, l, clk, versions)
		return l
	}
	del := compactConfig()
	del.CleanupPolicy = CleanupPolicy{Delete: true}
	mk("delete", del, 60)
	c := newCleaner(1<<20, 0.9, nil, quietLogger())
	cp := func(l *Log) int64 {
		cp, ok := m.CleanerCheckpoint(l.tp)
		if !ok {
			return -1
		}
		return cp
	}
	a := mk("a", compactConfig(), 30)
	if !m.cleanFilthiestLog(c) || cp(a) != 30 {
		t.Fatalf("a not cleaned: checkpoint %d", cp(a))
	}
	dirtyLog(t, a, clk, 20) // a is partly dirty now
	b := mk("b", compactConfig(), 60)
	if o, _ := a.cleanOffsets(cp(a), clk.Ms()); o.ratio() <= 0.5 || o.ratio() >= 1 {
		t.Fatalf("a's dirty ratio %v; the test wants it between 0.5 and 1", o.ratio())
	}
	// b, wholly dirty, goes first; then a.
	if !m.cleanFilthiestLog(c) || cp(b) != 60 || cp(a) != 30 {
		t.Fatalf("first: a %d b %d", cp(a), cp(b))
	}
	if !m.cleanFilthiestLog(c) || cp(a) != 51 {
		t.Fatalf("second: a %d", cp(a))
	}
	if m.cleanFilthiestLog(c) {
		t.Fatal("a clean log was cleaned again")
	}
	if _, ok := m.CleanerCheckpoint(TopicPartition{"delete", 0}); ok {
		t.Fatal("a log with cleanup.policy=delete was cleaned")
	}
	// New dirt below min.cleanable.dirty.ratio is left alone ...
	high := compactConfig()
	high.MinCleanableDirtyRatio = 0.99
	a.UpdateConfig(high)
	managerAppend(t, a, clk, put("k0", "new"))
	if err := a.Roll(); err != nil {
		t.Fatal(err)
	}
	if m.cleanFilthiestLog(c) {
		t.Fatal("a log below its dirty ratio was cleaned")
	}
	// ... unless it is older than max.compaction.lag.ms.
	high.MaxCompactionLagMs = 1000
	a.UpdateConfig(high)
	clk.Advance(2 * time.Second)
	if !m.cleanFilthiestLog(c) || cp(a) != 53 {
		t.Fatalf("a record older than max.compaction.lag.ms did not trigger cleaning: %d", cp(a))
	}
}

// TestManagerCleanerCheckpointFollowsTruncation: a truncation below the
// cleaner checkpoint moves it back at once (in the file too); a deleted log
// loses its entry.
func TestManagerCleanerCheckpointFollowsTruncation(t *testing.T) {
	clk := newTestClock()
	dir := t.TempDir()
	cfg := testManagerConfig(dir)
	cfg.Now = clk.Now
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Shutdown()
	tp := TopicPartition{"c", 0}
	l, err := m.GetOrCreateLog(tp, [16]byte{}, compactConfig())
	if err != nil {
		t.Fatal(err)
	}
	dirtyLog(t, l, clk, 30)
	c := newCleaner(1<<20, 0.9, nil, quietLogger())
	if !m.cleanFilthiestLog(c) {
		t.Fatal("nothing cleaned")
	}
	if cp, _ := m.CleanerCheckpoint(tp); cp != 30 {
		t.Fatalf("checkpoint %d", cp)
	}
	if err := l.TruncateTo(29); err != nil {
		t.Fatal(err)
	}
	file := func() map[TopicPartition]int64 {
		cps, err := ReadOffsetCheckpoint(filepath.Join(dir, CleanerOffsetCheckpointFileName))
		if err != nil {
			t.Fatal(err)
		}
		return cps
	}
	if cp, _ := m.CleanerCheckpoint(tp); cp != 29 || file()[tp] != 29 {
		t.Fatalf("checkpoint after truncation %d, file %v", cp, file())
	}
	// Truncation above the checkpoint leaves it.
	managerAppend(t, l, clk, put("x", "1"), put("y", "1"))
	if err := l.TruncateTo(30); err != nil {
		t.Fatal(err)
	}
	if cp, _ := m.CleanerCheckpoint(tp); cp != 29 {
		t.Fatalf("checkpoint %d", cp)
	}
	if err := m.AsyncDelete(tp); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.CleanerCheckpoint(tp); ok {
		t.Fatal("a deleted log kept its checkpoint")
	}
	if _, ok := file()[tp]; ok {
		t.Fatal("a deleted log kept its checkpoint in the file")
	}
}

// TestManagerShutdownDuringCleaning: stopping the Manager while its cleaner
// threads work leaves every log valid, holding either its old or its
// compacted records, with no cleaner files left.
func TestManagerShutdownDuringCleaning(t *testing.T) {
	for round := 0; round < 5; round++ {
		clk := newTestClock()
		dir := t.TempDir()
		cfg := testManagerConfig(dir)
		cfg.Now = clk.Now
		cfg.Cleaner = CleanerConfig{BackoffMs: 1}
		m, err := NewManager(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var logs []*Log
		for p := int32(0); p < 4; p++ {
			l, err := m.GetOrCreateLog(TopicPartition{"c", p}, [16]byte{}, compactConfig())
			if err != nil {
				t.Fatal(err)
			}
			dirtyLog(t, l, clk, 200)
			logs = append(logs, l)
		}
		m.Start()
		// Stop after round logs were cleaned (0: at once), so Shutdown
		// lands at different points of the work.
		deadline := time.Now().Add(20 * time.Second)
		for {
			done := 0
			for _, l := range logs {
				if _, ok := m.CleanerCheckpoint(l.tp); ok {
					done++
				}
			}
			if done >= round {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("only %d logs cleaned", done)
			}
			time.Sleep(time.Millisecond) // polling with a deadline
		}
		if err := m.Shutdown(); err != nil {
			t.Fatal(err)
		}
		for _, suf := range []string{CleanedFileSuffix, SwapFileSuffix} {
			if mm, _ := filepath.Glob(filepath.Join(dir, "*", "*"+suf)); len(mm) > 0 {
				t.Fatalf("left %v", mm)
			}
		}
		m, err = NewManager(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for p := int32(0); p < 4; p++ {
			l, _ := m.Log(TopicPartition{"c", p})
			checkInvariants(t, l)
			rs := dataRecords(t, l)
			last := rs[len(rs)-1]
			if string(last.key) != "active" || last.offset != 200 {
				t.Fatalf("partition %d: last record %v", p, last)
			}
			latest := map[string]int64{}
			for _, r := range rs {
				latest[string(r.key)] = r.offset
			}
			for i := 197; i < 200; i++ {
				if latest[fmt.Sprintf("k%d", i%3)] != int64(i) {
					t.Fatalf("partition %d lost the latest value of k%d: %s", p, i%3, describe(rs))
				}
			}
		}
		if err := m.Shutdown(); err != nil {
			t.Fatal(err)
		}
	}
}
