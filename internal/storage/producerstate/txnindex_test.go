package producerstate

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
)

func openIndex(t *testing.T, path string) *TxnIndex {
	t.Helper()
	ti, err := OpenTxnIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ti.Close() })
	return ti
}

// TestTxnIndexEntryByteLayout checks one entry against Kafka's .txnindex
// format, field by field.
func TestTxnIndexEntryByteLayout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "00000000000000000000.txnindex")
	ti := openIndex(t, path)
	if err := ti.Append(AbortedTxn{ProducerID: 7, FirstOffset: 100, LastOffset: 200, LastStableOffset: 201}); err != nil {
		t.Fatal(err)
	}
	if err := ti.Flush(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := mustHex(t, ""+
		"0000"+ // version int16 = 0
		"0000000000000007"+ // producerId int64
		"0000000000000064"+ // firstOffset int64 = 100
		"00000000000000c8"+ // lastOffset int64 = 200 (the ABORT marker)
		"00000000000000c9") // lastStableOffset int64 = 201
	if !bytes.Equal(got, want) || len(got) != AbortedTxnSize {
		t.Fatalf("file bytes\n got  %x\n want %x", got, want)
	}
}

func TestTxnIndexLazyCreation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "5.txnindex")
	ti := openIndex(t, path)
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("file created before the first Append: %v", err)
	}
	txns, complete, err := ti.CollectAborted(0, 100)
	if err != nil || len(txns) != 0 || complete {
		t.Fatalf("empty index: %v %v %v", txns, complete, err)
	}
	if err := ti.SanityCheck(); err != nil {
		t.Fatal(err)
	}
	if err := ti.TruncateTo(0); err != nil {
		t.Fatal(err)
	}
	if err := ti.Append(AbortedTxn{1, 5, 6, 7}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("file not created by Append: %v", err)
	}
}

func TestTxnIndexCollectTruncateReset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.txnindex")
	ti := openIndex(t, path)
	a := AbortedTxn{ProducerID: 1, FirstOffset: 0, LastOffset: 10, LastStableOffset: 0}
	b := AbortedTxn{ProducerID: 2, FirstOffset: 5, LastOffset: 20, LastStableOffset: 11}
	c := AbortedTxn{ProducerID: 3, FirstOffset: 25, LastOffset: 30, LastStableOffset: 31}
	for _, x := range []AbortedTxn{a, b, c} {
		if err := ti.Append(x); err != nil {
			t.Fatal(err)
		}
	}
	if err := ti.Append(AbortedTxn{4, 26, 30, 31}); err == nil {
		t.Fatal("Append with a LastOffset that does not increase succeeded")
	}

	collect := []struct {
		fetch, upper int64
		want         []AbortedTxn
		complete     bool
	}{
		{0, 5, []AbortedTxn{a}, true},          // b starts at 5: outside; b's LSO 11 >= 5 ends the search
		{12, 26, []AbortedTxn{b, c}, true},     // c's LSO 31 >= 26
		{0, 100, []AbortedTxn{a, b, c}, false}, // no LSO reaches 100: read the next segment too
		{31, 40, nil, false},
		{10, 11, []AbortedTxn{a, b}, true}, // a ends at 10 (inclusive); b's LSO 11 >= 11
	}
	for _, tc := range collect {
		got, complete, err := ti.CollectAborted(tc.fetch, tc.upper)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tc.want) || complete != tc.complete {
			t.Errorf("CollectAborted(%d, %d) = %v, %v; want %v, %v", tc.fetch, tc.upper, got, complete, tc.want, tc.complete)
		}
	}

	// Reopening keeps the entries and the LastOffset order check.
	if err := ti.Close(); err != nil {
		t.Fatal(err)
	}
	ti = openIndex(t, path)
	if all, err := ti.All(); err != nil || !reflect.DeepEqual(all, []AbortedTxn{a, b, c}) {
		t.Fatalf("after reopen: %v %v", all, err)
	}
	if err := ti.Append(AbortedTxn{4, 26, 29, 31}); err == nil {
		t.Fatal("order check lost across reopen")
	}

	if err := ti.TruncateTo(20); err != nil {
		t.Fatal(err)
	}
	if all, _ := ti.All(); !reflect.DeepEqual(all, []AbortedTxn{a}) {
		t.Fatalf("after TruncateTo(20): %v", all)
	}
	if st, _ := os.Stat(path); st.Size() != AbortedTxnSize {
		t.Fatalf("file size %d after truncation", st.Size())
	}
	if err := ti.Append(AbortedTxn{5, 11, 15, 16}); err != nil {
		t.Fatalf("append after truncation: %v", err)
	}
	if err := ti.TruncateTo(1000); err != nil {
		t.Fatal(err)
	}
	if all, _ := ti.All(); len(all) != 2 {
		t.Fatalf("TruncateTo past the end dropped entries: %v", all)
	}

	if err := ti.Reset(); err != nil {
		t.Fatal(err)
	}
	if all, _ := ti.All(); len(all) != 0 {
		t.Fatalf("after Reset: %v", all)
	}
	if err := ti.Append(AbortedTxn{6, 0, 1, 2}); err != nil {
		t.Fatalf("append after Reset: %v", err)
	}
}

