package broker

import (
	"github.com/twmb/franz-go/pkg/kbin"

	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/wire"
)

// The Fetch response is encoded by hand so that record data never passes
// through user space: the fixed fields become byte parts and each
// partition's records become the file ranges of its storage.ReadResult,
// which the server sends with sendfile(2). The layout is Kafka's
// FetchResponse for versions 4 to 17 (flexible from 12, topic ids instead
// of names from 13, node endpoints from 16); the tests check it byte for
// byte against kmsg's encoder.

// fetchResponseData is a Fetch response before encoding.
type fetchResponseData struct {
	version    int16
	throttleMs int32
	errorCode  int16
	sessionID  int32
	topics     []fetchTopicData
	brokers    []fetchNodeEndpoint // v16+, the leaders named in CurrentLeader
}

type fetchTopicData struct {
	name       string   // v <= 12
	id         [16]byte // v >= 13
	partitions []fetchPartitionData
}

type fetchAbortedTxn struct{ producerID, firstOffset int64 }

type fetchPartitionData struct {
	partition     int32
	errorCode     int16
	highWatermark int64
	lastStable    int64
	logStart      int64
	// aborted is nil for a null array (READ_UNCOMMITTED), non-nil (maybe
	// empty) otherwise.
	aborted              []fetchAbortedTxn
	preferredReadReplica int32
	// records holds the partition's batches as file ranges; nil with
	// nullRecords for a null field, nil otherwise for an empty one.
	records     *storage.ReadResult
	nullRecords bool

	// Tagged fields (v12+), sent only when not at their defaults (-1).
	divergingEpoch     int32
	divergingEndOffset int64
	currentLeaderID    int32
	currentLeaderEpoch int32
	snapshotEndOffset  int64
	snapshotEpoch      int32
}

type fetchNodeEndpoint struct {
	nodeID int32
	host   string
	port   int32
	rack   *string
}

// newFetchPartitionData returns a partition entry with Kafka's defaults.
func newFetchPartitionData(partition int32) fetchPartitionData {
	return fetchPartitionData{
		partition: partition, highWatermark: -1, lastStable: -1, logStart: -1, preferredReadReplica: -1,
		divergingEpoch: -1, divergingEndOffset: -1, currentLeaderID: -1, currentLeaderEpoch: -1,
		snapshotEndOffset: -1, snapshotEpoch: -1,
	}
}

// fetchEncoder accumulates parts: fixed fields go to buf, which is flushed
// as a byte part before each file range.
type fetchEncoder struct {
	flexible bool
	buf      []byte
	parts    []wire.Part
}

func (e *fetchEncoder) flush() {
	if len(e.buf) > 0 {
		e.parts = append(e.parts, wire.Part{Bytes: e.buf})
		e.buf = nil
	}
}

func (e *fetchEncoder) arrayLen(n int) {
	if e.flexible {
		e.buf = kbin.AppendCompactArrayLen(e.buf, n)
	} else {
		e.buf = kbin.AppendArrayLen(e.buf, n)
	}
}

func (e *fetchEncoder) nullableArrayLen(n int, null bool) {
	if e.flexible {
		e.buf = kbin.AppendCompactNullableArrayLen(e.buf, n, null)
	} else {
		e.buf = kbin.AppendNullableArrayLen(e.buf, n, null)
	}
}

func (e *fetchEncoder) str(s string) {
	if e.flexible {
		e.buf = kbin.AppendCompactString(e.buf, s)
	} else {
		e.buf = kbin.AppendString(e.buf, s)
	}
}

func (e *fetchEncoder) noTags() {
	if e.flexible {
		e.buf = kbin.AppendUvarint(e.buf, 0)
	}
}

// records writes the nullable bytes field of a partition's records: the
// length, then the file ranges as their own parts.
func (e *fetchEncoder) records(p *fetchPartitionData) {
	if p.records == nil {
		switch {
		case p.nullRecords && e.flexible:
			e.buf = kbin.AppendUvarint(e.buf, 0)
		case p.nullRecords:
			e.buf = kbin.AppendInt32(e.buf, -1)
		case e.flexible:
			e.buf = kbin.AppendUvarint(e.buf, 1)
		default:
			e.buf = kbin.AppendInt32(e.buf, 0)
		}
		return
	}
	size := p.records.Size
	if e.flexible {
		e.buf = kbin.AppendUvarint(e.buf, uint32(size+1))
	} else {
		e.buf = kbin.AppendInt32(e.buf, int32(size))
	}
	for _, c := range p.records.Chunks {
		if c.Len == 0 {
			continue
		}
		e.flush()
		e.parts = append(e.parts, wire.Part{File: c.File, Pos: c.Pos, Len: c.Len})
	}
}

