package producerstate

import "math"

// NumBatchesToRetain is how many of a producer's most recent batches are kept
// to recognise retries; it matches the client limit of five in-flight requests
// per connection for idempotent producers.
const NumBatchesToRetain = 5

// noEpoch, noSequence and noTimestamp are Kafka's "absent" values
// (RecordBatch.NO_PRODUCER_EPOCH, NO_SEQUENCE, NO_TIMESTAMP).
const (
	noEpoch     int16 = -1
	noSequence  int32 = -1
	noTimestamp int64 = -1
)

// BatchMetadata is one of the last five batches of a producer, used to answer
// retries: a retried batch has the same epoch and exactly the same sequence
// range, and the leader answers it with FirstOffset/LastOffset.
type BatchMetadata struct {
	FirstSeq, LastSeq       int32
	FirstOffset, LastOffset int64
	// Timestamp is the batch's max timestamp.
	Timestamp int64
}

// Entry is the state of one producer id in one partition.
type Entry struct {
	ProducerID    int64
	ProducerEpoch int16
	// Batches holds the producer's most recent batches of ProducerEpoch,
	// oldest first, at most NumBatchesToRetain.
	Batches []BatchMetadata
	// CoordinatorEpoch is the coordinator epoch of the last COMMIT/ABORT
	// marker seen for this producer (-1 before any); a marker with an older
	// one comes from a zombie coordinator.
	CoordinatorEpoch int32
	// LastTimestamp is the max timestamp of the producer's last batch or
	// marker; it drives expiry (producer.id.expiration.ms).
	LastTimestamp int64
	// CurrentTxnFirstOffset is the first offset of the ongoing transaction,
	// -1 when no transaction is ongoing.
	CurrentTxnFirstOffset int64
}

// newEntry is the state of a producer id the partition has never seen.
func newEntry(pid int64) *Entry {
	return &Entry{
		ProducerID:            pid,
		ProducerEpoch:         noEpoch,
		CoordinatorEpoch:      -1,
		LastTimestamp:         noTimestamp,
		CurrentTxnFirstOffset: -1,
	}
}

// clone returns a deep copy, so working copies in an Append and values handed
// to callers never alias the manager's state.
func (e *Entry) clone() *Entry {
	c := *e
	c.Batches = append([]BatchMetadata(nil), e.Batches...)
	return &c
}

// lastSeq is the last sequence of the newest batch, -1 if there is none.
func (e *Entry) lastSeq() int32 {
	if len(e.Batches) == 0 {
		return noSequence
	}
	return e.Batches[len(e.Batches)-1].LastSeq
}

// setEpoch moves the entry to epoch; batches of another epoch are forgotten
// because sequence numbers restart with a new epoch.
func (e *Entry) setEpoch(epoch int16) {
	if e.ProducerEpoch != epoch {
		e.Batches = e.Batches[:0]
		e.ProducerEpoch = epoch
	}
}

// addBatch records a data batch, dropping the oldest beyond the retained five.
func (e *Entry) addBatch(epoch int16, b BatchMetadata) {
	e.setEpoch(epoch)
	if len(e.Batches) == NumBatchesToRetain {
		copy(e.Batches, e.Batches[1:])
		e.Batches = e.Batches[:NumBatchesToRetain-1]
	}
	e.Batches = append(e.Batches, b)
	e.LastTimestamp = b.Timestamp
}

// findBatch returns the retained batch with exactly this sequence range.
func (e *Entry) findBatch(firstSeq, lastSeq int32) (BatchMetadata, bool) {
	for _, b := range e.Batches {
		if b.FirstSeq == firstSeq && b.LastSeq == lastSeq {
			return b, true
		}
	}
	return BatchMetadata{}, false
}

// inSequence reports whether next directly follows last, with the int32
// wrap-around producers use (MaxInt32 is followed by 0).
func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == math.MaxInt32)
}

// decrementSequence steps a sequence back by dec with the same wrap-around,
// to recover a batch's first sequence from its last one (snapshots store only
// the last sequence and the offset delta).
func decrementSequence(seq, dec int32) int32 {
	if seq < dec {
		return int32(int64(math.MaxInt32) - (int64(dec) - int64(seq)) + 1)
	}
	return seq - dec
}
