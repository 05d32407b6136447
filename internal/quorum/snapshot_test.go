package quorum

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/metadata"
)

// sampleImage builds an image with topics, configs, a broker and a deleted
// topic, at offset 42.
func sampleImage(t testing.TB) *metadata.Image {
	t.Helper()
	d := metadata.NewDelta(metadata.EmptyImage())
	gone := metadata.RandomUuid()
	rs := []metadata.Record{
		&metadata.FeatureLevelRecord{Name: metadata.MetadataVersionFeature, Level: 21},
		&metadata.RegisterBrokerRecord{BrokerRegistration: metadata.BrokerRegistration{ID: 1, Epoch: 7,
			Endpoints: []metadata.Endpoint{{Name: "PLAINTEXT", Host: "localhost", Port: 9092}}}},
		&metadata.TopicRecord{Name: "gone", ID: gone},
		&metadata.RemoveTopicRecord{ID: gone},
		metadata.SetConfig(metadata.ConfigResource{Type: metadata.ResourceMirror, Name: "east"}, "bootstrap.servers", "src:9092"),
		&metadata.ProducerIdsRecord{BrokerID: 1, BrokerEpoch: 7, NextProducerID: 1000},
	}
	rs = append(rs, topicRecords("orders", 1)...)
	for _, r := range rs {
		if err := d.Replay(r, 42); err != nil {
			t.Fatal(err)
		}
	}
	return d.Apply()
}

func encodeSnapshot(t testing.TB, img *metadata.Image, applied uint64) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := writeSnapshot(&buf, img, applied); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestSnapshotRoundTrip(t *testing.T) {
	for _, img := range []*metadata.Image{sampleImage(t), metadata.EmptyImage(), emptyAt(t, 9)} {
		b := encodeSnapshot(t, img, img.Offset()+3)
		got, applied, err := readSnapshot(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if imageBytes(got) != imageBytes(img) || applied != img.Offset()+3 {
			t.Fatalf("round trip: offset %d applied %d, want %d %d", got.Offset(), applied, img.Offset(), img.Offset()+3)
		}
	}
}

// emptyAt is an image with no content whose offset is off (everything was
// created and removed).
func emptyAt(t *testing.T, off uint64) *metadata.Image {
	d := metadata.NewDelta(metadata.EmptyImage())
	if err := d.Replay(&metadata.NoOpRecord{}, off); err != nil {
		t.Fatal(err)
	}
	return d.Apply()
}

func TestSnapshotRejectsDamage(t *testing.T) {
	b := encodeSnapshot(t, sampleImage(t), 50)
	for n := 0; n < len(b); n++ {
		if _, _, err := readSnapshot(bytes.NewReader(b[:n])); err == nil {
			t.Fatalf("snapshot truncated to %d of %d bytes was accepted", n, len(b))
		}
	}
	if _, _, err := readSnapshot(bytes.NewReader(append(append([]byte(nil), b...), 0))); err == nil {
		t.Fatal("trailing byte accepted")
	}
	bad := append([]byte(nil), b...)
	bad[9] = 2 // format version 2
	if _, _, err := readSnapshot(bytes.NewReader(bad)); !errors.Is(err, kerr.UnsupportedVersion) {
		t.Fatalf("future format: %v", err)
	}
	bad = append([]byte(nil), b...)
	bad[0] = 'X'
	if _, _, err := readSnapshot(bytes.NewReader(bad)); !errors.Is(err, kerr.CorruptMessage) {
		t.Fatalf("bad magic: %v", err)
	}
	// A record length far beyond the data does not allocate it.
	forged := append(append([]byte(nil), b[:26]...), 0xff, 0xff, 0xff, 0x1f)
	if _, _, err := readSnapshot(bytes.NewReader(forged)); err == nil {
		t.Fatal("forged record length accepted")
	}
}

func TestSnapshotSeedCorpusIsCurrent(t *testing.T) {
	// The committed seed must stay a valid snapshot of this format, or the
	// fuzzer starts from garbage.
	b, err := os.ReadFile(filepath.Join("testdata", "fuzz", "FuzzReadSnapshot", "seed-sample"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("KMIRMETA")) {
		t.Fatal("seed corpus does not hold a snapshot")
	}
}

// FuzzReadSnapshot feeds arbitrary bytes to the snapshot reader (snapshots
// are files on disk): it must not panic, and what it accepts must survive a
// write and read unchanged.
func FuzzReadSnapshot(f *testing.F) {
	f.Add(encodeSnapshot(f, sampleImage(f), 50))
	f.Add(encodeSnapshot(f, metadata.EmptyImage(), 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		img, applied, err := readSnapshot(bytes.NewReader(b))
		if err != nil {
			return
		}
		again, applied2, err := readSnapshot(bytes.NewReader(encodeSnapshot(t, img, applied)))
		if err != nil || applied2 != applied || imageBytes(again) != imageBytes(img) {
			t.Fatalf("accepted snapshot does not round trip: %v", err)
		}
	})
}
