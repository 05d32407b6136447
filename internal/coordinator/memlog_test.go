package coordinator

import (
	"sync"

	"github.com/kmirror/kmirror/internal/record"
)

// memLog is an in-memory backingLog: batches with their offsets assigned.
type memLog struct {
	mu      sync.Mutex
	batches [][]byte
	end     int64
}

func (m *memLog) append(batch []byte, epoch int32) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := append([]byte(nil), batch...)
	h, err := record.ParseHeader(b)
	if err != nil {
		return 0, err
	}
	base := m.end
	record.SetBaseOffset(b, base)
	record.SetPartitionLeaderEpoch(b, epoch)
	m.batches = append(m.batches, b)
	m.end = base + int64(h.LastOffsetDelta) + 1
	return base, nil
}

// appendRaw appends bytes as they are, for corrupt test data; end moves to
// next.
func (m *memLog) appendRaw(b []byte, next int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.batches = append(m.batches, b)
	m.end = next
}

func (m *memLog) read(offset int64, maxBytes int) ([]byte, int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []byte
	for _, b := range m.batches {
		h, err := record.ParseHeader(b)
		if err == nil && h.NextOffset() <= offset {
			continue
		}
		if len(out) > 0 && len(out)+len(b) > maxBytes {
			break
		}
		out = append(out, b...)
	}
	return out, m.end, nil
}