// encodeFetchResponse encodes r at r.version into parts. The caller keeps
// ownership of the read results (the StreamResponse's Release frees them).
func encodeFetchResponse(r *fetchResponseData) []wire.Part {
	v := r.version
	e := &fetchEncoder{flexible: v >= 12, buf: make([]byte, 0, 256)}
	e.buf = kbin.AppendInt32(e.buf, r.throttleMs)
	if v >= 7 {
		e.buf = kbin.AppendInt16(e.buf, r.errorCode)
		e.buf = kbin.AppendInt32(e.buf, r.sessionID)
	}
	e.arrayLen(len(r.topics))
	for i := range r.topics {
		t := &r.topics[i]
		if v >= 13 {
			e.buf = kbin.AppendUuid(e.buf, t.id)
		} else {
			e.str(t.name)
		}
		e.arrayLen(len(t.partitions))
		for j := range t.partitions {
			p := &t.partitions[j]
			e.buf = kbin.AppendInt32(e.buf, p.partition)
			e.buf = kbin.AppendInt16(e.buf, p.errorCode)
			e.buf = kbin.AppendInt64(e.buf, p.highWatermark)
			e.buf = kbin.AppendInt64(e.buf, p.lastStable)
			if v >= 5 {
				e.buf = kbin.AppendInt64(e.buf, p.logStart)
			}
			e.nullableArrayLen(len(p.aborted), p.aborted == nil)
			for _, a := range p.aborted {
				e.buf = kbin.AppendInt64(e.buf, a.producerID)
				e.buf = kbin.AppendInt64(e.buf, a.firstOffset)
				e.noTags()
			}
			if v >= 11 {
				e.buf = kbin.AppendInt32(e.buf, p.preferredReadReplica)
			}
			e.records(p)
			if e.flexible {
				e.partitionTags(p)
			}
		}
		e.noTags()
	}
	if e.flexible {
		if v >= 16 && len(r.brokers) > 0 {
			e.buf = kbin.AppendUvarint(e.buf, 1)
			e.buf = kbin.AppendUvarint(e.buf, 0) // tag 0: NodeEndpoints
			var body []byte
			body = kbin.AppendCompactArrayLen(body, len(r.brokers))
			for _, b := range r.brokers {
				body = kbin.AppendInt32(body, b.nodeID)
				body = kbin.AppendCompactString(body, b.host)
				body = kbin.AppendInt32(body, b.port)
				body = kbin.AppendCompactNullableString(body, b.rack)
				body = kbin.AppendUvarint(body, 0)
			}
			e.buf = kbin.AppendUvarint(e.buf, uint32(len(body)))
			e.buf = append(e.buf, body...)
		} else {
			e.buf = kbin.AppendUvarint(e.buf, 0)
		}
	}
	e.flush()
	return e.parts
}

// partitionTags writes a partition's tagged fields in tag order: 0
// DivergingEpoch, 1 CurrentLeader, 2 SnapshotID, each only when set.
func (e *fetchEncoder) partitionTags(p *fetchPartitionData) {
	div := p.divergingEpoch != -1 || p.divergingEndOffset != -1
	lead := p.currentLeaderID != -1 || p.currentLeaderEpoch != -1
	snap := p.snapshotEndOffset != -1 || p.snapshotEpoch != -1
	n := 0
	for _, b := range []bool{div, lead, snap} {
		if b {
			n++
		}
	}
	e.buf = kbin.AppendUvarint(e.buf, uint32(n))
	if div {
		// int32 epoch + int64 end offset + empty tags = 13 bytes.
		e.buf = kbin.AppendUvarint(e.buf, 0)
		e.buf = kbin.AppendUvarint(e.buf, 13)
		e.buf = kbin.AppendInt32(e.buf, p.divergingEpoch)
		e.buf = kbin.AppendInt64(e.buf, p.divergingEndOffset)
		e.buf = kbin.AppendUvarint(e.buf, 0)
	}
	if lead {
		e.buf = kbin.AppendUvarint(e.buf, 1)
		e.buf = kbin.AppendUvarint(e.buf, 9)
		e.buf = kbin.AppendInt32(e.buf, p.currentLeaderID)
		e.buf = kbin.AppendInt32(e.buf, p.currentLeaderEpoch)
		e.buf = kbin.AppendUvarint(e.buf, 0)
	}
	if snap {
		e.buf = kbin.AppendUvarint(e.buf, 2)
		e.buf = kbin.AppendUvarint(e.buf, 13)
		e.buf = kbin.AppendInt64(e.buf, p.snapshotEndOffset)
		e.buf = kbin.AppendInt32(e.buf, p.snapshotEpoch)
		e.buf = kbin.AppendUvarint(e.buf, 0)
	}
}

// streamFetchResponse wraps the encoded response for the server; Release
// frees the read results.
func streamFetchResponse(r *fetchResponseData) *wire.StreamResponse {
	parts := encodeFetchResponse(r)
	var results []*storage.ReadResult
	for i := range r.topics {
		for j := range r.topics[i].partitions {
			if rr := r.topics[i].partitions[j].records; rr != nil {
				results = append(results, rr)
			}
		}
	}
	return &wire.StreamResponse{
		APIKey: 1, Version: r.version, Parts: parts, ThrottleMillis: r.throttleMs,
		Release: func() {
			for _, rr := range results {
				rr.Release()
			}
		},
	}
}