func TestTxnIndexSanityCheck(t *testing.T) {
	good := AbortedTxn{1, 2, 3, 4}.appendTo(nil)
	cases := map[string][]byte{
		"torn entry":   append(append([]byte{}, good...), 0, 0, 0),
		"bad version":  append([]byte{0, 1}, good[2:]...),
		"out of order": append(append([]byte{}, good...), good...),
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "0.txnindex")
			if err := os.WriteFile(path, content, 0o644); err != nil {
				t.Fatal(err)
			}
			ti := openIndex(t, path)
			if err := ti.SanityCheck(); !errors.Is(err, ErrCorruptTxnIndex) {
				t.Fatalf("SanityCheck = %v, want ErrCorruptTxnIndex", err)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "0.txnindex")
	if err := os.WriteFile(path, cases["bad version"], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := openIndex(t, path).CollectAborted(0, 10); !errors.Is(err, ErrCorruptTxnIndex) {
		t.Fatalf("CollectAborted over a bad version: %v", err)
	}
}

func TestTxnIndexRenameAndDelete(t *testing.T) {
	dir := t.TempDir()
	ti := openIndex(t, filepath.Join(dir, "a.txnindex"))
	if err := ti.Append(AbortedTxn{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	newPath := filepath.Join(dir, "b.txnindex.deleted")
	if err := ti.Rename(newPath); err != nil {
		t.Fatal(err)
	}
	if ti.Path() != newPath {
		t.Fatalf("Path %q", ti.Path())
	}
	if err := ti.Append(AbortedTxn{1, 5, 6, 7}); err != nil {
		t.Fatal(err)
	}
	if all, err := ti.All(); err != nil || len(all) != 2 {
		t.Fatalf("after rename: %v %v", all, err)
	}
	if err := ti.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(newPath); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("file survived Delete: %v", err)
	}
	if err := ti.Delete(); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
	// Renaming an index whose file was never created only moves the path.
	lazy := openIndex(t, filepath.Join(dir, "c.txnindex"))
	if err := lazy.Rename(filepath.Join(dir, "d.txnindex")); err != nil {
		t.Fatal(err)
	}
}

// TestTxnIndexConcurrentReadsAndAppends runs READ_COMMITTED-style reads
// while the log appends; under -race this checks the locking, and every read
// must see a prefix of the appended entries.
func TestTxnIndexConcurrentReadsAndAppends(t *testing.T) {
	ti := openIndex(t, filepath.Join(t.TempDir(), "0.txnindex"))
	const n = 200
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errc := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			all, err := ti.All()
			if err == nil {
				for i, a := range all {
					if a.LastOffset != int64(i)*2+1 {
						err = errors.New("read a torn or reordered entry")
						break
					}
				}
			}
			if err != nil {
				select {
				case errc <- err:
				default:
				}
				return
			}
		}
	}()
	for i := int64(0); i < n; i++ {
		if err := ti.Append(AbortedTxn{i, i * 2, i*2 + 1, i*2 + 2}); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	if all, _ := ti.All(); len(all) != n {
		t.Fatalf("%d entries, want %d", len(all), n)
	}
}
