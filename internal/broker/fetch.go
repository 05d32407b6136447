package broker

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/wire"
)

// partRead is one partition of a fetch after its read.
type partRead struct {
	req   fetchRequestPartition
	topic string
	id    metadata.Uuid
	out   fetchResult
}

// handleFetch serves Fetch v4–v17 for consumers and followers: it resolves
// the request's fetch session, reads every partition within the response
// and partition byte limits (the first partition with data may exceed them
// so that the fetcher progresses, KIP-74), long-polls until MinBytes are
// available, MaxWait passes, or something happens that the fetcher must
// hear about at once (an error, a diverging epoch), and answers with a
// streamed response whose records are file ranges.
func (b *Broker) handleFetch(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	start := time.Now()
	req, ok := kreq.(*kmsg.FetchRequest)
	if !ok {
		return nil, requestTypeError("Fetch", kreq)
	}
	v := req.Version
	replicaID, replicaEpoch := fetchReplica(req)
	follower := replicaID >= 0
	usesIDs := v >= 13

	var reqParts []fetchRequestPartition
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			rp := fetchRequestPartition{
				fetchOffset: p.FetchOffset, fetcherLogStart: p.LogStartOffset, maxBytes: p.PartitionMaxBytes,
				currentLeaderEpoch: p.CurrentLeaderEpoch, lastFetchedEpoch: p.LastFetchedEpoch,
			}
			if v < 9 {
				rp.currentLeaderEpoch = -1
			}
			if v < 12 {
				rp.lastFetchedEpoch = -1
			}
			if usesIDs {
				rp.key = sessionKey{id: t.TopicID, partition: p.Partition}
			} else {
				rp.key = sessionKey{topic: t.Topic, partition: p.Partition}
			}
			reqParts = append(reqParts, rp)
		}
	}
	sessionID, epoch := int32(0), int32(fetchSessionFinalEpoch)
	var forgotten []sessionKey
	if v >= 7 {
		sessionID, epoch = req.SessionID, req.SessionEpoch
		for _, t := range req.ForgottenTopics {
			for _, p := range t.Partitions {
				if usesIDs {
					forgotten = append(forgotten, sessionKey{id: t.TopicID, partition: p})
				} else {
					forgotten = append(forgotten, sessionKey{topic: t.Topic, partition: p})
				}
			}
		}
	}
	fc := b.fetchs.newContext(sessionID, epoch, reqParts, forgotten, usesIDs)
	if fc.kind == sessionError {
		return streamFetchResponse(&fetchResponseData{version: v, errorCode: fc.errCode}), nil
	}

	isolation := storage.FetchHighWatermark
	limit := int64(req.MaxBytes)
	cfg := b.rm.Config()
	switch {
	case follower:
		isolation = storage.FetchLogEnd
		limit = min(limit, int64(cfg.ReplicaFetchResponseMaxBytes))
	default:
		if req.IsolationLevel == 1 {
			isolation = storage.FetchTxnCommitted
		}
		limit = min(limit, int64(cfg.FetchMaxBytes))
	}
	limit = max(limit, 0)

	img := b.image()
	denied := fetchDenied(rc, img, fc.partitions, follower)
	var ns []*notifier
	for _, rp := range fc.partitions {
		if tp, _, ok := resolveFetchTopic(img, rp.key); ok {
			if p, ok := b.rm.Partition(storage.TopicPartition{Topic: tp, Partition: rp.key.partition}); ok {
				ns = append(ns, &p.notify)
			}
		}
	}
	var reads []partRead
	cond := func() bool {
		releaseReads(reads)
		var total int64
		var urgent bool
		reads, total, urgent = b.readFetch(b.image(), fc.partitions, denied, limit, isolation, replicaID, replicaEpoch)
		return urgent || total >= int64(req.MinBytes)
	}
	deadline := time.Now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	if waitUntil(ctx, b.closing, deadline, ns, cond) == waitCanceled {
		releaseReads(reads)
		return nil, fmt.Errorf("fetch: %w", ctx.Err())
	}
	resp := b.buildFetchResponse(rc, req, fc, reads, isolation, follower)
	if !follower {
		// The server charges kmsg responses to the request quota; a
		// streamed one carries its throttle time encoded already.
		d := b.quotas.recordRequestTime(img, rc, wire.BusySince(ctx, start), b.rm.now())
		resp.throttleMs = max(resp.throttleMs, int32(d/time.Millisecond))
	}
	return streamFetchResponse(resp), nil
}

