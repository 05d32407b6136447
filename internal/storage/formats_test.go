package storage

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestOffsetCheckpointFormat(t *testing.T) {
	p := filepath.Join(t.TempDir(), RecoveryPointCheckpointFileName)
	in := map[TopicPartition]int64{{"b", 1}: 7, {"a", 10}: 3, {"a", 2}: 9}
	if err := WriteOffsetCheckpoint(p, in); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	if string(data) != "0\n3\na 2 9\na 10 3\nb 1 7\n" {
		t.Fatalf("file %q", data)
	}
	out, err := ReadOffsetCheckpoint(p)
	if err != nil || len(out) != 3 || out[TopicPartition{"a", 10}] != 3 {
		t.Fatalf("read %v %v", out, err)
	}
	if m, err := ReadOffsetCheckpoint(filepath.Join(t.TempDir(), "missing")); err != nil || len(m) != 0 {
		t.Fatalf("missing file: %v %v", m, err)
	}
	for _, bad := range []string{"", "1\n0\n", "0\n2\na 1 1\n", "0\n1\na x 1\n", "0\n1\na 1 1\nb 2 2\n", "0\n-1\n", "0\n99999999999\n"} {
		os.WriteFile(p, []byte(bad), 0o644)
		if _, err := ReadOffsetCheckpoint(p); !errors.Is(err, ErrCorruptCheckpoint) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestPartitionMetadataFormat(t *testing.T) {
	id := [16]byte{0xfb, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xff}
	data := formatPartitionMetadata(id)
	if string(data) != "version: 0\ntopic_id: -wECAwQFBgcICQoLDA0O_w" {
		t.Fatalf("format %q", data)
	}
	got, err := parsePartitionMetadata(data)
	if err != nil || got != id {
		t.Fatalf("parse %v %v", got, err)
	}
	for _, bad := range []string{"", "version: 1\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", "version: 0\ntopic: x", "version: 0\ntopic_id: !!"} {
		if _, err := parsePartitionMetadata([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	clk := newTestClock()
	dir := t.TempDir()
	l := openLog(t, dir, smallConfig(), Options{Now: clk.Now})
	if err := l.SetTopicID(id); err != nil {
		t.Fatal(err)
	}
	if err := l.SetTopicID([16]byte{1}); err == nil {
		t.Fatal("changed topic id")
	}
	l.Close()
	l2 := openLog(t, dir, smallConfig(), Options{Now: clk.Now, HadCleanShutdown: true})
	defer l2.Close()
	if got, ok := l2.TopicID(); !ok || got != id {
		t.Fatalf("topic id after reopen %v %v", got, ok)
	}
}

func TestMetaProperties(t *testing.T) {
	dir := t.TempDir()
	mp := MetaProperties{Version: 1, ClusterID: "MkU3OEVBNTcwNTJENDM2Qk", NodeID: 3, DirectoryID: NewDirectoryID()}
	if err := WriteMetaProperties(dir, mp); err != nil {
		t.Fatal(err)
	}
	got, err := ReadMetaProperties(dir)
	if err != nil || got != mp {
		t.Fatalf("%+v %v", got, err)
	}
	// Kafka's own file (as written by kafka-storage format).
	os.WriteFile(filepath.Join(dir, MetaPropertiesFileName), []byte("#\n#Thu Jan 01 00:00:00 UTC 2025\nnode.id=1\ndirectory.id=J8aAPcfLQt2bqs1JT_rMgQ\nversion=1\ncluster.id=4L6g3nShT-eMCtK--X86sw\n"), 0o644)
	got, err = ReadMetaProperties(dir)
	if err != nil || got.NodeID != 1 || got.ClusterID != "4L6g3nShT-eMCtK--X86sw" || got.DirectoryID != "J8aAPcfLQt2bqs1JT_rMgQ" {
		t.Fatalf("kafka file: %+v %v", got, err)
	}
	os.WriteFile(filepath.Join(dir, MetaPropertiesFileName), []byte("version=0\nbroker.id=1\ncluster.id=x\n"), 0o644)
	if _, err := ReadMetaProperties(dir); err == nil {
		t.Fatal("zookeeper-era meta.properties accepted")
	}
	if id, err := ParseUUID(NewDirectoryID()); err != nil || id == ([16]byte{}) {
		t.Fatalf("directory id %v %v", id, err)
	}
}

func TestTopicPartitionDirNames(t *testing.T) {
	ok := map[string]TopicPartition{"t-0": {"t", 0}, "my-topic-12": {"my-topic", 12}, "__consumer_offsets-49": {"__consumer_offsets", 49}}
	for name, want := range ok {
		got, err := ParseTopicPartitionDir(name)
		if err != nil || got != want || got.String() != name {
			t.Errorf("%s: %v %v", name, got, err)
		}
	}
	for _, name := range []string{"t", "-1", "t-", "t-x", "t-1.abc-delete", "t-1.abc-future"} {
		if _, err := ParseTopicPartitionDir(name); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	if tp, ok := ParseDeletedDir("my-topic-3.0123456789abcdef0123456789abcdef-delete"); !ok || tp != (TopicPartition{"my-topic", 3}) {
		t.Fatalf("deleted dir: %v %v", tp, ok)
	}
}

func TestLogConfig(t *testing.T) {
	c := DefaultLogConfig()
	if c.SegmentBytes != 1<<30 || c.SegmentIndexBytes != 10<<20 || c.IndexIntervalBytes != 4096 ||
		c.RetentionMs != 604800000 || c.RetentionBytes != -1 || c.MaxMessageBytes != 1048588 || !c.CleanupPolicy.Delete {
		t.Fatalf("defaults %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"delete", "compact", "compact,delete", "delete, compact"} {
		p, err := ParseCleanupPolicy(s)
		if err != nil {
			t.Fatal(err)
		}
		if back, _ := ParseCleanupPolicy(p.String()); back != p {
			t.Fatalf("%s round trip", s)
		}
	}
	if _, err := ParseCleanupPolicy("keep"); err == nil {
		t.Fatal("bad policy accepted")
	}
	c.CompressionType = "brotli"
	if c.Validate() == nil {
		t.Fatal("bad compression accepted")
	}
}
