package producerstate

import "math"

// CompletedTxn is a transaction ended by a COMMIT/ABORT marker at
// MarkerOffset. Only transactions that wrote data produce one: a marker for a
// producer with no ongoing transaction changes no offset bounds.
type CompletedTxn struct {
	ProducerID, FirstOffset, MarkerOffset int64
	Aborted                               bool
}

// LastStableOffsetAfter returns the LSO that held when ct's marker was
// written: the first offset of the earliest transaction of another producer
// that was still undecided at that point, else ct.MarkerOffset+1. It is the
// value Kafka stores in the .txnindex entry of an aborted transaction. Call it
// after Commit of the append that completed ct and before the next Commit:
// transactions completed later in the same append count as undecided, as
// they were when ct's marker was written.
func (m *Manager) LastStableOffsetAfter(ct CompletedTxn) int64 {
	first := int64(math.MaxInt64)
	for pid, off := range m.ongoing {
		if pid != ct.ProducerID && off < first {
			first = off
		}
	}
	for _, u := range m.unreplicated {
		if u.ProducerID != ct.ProducerID && u.MarkerOffset > ct.MarkerOffset && u.FirstOffset < first {
			first = u.FirstOffset
		}
	}
	if first == math.MaxInt64 {
		return ct.MarkerOffset + 1
	}
	return first
}

// FirstUnstableOffset is the first offset of the earliest ongoing transaction
// or of a completed transaction whose marker is not yet below the high
// watermark; ok=false when there is none. LSO = min(this, HW).
func (m *Manager) FirstUnstableOffset() (offset int64, ok bool) {
	offset = math.MaxInt64
	for _, off := range m.ongoing {
		if off < offset {
			offset, ok = off, true
		}
	}
	for _, u := range m.unreplicated {
		if u.FirstOffset < offset {
			offset, ok = u.FirstOffset, true
		}
	}
	if !ok {
		return 0, false
	}
	return offset, true
}

// OnHighWatermarkUpdated forgets completed transactions whose markers are now
// below hw: every replica has them, so they no longer hold the LSO back.
func (m *Manager) OnHighWatermarkUpdated(hw int64) {
	kept := m.unreplicated[:0]
	for _, u := range m.unreplicated {
		if u.MarkerOffset >= hw {
			kept = append(kept, u)
		}
	}
	clear(m.unreplicated[len(kept):])
	m.unreplicated = kept
}

// OnLogStartOffsetIncremented is for the Log after retention or DeleteRecords
// moved the log start to logStart: completed transactions whose markers were
// deleted stop holding the LSO back, and MapEndOffset is brought up to the
// new start if it was below it. Producer entries are kept, as in Kafka, so
// their retries are still recognised.
func (m *Manager) OnLogStartOffsetIncremented(logStart int64) {
	m.OnHighWatermarkUpdated(logStart)
	if m.mapEnd < logStart {
		m.mapEnd = logStart
	}
}