// fetchReplica returns the replica id and broker epoch a fetch names: a
// follower's own (v15+ in ReplicaState), -1 for a consumer.
func fetchReplica(req *kmsg.FetchRequest) (id int32, epoch int64) {
	if req.Version >= 15 {
		return req.ReplicaState.ID, req.ReplicaState.Epoch
	}
	return req.ReplicaID, -1
}

// fetchFromFollower reports whether req is a follower's fetch.
func fetchFromFollower(req *kmsg.FetchRequest) bool {
	id, _ := fetchReplica(req)
	return id >= 0
}

// resolveFetchTopic returns the name and id of a fetched partition's topic.
func resolveFetchTopic(img *metadata.Image, k sessionKey) (string, metadata.Uuid, bool) {
	if !k.id.IsZero() {
		t, ok := img.TopicByID(k.id)
		if !ok {
			return "", k.id, false
		}
		return t.Name, t.ID, true
	}
	t, ok := img.Topic(k.topic)
	if !ok {
		return k.topic, metadata.Uuid{}, false
	}
	return t.Name, t.ID, true
}

// readFetch reads every partition of a fetch once, in order, within the
// response limit: minOneBatch holds until a partition returned data, and
// each partition reads at most min(its limit, what is left of the
// response limit). urgent says the fetch must be answered now (an error or
// a diverging epoch). Partitions marked in denied (see fetchDenied) are
// answered TOPIC_AUTHORIZATION_FAILED without being read; like Kafka, they
// do not end a long poll unless nothing else is fetched.
func (b *Broker) readFetch(img *metadata.Image, parts []fetchRequestPartition, denied []bool, limit int64, isolation storage.FetchIsolation, replicaID int32, replicaEpoch int64) ([]partRead, int64, bool) {
	reads := make([]partRead, len(parts))
	minOne := true
	var total int64
	urgent := false
	refused := 0
	now := b.now()
	// Without a leader throttle rate (the default) no partition is
	// throttled, and follower fetches skip the per-partition check.
	throttleRate := b.rm.Config().LeaderReplicationThrottledRate
	for i, rp := range parts {
		r := &reads[i]
		r.req = rp
		name, id, ok := resolveFetchTopic(img, rp.key)
		r.topic, r.id = name, id
		if denied != nil && denied[i] {
			r.out.err = errTopicAuthz
			refused++
			continue
		}
		var p *Partition
		switch {
		case !ok && !rp.key.id.IsZero():
			r.out.err = errf(kerr.UnknownTopicID, "topic id %s is not known", rp.key.id)
		case !ok:
			r.out.err = errf(kerr.UnknownTopicOrPartition, "topic %s does not exist", rp.key.topic)
		default:
			t, _ := img.Topic(name)
			if _, exists := t.Partition(rp.key.partition); !exists {
				r.out.err = errf(kerr.UnknownTopicOrPartition, "partition %s-%d does not exist", name, rp.key.partition)
				break
			}
			var local bool
			p, local = b.rm.Partition(storage.TopicPartition{Topic: name, Partition: rp.key.partition})
			if !local {
				r.out.err = errf(kerr.NotLeaderForPartition, "broker %d does not host %s-%d", b.cfg.NodeID, name, rp.key.partition)
			}
		}
		if r.out.err != nil {
			urgent = true
			continue
		}
		maxBytes := min(int64(max(rp.maxBytes, 0)), limit)
		r.out = p.fetch(fetchParams{
			fetchOffset: rp.fetchOffset, followerLogStart: rp.fetcherLogStart, maxBytes: maxBytes,
			currentLeaderEpoch: rp.currentLeaderEpoch, lastFetchedEpoch: rp.lastFetchedEpoch,
			isolation: isolation, minOneBatch: minOne, replicaID: replicaID, replicaEpoch: replicaEpoch,
		}, now)
		if r.out.err != nil || r.out.diverging {
			urgent = true
			continue
		}
		if replicaID >= 0 && r.out.res != nil && r.out.res.Size > 0 && throttleRate != math.MaxInt64 && p.leaderThrottle(replicaID) {
			// A catching-up follower of a throttled partition
			// (replication_quota.go): nothing while over the rate.
			if b.rm.leaderQuota.exceeded(throttleRate, now) {
				r.out.res.Release()
				r.out.res = nil
				continue
			}
			b.rm.leaderQuota.record(r.out.res.Size, now)
		}
		if n := r.out.res.Size; n > 0 {
			minOne = false
			limit = max(0, limit-n)
			total += n
		}
	}
	if refused > 0 && refused == len(parts) {
		urgent = true
	}
	return reads, total, urgent
}

