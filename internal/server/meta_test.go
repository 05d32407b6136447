package server

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmirror/kmirror/internal/storage"
)

func TestMetaPropertiesFirstStartGeneratesOneClusterID(t *testing.T) {
	base := t.TempDir()
	dirs := []string{filepath.Join(base, "a"), filepath.Join(base, "b"), filepath.Join(base, "meta")}
	id, err := prepareMetaProperties(dirs, 7, "", true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := storage.ParseUUID(id); err != nil {
		t.Fatalf("cluster id %q is not a Kafka Uuid: %v", id, err)
	}
	dirIDs := map[string]bool{}
	for _, d := range dirs {
		mp, err := storage.ReadMetaProperties(d)
		if err != nil {
			t.Fatal(err)
		}
		if mp.ClusterID != id || mp.NodeID != 7 || mp.Version != 1 {
			t.Fatalf("%s: %+v", d, mp)
		}
		if dirIDs[mp.DirectoryID] || mp.DirectoryID == "" {
			t.Fatalf("directory id %q missing or reused", mp.DirectoryID)
		}
		dirIDs[mp.DirectoryID] = true
	}
	// A later start keeps the id, and a directory added later joins it.
	dirs = append(dirs, filepath.Join(base, "c"))
	again, err := prepareMetaProperties(dirs, 7, "", true)
	if err != nil || again != id {
		t.Fatalf("second start: %q, %v; want %q", again, err, id)
	}
	if mp, err := storage.ReadMetaProperties(dirs[3]); err != nil || mp.ClusterID != id {
		t.Fatalf("new directory: %+v, %v", mp, err)
	}
}

func TestMetaPropertiesRefusesForeignDirectories(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	if _, err := prepareMetaProperties([]string{a}, 1, "", true); err != nil {
		t.Fatal(err)
	}
	if _, err := prepareMetaProperties([]string{b}, 1, "", true); err != nil {
		t.Fatal(err)
	}
	_, err := prepareMetaProperties([]string{a, b}, 1, "", true)
	if err == nil || !strings.Contains(err.Error(), "different clusters") {
		t.Fatalf("directories of two clusters: %v", err)
	}
	_, err = prepareMetaProperties([]string{a}, 2, "", true)
	if err == nil || !strings.Contains(err.Error(), "belongs to node 1") {
		t.Fatalf("directory of another node: %v", err)
	}
	other := storage.NewDirectoryID()
	_, err = prepareMetaProperties([]string{a}, 1, other, true)
	if err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("--cluster-id against existing directories: %v", err)
	}
}

func TestMetaPropertiesMultiNodeNeedsClusterID(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a")
	_, err := prepareMetaProperties([]string{dir}, 1, "", false)
	if err == nil || !strings.Contains(err.Error(), "--cluster-id") {
		t.Fatalf("multi-node first start without a cluster id: %v", err)
	}
	want := storage.NewDirectoryID()
	got, err := prepareMetaProperties([]string{dir}, 1, want, false)
	if err != nil || got != want {
		t.Fatalf("given cluster id: %q, %v", got, err)
	}
	// Later starts need no flag.
	if got, err := prepareMetaProperties([]string{dir}, 1, "", false); err != nil || got != want {
		t.Fatalf("restart: %q, %v", got, err)
	}
}

func TestMetaDirsDeduplicates(t *testing.T) {
	got := metaDirs([]string{"/d/a", "/d/b/"}, "/d/a")
	if len(got) != 2 || got[0] != "/d/a" || got[1] != "/d/b/" {
		t.Fatalf("%v", got)
	}
	got = metaDirs([]string{"/d/a"}, "/m")
	if len(got) != 2 || got[1] != "/m" {
		t.Fatalf("%v", got)
	}
}
