package mirror

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kmirror/kmirror/internal/metadata"
)

// fakeMeta is a MetadataSource whose image tests change with records; it
// tells publishers like the metadata log does.
type fakeMeta struct {
	mu   sync.Mutex
	img  atomic.Pointer[metadata.Image]
	off  uint64
	pubs []metadata.Publisher
}

func newFakeMeta() *fakeMeta {
	m := &fakeMeta{}
	m.img.Store(metadata.EmptyImage())
	return m
}

func (m *fakeMeta) Image() *metadata.Image { return m.img.Load() }

func (m *fakeMeta) AddPublisher(p metadata.Publisher) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pubs = append(m.pubs, p)
	p.OnMetadataUpdate(metadata.Diff(metadata.EmptyImage(), m.Image()), m.Image())
}

// apply replays records and tells the publishers.
func (m *fakeMeta) apply(t testing.TB, recs ...metadata.Record) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	d := metadata.NewDelta(m.Image())
	for _, r := range recs {
		m.off++
		if err := d.Replay(r, m.off); err != nil {
			t.Fatalf("replay %T: %v", r, err)
		}
	}
	img := d.Apply()
	m.img.Store(img)
	for _, p := range m.pubs {
		p.OnMetadataUpdate(d, img)
	}
}

func mirrorRes(name string) metadata.ConfigResource {
	return metadata.ConfigResource{Type: metadata.ResourceMirror, Name: name}
}

func createMirrorRecords(name string) []metadata.Record {
	return []metadata.Record{metadata.SetConfig(mirrorRes(name), "bootstrap.servers", "source:9092")}
}

func deleteMirrorRecords(name string) []metadata.Record {
	return []metadata.Record{metadata.RemoveConfig(mirrorRes(name), "bootstrap.servers")}
}
