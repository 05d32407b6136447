package storage

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestEpochCacheAssignRules(t *testing.T) {
	dir := t.TempDir()
	c, err := loadEpochCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		epoch  int32
		offset int64
		want   []EpochEntry
	}{
		{1, 0, []EpochEntry{{1, 0}}},
		{1, 5, []EpochEntry{{1, 0}}},           // same epoch, later offset: no change
		{2, 10, []EpochEntry{{1, 0}, {2, 10}}}, // new epoch
		{3, 10, []EpochEntry{{1, 0}, {3, 10}}}, // same start offset: replaces
		{5, 20, []EpochEntry{{1, 0}, {3, 10}, {5, 20}}},
		{4, 25, []EpochEntry{{1, 0}, {3, 10}, {4, 25}}}, // lower epoch: later entries go (Kafka)
		{4, 15, []EpochEntry{{1, 0}, {3, 10}, {4, 15}}}, // same epoch, earlier offset: moves back
	}
	for i, s := range steps {
		if _, err := c.assign(s.epoch, s.offset); err != nil {
			t.Fatal(err)
		}
		if got := c.entries(); !reflect.DeepEqual(got, s.want) {
			t.Fatalf("step %d: %+v, want %+v", i, got, s.want)
		}
	}
	if _, err := c.assign(-1, 0); err == nil {
		t.Fatal("negative epoch accepted")
	}
	// Persisted in Kafka's format.
	data, _ := os.ReadFile(filepath.Join(dir, LeaderEpochCheckpointFileName))
	if string(data) != "0\n3\n1 0\n3 10\n4 15\n" {
		t.Fatalf("checkpoint %q", data)
	}
	c2, err := loadEpochCache(dir)
	if err != nil || !reflect.DeepEqual(c2.entries(), c.entries()) {
		t.Fatalf("reload %+v %v", c2.entries(), err)
	}
}

func TestEpochCacheTruncation(t *testing.T) {
	c, _ := loadEpochCache(t.TempDir())
	for _, e := range []EpochEntry{{1, 0}, {2, 10}, {4, 20}, {6, 30}} {
		c.assign(e.Epoch, e.StartOffset)
	}
	c.truncateFromEnd(20)
	if got := c.entries(); !reflect.DeepEqual(got, []EpochEntry{{1, 0}, {2, 10}}) {
		t.Fatalf("from end: %+v", got)
	}
	c.truncateFromStart(12)
	if got := c.entries(); !reflect.DeepEqual(got, []EpochEntry{{2, 12}}) {
		t.Fatalf("from start: %+v", got)
	}
	c.truncateFromStart(5) // below the first entry: nothing
	if got := c.entries(); !reflect.DeepEqual(got, []EpochEntry{{2, 12}}) {
		t.Fatalf("from start below: %+v", got)
	}
	c.clear()
	if len(c.entries()) != 0 {
		t.Fatal("clear")
	}
}

// TestEndOffsetForEpoch follows the cases of Kafka's
// LeaderEpochFileCache.endOffsetFor.
func TestEndOffsetForEpoch(t *testing.T) {
	c, _ := loadEpochCache(t.TempDir())
	if e, o := c.endOffsetFor(3, 100); e != -1 || o != -1 {
		t.Fatalf("empty cache: %d %d", e, o)
	}
	for _, e := range []EpochEntry{{2, 10}, {4, 20}, {6, 30}} {
		c.assign(e.Epoch, e.StartOffset)
	}
	cases := []struct {
		req       int32
		wantEpoch int32
		wantOff   int64
	}{
		{-1, -1, -1}, // undefined epoch
		{6, 6, 100},  // latest epoch: the log end
		{7, -1, -1},  // above every epoch
		{1, 1, 10},   // below the earliest: (requested, first start)
		{2, 2, 20},   // known epoch: start of the next
		{3, 2, 20},   // unknown between: the floor epoch, next start
		{5, 4, 30},
	}
	for _, tc := range cases {
		if e, o := c.endOffsetFor(tc.req, 100); e != tc.wantEpoch || o != tc.wantOff {
			t.Errorf("endOffsetFor(%d) = (%d, %d), want (%d, %d)", tc.req, e, o, tc.wantEpoch, tc.wantOff)
		}
	}
	for off, want := range map[int64]int32{5: -1, 10: 2, 19: 2, 20: 4, 99: 6} {
		got, ok := c.epochForOffset(off)
		if (want == -1) == ok || (ok && got != want) {
			t.Errorf("epochForOffset(%d) = %d %v", off, got, ok)
		}
	}
}

func TestLogEpochAPI(t *testing.T) {
	clk := newTestClock()
	l := openLog(t, t.TempDir(), smallConfig(), Options{Now: clk.Now})
	defer l.Close()
	if err := l.AssignEpochStartOffset(3, 0); err != nil {
		t.Fatal(err)
	}
	if err := l.AssignEpochStartOffset(4, 1); err == nil {
		t.Fatal("epoch beyond the log end accepted")
	}
	appendN(t, l, clk, 3, 2)
	if err := l.AssignEpochStartOffset(5, l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if e, ok := l.LatestEpoch(); !ok || e != 5 {
		t.Fatalf("latest %d %v", e, ok)
	}
	// Leader appends stamp the given epoch; batches of epoch 0 were assigned
	// at offset 0 by the appends above.
	if e, o := l.EndOffsetForEpoch(5); e != 5 || o != 6 {
		t.Fatalf("end offset for 5: %d %d", e, o)
	}
}