func releaseReads(reads []partRead) {
	for i := range reads {
		if reads[i].out.res != nil {
			reads[i].out.res.Release()
			reads[i].out.res = nil
		}
	}
}

// buildFetchResponse turns the reads into the response, letting the fetch
// session decide which partitions an incremental response includes.
func (b *Broker) buildFetchResponse(rc *wire.RequestContext, req *kmsg.FetchRequest, fc *fetchContext, reads []partRead, isolation storage.FetchIsolation, follower bool) *fetchResponseData {
	v := req.Version
	img := b.image()
	outcomes := make([]partitionOutcome, len(reads))
	data := make([]fetchPartitionData, len(reads))
	leaders := map[int32]bool{}
	for i := range reads {
		r := &reads[i]
		d := newFetchPartitionData(r.req.key.partition)
		code := errorCode(r.out.err)
		d.errorCode = code
		b.rm.stats.fetchError(code)
		if r.out.err == nil {
			d.highWatermark, d.lastStable, d.logStart = r.out.hw, r.out.lso, r.out.logStart
			if r.out.diverging {
				d.divergingEpoch, d.divergingEndOffset = r.out.divEpoch, r.out.divEndOff
			}
			if rr := r.out.res; rr != nil && rr.Size > 0 {
				d.records = rr
				if isolation == storage.FetchTxnCommitted {
					d.aborted = make([]fetchAbortedTxn, 0, len(rr.AbortedTxns))
					for _, a := range rr.AbortedTxns {
						d.aborted = append(d.aborted, fetchAbortedTxn{producerID: a.ProducerID, firstOffset: a.FirstOffset})
					}
				}
			}
		} else if v >= 16 && (code == kerr.NotLeaderForPartition.Code || code == kerr.FencedLeaderEpoch.Code) {
			if id, epoch, ok := currentLeader(img, storage.TopicPartition{Topic: r.topic, Partition: r.req.key.partition}); ok {
				d.currentLeaderID, d.currentLeaderEpoch = id, epoch
				if id >= 0 {
					leaders[id] = true
				}
			}
		}
		data[i] = d
		outcomes[i] = partitionOutcome{
			key: r.req.key, hasRecords: d.records != nil, hw: d.highWatermark, logStart: d.logStart,
			errCode: code, diverging: r.out.diverging,
		}
	}
	sessionID, keep, errCode := b.fetchs.complete(fc, outcomes, follower)
	resp := &fetchResponseData{version: v, sessionID: sessionID, errorCode: errCode}
	if errCode != 0 {
		releaseReads(reads)
		return resp
	}
	for i := range reads {
		r := &reads[i]
		if !keep[i] {
			if r.out.res != nil {
				r.out.res.Release()
			}
			continue
		}
		if data[i].records == nil && r.out.res != nil {
			r.out.res.Release() // an empty read
		} else if !follower && data[i].records != nil {
			b.rm.stats.fetched(r.topic, data[i].records.Size)
		}
		n := len(resp.topics)
		same := n > 0 && ((v >= 13 && resp.topics[n-1].id == r.req.key.id) || (v < 13 && resp.topics[n-1].name == r.topic))
		if !same {
			t := fetchTopicData{name: r.topic, id: r.req.key.id}
			if v < 13 {
				t.name = r.req.key.topic
			}
			resp.topics = append(resp.topics, t)
			n++
		}
		resp.topics[n-1].partitions = append(resp.topics[n-1].partitions, data[i])
	}
	if v >= 16 {
		listener := ""
		if rc != nil {
			listener = rc.Listener
		}
		for _, id := range sortedIDs(leaders) {
			if reg, ok := img.Broker(id); ok {
				if ep, ok := reg.Endpoint(listener); ok {
					resp.brokers = append(resp.brokers, fetchNodeEndpoint{nodeID: id, host: ep.Host, port: int32(ep.Port), rack: rackOf(reg)})
				}
			}
		}
	}
	if !follower {
		var n int64
		for i := range resp.topics {
			for _, p := range resp.topics[i].partitions {
				if p.records != nil {
					n += p.records.Size
				}
			}
		}
		resp.throttleMs = int32(b.quotas.record(img, "consumer_byte_rate", rc, n, b.rm.now()).Milliseconds())
	}
	return resp
}
