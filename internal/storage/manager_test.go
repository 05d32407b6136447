package storage

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func testManagerConfig(dirs ...string) ManagerConfig {
	return ManagerConfig{
		Dirs:      dirs,
		Defaults:  smallConfig(),
		ClusterID: "test-cluster-id-00001",
		NodeID:    1,
		Logger:    quietLogger(),
	}
}

func TestManagerLifecycle(t *testing.T) {
	clk := newTestClock()
	d1, d2 := t.TempDir(), t.TempDir()
	cfg := testManagerConfig(d1, d2)
	cfg.Now = clk.Now
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A second manager cannot lock the same directories.
	if _, err := NewManager(cfg); err == nil {
		t.Fatal("second manager locked the dirs")
	}
	id := [16]byte{7}
	var logs []*Log
	for p := int32(0); p < 4; p++ {
		l, err := m.GetOrCreateLog(TopicPartition{"events", p}, id, smallConfig())
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, l)
	}
	// Spread over the two dirs.
	in1, _ := filepath.Glob(filepath.Join(d1, "events-*"))
	in2, _ := filepath.Glob(filepath.Join(d2, "events-*"))
	if len(in1) != 2 || len(in2) != 2 {
		t.Fatalf("placement %v %v", in1, in2)
	}
	if again, _ := m.GetOrCreateLog(TopicPartition{"events", 0}, id, smallConfig()); again != logs[0] {
		t.Fatal("GetOrCreateLog made a second log")
	}
	if _, err := m.GetOrCreateLog(TopicPartition{"events", 0}, [16]byte{8}, smallConfig()); err == nil {
		t.Fatal("topic id mismatch accepted")
	}
	for _, l := range logs {
		appendN(t, l, clk, 10, 2)
		l.SetHighWatermark(15)
	}
	if _, err := logs[1].DeleteRecordsBefore(6); err != nil {
		t.Fatal(err)
	}
	m.SetBrokerEpoch(42)
	if err := m.Shutdown(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{d1, d2} {
		for _, f := range []string{CleanShutdownFileName, RecoveryPointCheckpointFileName, LogStartOffsetCheckpointFileName, ReplicationOffsetCheckpointFileName, MetaPropertiesFileName} {
			if _, err := os.Stat(filepath.Join(d, f)); err != nil {
				t.Fatalf("%s missing in %s", f, d)
			}
		}
	}
	// Restart: everything comes back from the checkpoints.
	m2, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Shutdown()
	if m2.PreviousBrokerEpoch() != 42 {
		t.Fatalf("previous broker epoch %d", m2.PreviousBrokerEpoch())
	}
	if len(m2.Logs()) != 4 {
		t.Fatalf("%d logs", len(m2.Logs()))
	}
	l1, _ := m2.Log(TopicPartition{"events", 1})
	if l1.LogStartOffset() != 6 || l1.HighWatermark() != 15 || l1.LogEndOffset() != 20 || l1.RecoveryPoint() != 20 {
		t.Fatalf("restored start %d hw %d end %d rp %d", l1.LogStartOffset(), l1.HighWatermark(), l1.LogEndOffset(), l1.RecoveryPoint())
	}
	if got, ok := l1.TopicID(); !ok || got != id {
		t.Fatal("topic id lost")
	}
	// The marker is gone while running: a crash now would be unclean.
	if _, err := os.Stat(filepath.Join(d1, CleanShutdownFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("clean shutdown marker still present while running")
	}
}

func TestManagerRefusesForeignDirs(t *testing.T) {
	d := t.TempDir()
	cfg := testManagerConfig(d)
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m.Shutdown()
	other := cfg
	other.ClusterID = "another-cluster"
	if _, err := NewManager(other); err == nil || !strings.Contains(err.Error(), "cluster") {
		t.Fatalf("foreign cluster: %v", err)
	}
	other = cfg
	other.NodeID = 2
	if _, err := NewManager(other); err == nil || !strings.Contains(err.Error(), "node") {
		t.Fatalf("foreign node: %v", err)
	}
}

func TestManagerUncleanRestartRecovers(t *testing.T) {
	clk := newTestClock()
	d := t.TempDir()
	cfg := testManagerConfig(d)
	cfg.Now = clk.Now
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.GetOrCreateLog(TopicPartition{"t", 0}, [16]byte{}, smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, clk, 20, 2)
	if err := m.CheckpointAll(); err != nil {
		t.Fatal(err)
	}
	// Simulate a crash: no shutdown, no marker; tear the active segment.
	crash(l)
	m.unlockAll()
	p := activeLogFile(t, l.Dir())
	st, _ := os.Stat(p)
	os.Truncate(p, st.Size()-5)
	m2, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Shutdown()
	l2, ok := m2.Log(TopicPartition{"t", 0})
	if !ok || l2.LogEndOffset() != 38 {
		t.Fatalf("after unclean restart: %v leo %d", ok, l2.LogEndOffset())
	}
	checkInvariants(t, l2)
}

func TestManagerAsyncDelete(t *testing.T) {
	clk := newTestClock()
	d := t.TempDir()
	cfg := testManagerConfig(d)
	cfg.Now = clk.Now
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Shutdown()
	lcfg := smallConfig()
	lcfg.FileDeleteDelayMs = 60_000
	l, _ := m.GetOrCreateLog(TopicPartition{"gone", 0}, [16]byte{}, lcfg)
	appendN(t, l, clk, 5, 1)
	r, err := l.Read(0, 1<<20, FetchLogEnd, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.AsyncDelete(TopicPartition{"gone", 0}); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Log(TopicPartition{"gone", 0}); ok {
		t.Fatal("deleted log still listed")
	}
	matches, _ := filepath.Glob(filepath.Join(d, "gone-0.*-delete"))
	if len(matches) != 1 {
		t.Fatalf("renamed dir: %v", matches)
	}
	if _, err := l.AppendAsLeader(mkBatch(t, plain(1, clk.Ms())), 0, OriginClient); !errors.Is(err, ErrClosed) {
		t.Fatalf("append to deleted log: %v", err)
	}
	// An outstanding read still works.
	if b, err := r.Bytes(); err != nil || int64(len(b)) != r.Size {
		t.Fatalf("read after delete: %v", err)
	}
	r.Release()
	clk.Advance(2 * time.Minute)
	m.runDueDeletes(false)
	if _, err := os.Stat(matches[0]); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("deleted dir not removed after the delay")
	}
}

func TestManagerBackgroundTasks(t *testing.T) {
	clk := newTestClock()
	d := t.TempDir()
	cfg := testManagerConfig(d)
	cfg.Now = clk.Now
	cfg.RetentionCheckIntervalMs = 5
	cfg.FlushCheckpointIntervalMs = 5
	cfg.FlushSchedulerIntervalMs = 5
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Shutdown()
	lcfg := smallConfig()
	lcfg.RetentionMs = 1000
	lcfg.FlushMs = 0
	l, _ := m.GetOrCreateLog(TopicPartition{"bg", 0}, [16]byte{}, lcfg)
	appendN(t, l, clk, 30, 2)
	l.SetHighWatermark(l.LogEndOffset())
	clk.Advance(time.Hour)
	m.Start()
	deadline := time.Now().Add(10 * time.Second)
	for {
		rps, _ := ReadOffsetCheckpoint(filepath.Join(d, RecoveryPointCheckpointFileName))
		if l.LogStartOffset() == 60 && rps[TopicPartition{"bg", 0}] == 60 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("background tasks did not run: log start %d, checkpoint %v", l.LogStartOffset(), rps)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
