package broker

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/storage"
)

// TestFetchEncoderMatchesKmsg checks the streamed Fetch encoder byte for
// byte against kmsg's encoder: for random responses at every served
// version, the concatenated parts (file ranges read back) equal
// kmsg.FetchResponse.AppendTo of the same response with the records inline.
func TestFetchEncoderMatchesKmsg(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	f, err := os.Create(filepath.Join(t.TempDir(), "records"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var filePos int64
	// writeChunks stores b in the file (after some filler) and returns it
	// as one to three chunks.
	writeChunks := func(b []byte) *storage.ReadResult {
		filler := int64(rng.IntN(50))
		if _, err := f.WriteAt(bytes.Repeat([]byte{0xee}, int(filler)), filePos); err != nil {
			t.Fatal(err)
		}
		filePos += filler
		if _, err := f.WriteAt(b, filePos); err != nil {
			t.Fatal(err)
		}
		rr := &storage.ReadResult{Size: int64(len(b)), FirstOffset: 0}
		rest := int64(len(b))
		pos := filePos
		for rest > 0 {
			n := rest
			if rest > 1 && rng.IntN(2) == 0 {
				n = 1 + rng.Int64N(rest)
			}
			rr.Chunks = append(rr.Chunks, storage.Chunk{File: f, Pos: pos, Len: n})
			pos += n
			rest -= n
		}
		filePos += int64(len(b))
		return rr
	}
	randStr := func() string {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = byte('a' + rng.IntN(26))
		}
		return string(b)
	}
	for v := int16(4); v <= 17; v++ {
		for iter := 0; iter < 200; iter++ {
			kr := kmsg.NewPtrFetchResponse()
			kr.Version = v
			kr.ThrottleMillis = rng.Int32()
			if v >= 7 {
				kr.ErrorCode, kr.SessionID = int16(rng.IntN(120)), rng.Int32()
			}
			mine := &fetchResponseData{version: v, throttleMs: kr.ThrottleMillis, errorCode: kr.ErrorCode, sessionID: kr.SessionID}
			for range rng.IntN(4) {
				kt := kmsg.NewFetchResponseTopic()
				mt := fetchTopicData{}
				if v >= 13 {
					for i := range kt.TopicID {
						kt.TopicID[i] = byte(rng.IntN(256))
					}
					mt.id = kt.TopicID
				} else {
					kt.Topic = randStr()
					mt.name = kt.Topic
				}
				for range rng.IntN(4) {
					kp := kmsg.NewFetchResponseTopicPartition()
					kp.Partition, kp.ErrorCode = rng.Int32(), int16(rng.IntN(120))
					kp.HighWatermark, kp.LastStableOffset, kp.LogStartOffset = rng.Int64()-rng.Int64(), rng.Int64(), rng.Int64()
					if v < 5 {
						kp.LogStartOffset = -1
					}
					if v < 11 {
						kp.PreferredReadReplica = -1
					} else {
						kp.PreferredReadReplica = rng.Int32() - rng.Int32()
					}
					mp := newFetchPartitionData(kp.Partition)
					mp.errorCode, mp.highWatermark, mp.lastStable, mp.logStart = kp.ErrorCode, kp.HighWatermark, kp.LastStableOffset, kp.LogStartOffset
					mp.preferredReadReplica = kp.PreferredReadReplica
					if rng.IntN(2) == 0 {
						kp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
						mp.aborted = []fetchAbortedTxn{}
						for range rng.IntN(3) {
							a := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
							a.ProducerID, a.FirstOffset = rng.Int64(), rng.Int64()
							kp.AbortedTransactions = append(kp.AbortedTransactions, a)
							mp.aborted = append(mp.aborted, fetchAbortedTxn{producerID: a.ProducerID, firstOffset: a.FirstOffset})
						}
					}
					switch rng.IntN(3) {
					case 0:
						kp.RecordBatches = nil
						mp.nullRecords = true
					case 1:
						kp.RecordBatches = []byte{}
					default:
						b := make([]byte, 1+rng.IntN(300))
						for i := range b {
							b[i] = byte(rng.IntN(256))
						}
						kp.RecordBatches = b
						mp.records = writeChunks(b)
					}
					if v >= 12 {
						if rng.IntN(2) == 0 {
							kp.DivergingEpoch.Epoch, kp.DivergingEpoch.EndOffset = rng.Int32(), rng.Int64()
							mp.divergingEpoch, mp.divergingEndOffset = kp.DivergingEpoch.Epoch, kp.DivergingEpoch.EndOffset
						}
						if rng.IntN(2) == 0 {
							kp.CurrentLeader.LeaderID, kp.CurrentLeader.LeaderEpoch = rng.Int32(), -1
							mp.currentLeaderID, mp.currentLeaderEpoch = kp.CurrentLeader.LeaderID, -1
						}
						if rng.IntN(3) == 0 {
							kp.SnapshotID.EndOffset, kp.SnapshotID.Epoch = rng.Int64(), rng.Int32()
							mp.snapshotEndOffset, mp.snapshotEpoch = kp.SnapshotID.EndOffset, kp.SnapshotID.Epoch
						}
					}
					kt.Partitions = append(kt.Partitions, kp)
					mt.partitions = append(mt.partitions, mp)
				}
				kr.Topics = append(kr.Topics, kt)
				mine.topics = append(mine.topics, mt)
			}
			if v >= 16 {
				for range rng.IntN(3) {
					b := kmsg.NewFetchResponseBroker()
					b.NodeID, b.Host, b.Port = rng.Int32(), randStr(), rng.Int32()
					if rng.IntN(2) == 0 {
						r := randStr()
						b.Rack = &r
					}
					kr.Brokers = append(kr.Brokers, b)
					mine.brokers = append(mine.brokers, fetchNodeEndpoint{nodeID: b.NodeID, host: b.Host, port: b.Port, rack: b.Rack})
				}
			}
			want := kr.AppendTo(nil)
			sr := streamFetchResponse(mine)
			got := streamBytes(t, sr)
			if sr.Size() != int64(len(got)) {
				t.Fatalf("v%d: Size %d, body %d bytes", v, sr.Size(), len(got))
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("v%d iteration %d: encoding differs from kmsg\n got %x\nwant %x", v, iter, got, want)
			}
			back := kmsg.NewPtrFetchResponse()
			back.Version = v
			if err := back.ReadFrom(got); err != nil {
				t.Fatalf("v%d: kmsg cannot read our encoding: %v", v, err)
			}
			sr.Done()
		}
	}
}
