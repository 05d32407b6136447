package storage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmirror/kmirror/internal/record"
)

// TestCleanerSwapCrashAtEveryStep interrupts the swap of a cleaned segment
// group after every single file operation of replaceSegments (.cleaned →
// .swap for each new file, index files before the .log; old files →
// .deleted; .swap → final name), as a crash would, by replaying those
// operations on copies of the partition directory. Every copy must open
// (with full recovery) to a valid log holding exactly the batches from
// before the swap or exactly those after it.
func TestCleanerSwapCrashAtEveryStep(t *testing.T) {
	ct := newCleanerTest(t, compactConfig())
	txn := func(pid int64, seq int32, recs ...kv) []byte {
		s := plain(0, ct.clk.Ms())
		s.pid, s.epoch, s.seq, s.txn = pid, 0, seq, true
		return kvBatch(t, s, recs...)
	}
	// Segments sized so that the first group is S0 and S1 (segment.bytes is
	// 1024): S0 holds an aborted transaction whose batch is its producer's
	// last (kept empty, so the cleaned segment has a .txnindex), and all of
	// S1 is superseded, which the cleaned segment must still cover.
	big := func(c string) string { return strings.Repeat(c, 300) }
	ct.put(put("a", big("1")))                                                                    // S0: 0
	ct.append(txn(7, 0, put("a", "aborted")))                                                     // 1
	ct.append(record.BuildEndTxnMarker(7, 0, record.EndTxnMarker{Commit: false}, ct.clk.Ms(), 0)) // 2
	ct.roll()
	ct.put(put("b", big("1"))) // S1: 3
	ct.roll()
	ct.put(put("c", big("1"))) // S2: 4
	ct.roll()
	ct.put(put("a", "2"), put("b", "2"), put("c", "2")) // S3: 5..7
	ct.roll()
	ct.put(put("z", "active"))
	pre := logBatches(t, ct.l)

	var states []string // directory copies, one per crash point
	var post [][]byte
	errStop := errors.New("test: stop after the first group")
	calls := 0
	ct.c.beforeSwap = func(l *Log, ns *segment, old []*segment) error {
		calls++
		if calls > 1 {
			post = logBatches(t, l) // the first group's swap is done
			return errStop
		}
		if len(old) != 2 {
			t.Fatalf("the first group has %d segments; the test wants two", len(old))
		}
		if err := ns.flush(); err != nil {
			t.Fatal(err)
		}
		ops := swapRenames(ns, old)
		for k := 0; k <= len(ops); k++ {
			dst := t.TempDir()
			copyDirFiles(t, l.Dir(), dst)
			for _, op := range ops[:k] {
				from := filepath.Join(dst, filepath.Base(op[0]))
				to := filepath.Join(dst, filepath.Base(op[1]))
				if err := os.Rename(from, to); err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
			}
			states = append(states, dst)
		}
		return nil
	}
	_, _, err := ct.c.clean(ct.l, -1, ct.clk.Now())
	if err != nil && !errors.Is(err, errStop) {
		t.Fatal(err)
	}
	if post == nil {
		post = logBatches(t, ct.l)
	}
	if sameBatches(pre, post) {
		t.Fatal("the swap changed nothing; the test would prove nothing")
	}
	var kinds []string
	for i, dir := range states {
		l := openLog(t, dir, ct.cfg, Options{Now: ct.clk.Now})
		got := logBatches(t, l)
		checkInvariants(t, l)
		for _, suf := range []string{CleanedFileSuffix, SwapFileSuffix} {
			if m, _ := filepath.Glob(filepath.Join(dir, "*"+suf)); len(m) > 0 {
				t.Fatalf("state %d: leftover %v", i, m)
			}
		}
		switch {
		case sameBatches(got, pre):
			kinds = append(kinds, "pre")
		case sameBatches(got, post):
			kinds = append(kinds, "post")
		default:
			t.Fatalf("crash after %d of %d operations: the log is neither the old nor the new one:\n%s", i, len(states)-1, describe(recordsOf(t, got)))
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if kinds[0] != "pre" || kinds[len(kinds)-1] != "post" {
		t.Fatalf("states %v", kinds)
	}
	t.Logf("crash points: %s", strings.Join(kinds, " "))
}

// swapRenames lists, in order, the renames replaceSegments performs to swap
// ns in for old (segment_swap.go, segment.changeSuffix): per segment the
// offset and time indexes, then the .txnindex, then the .log.
func swapRenames(ns *segment, old []*segment) [][2]string {
	files := func(s *segment) []string {
		p := s.paths() // log, index, timeindex, txnindex
		return []string{p[1], p[2], p[3], p[0]}
	}
	var ops [][2]string
	for _, f := range files(ns) {
		ops = append(ops, [2]string{f, strings.TrimSuffix(f, CleanedFileSuffix) + SwapFileSuffix})
	}
	for _, s := range old {
		for _, f := range files(s) {
			ops = append(ops, [2]string{f, f + DeletedFileSuffix})
		}
	}
	for _, f := range files(ns) {
		ops = append(ops, [2]string{strings.TrimSuffix(f, CleanedFileSuffix) + SwapFileSuffix, strings.TrimSuffix(f, CleanedFileSuffix)})
	}
	return ops
}

// copyDirFiles copies the regular files of src into dst.
func copyDirFiles(t testing.TB, src, dst string) {
	t.Helper()
	des, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		if !de.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, de.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, de.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func sameBatches(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
