package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/wire"
)

// adminClientID is the client id with which Kafka lets a client write to
// internal topics (its admin tools' id).
const adminClientID = "__admin_client"

// produceItem is one partition of a Produce request on its way through the
// checks, the append and the acks=all wait.
type produceItem struct {
	tp      storage.TopicPartition
	records []byte
	resp    *kmsg.ProduceResponseTopicPartition
	err     error

	txn      bool // the batch is transactional
	p        *Partition
	appended bool // the batch is in the log (even if the acks=all wait failed)
	info     storage.AppendInfo
	epoch    int32
}

// handleProduce serves Produce v3–v11 with Kafka's per-partition semantics:
// unknown partitions, malformed record sets, internal topics and
// partitions this node does not lead are answered per partition; the others
// are appended, and for acks=-1 the response waits until every appended
// partition committed or the request's timeout passed. acks=0 gets no
// response; if any partition failed the connection is closed instead, as
// Kafka does, so that the client refreshes its metadata.
func (b *Broker) handleProduce(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req, ok := kreq.(*kmsg.ProduceRequest)
	if !ok {
		return nil, requestTypeError("Produce", kreq)
	}
	img := b.image()
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	clientID := ""
	if rc != nil && rc.Header.ClientID != nil {
		clientID = *rc.Header.ClientID
	}

	// Kafka keys a produce request by partition: the last occurrence of a
	// partition is the one served.
	last := map[storage.TopicPartition][2]int{}
	for ti, t := range req.Topics {
		for pi, p := range t.Partitions {
			last[storage.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = [2]int{ti, pi}
		}
	}
	var items []*produceItem
	for ti, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		for pi, p := range t.Partitions {
			tp := storage.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			if last[tp] != [2]int{ti, pi} {
				continue
			}
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.BaseOffset = -1
			rt.Partitions = append(rt.Partitions, rp)
			items = append(items, &produceItem{tp: tp, records: p.Records})
		}
		if len(rt.Partitions) > 0 {
			resp.Topics = append(resp.Topics, rt)
		}
	}
	// Point every item at its response entry (the slices are final now).
	i := 0
	for ti := range resp.Topics {
		for pi := range resp.Topics[ti].Partitions {
			items[i].resp = &resp.Topics[ti].Partitions[pi]
			i++
		}
	}

	authorizeProduce(rc, req, items)
	for _, it := range items {
		if it.err == nil {
			it.err = b.checkProduce(img, req, clientID, it)
		}
	}
	if acks := req.Acks; acks != -1 && acks != 0 && acks != 1 {
		for _, it := range items {
			if it.err == nil {
				it.err = errf(kerr.InvalidRequiredAcks, "acks must be -1, 0 or 1, not %d", acks)
			}
		}
	}
	b.verifyTransactional(ctx, req, items)

	for _, it := range items {
		if it.err != nil {
			continue
		}
		it.info, it.epoch, it.err = it.p.appendAsLeader(it.records, storage.OriginClient, req.Acks, -1, true)
		it.appended = it.err == nil
	}
	if req.Acks == -1 {
		b.waitProduceCommitted(ctx, time.Duration(req.TimeoutMillis)*time.Millisecond, items)
	}

	failed := false
	leaders := map[int32]bool{}
	for _, it := range items {
		rp := it.resp
		if it.err != nil {
			failed = true
			rp.ErrorCode = errorCode(it.err)
			rp.ErrorMessage = errorMessage(it.err)
			var ri recordIndexer
			if req.Version >= 8 && errors.As(it.err, &ri) {
				re := kmsg.NewProduceResponseTopicPartitionErrorRecord()
				re.RelativeOffset = int32(ri.RecordIndex())
				re.ErrorMessage = errorMessage(it.err)
				rp.ErrorRecords = append(rp.ErrorRecords, re)
			}
			if req.Version >= 10 && (rp.ErrorCode == kerr.NotLeaderForPartition.Code || rp.ErrorCode == kerr.FencedLeaderEpoch.Code) {
				if id, epoch, ok := currentLeader(img, it.tp); ok {
					rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = id, epoch
					if id >= 0 {
						leaders[id] = true
					}
				}
			}
		}
		// A partition that was appended but not acknowledged in time
		// keeps the offsets it got, as in Kafka.
		if it.appended {
			rp.BaseOffset = it.info.FirstOffset
			rp.LogAppendTime = it.info.LogAppendTime
			rp.LogStartOffset = it.info.LogStartOffset
		}
	}
	if req.Version >= 10 {
		listener := ""
		if rc != nil {
			listener = rc.Listener
		}
		for _, id := range sortedIDs(leaders) {
			if reg, ok := img.Broker(id); ok {
				if ep, ok := reg.Endpoint(listener); ok {
					nb := kmsg.NewProduceResponseBroker()
					nb.NodeID, nb.Host, nb.Port, nb.Rack = id, ep.Host, int32(ep.Port), rackOf(reg)
					resp.Brokers = append(resp.Brokers, nb)
				}
			}
		}
	}
	if req.Acks == 0 {
		if failed {
			return nil, fmt.Errorf("produce with acks=0 failed for some partitions; closing the connection so the client refreshes metadata")
		}
		return nil, nil
	}
	var n int64
	for _, it := range items {
		if it.appended {
			n += int64(len(it.records))
		}
	}
	resp.ThrottleMillis = int32(b.quotas.record(img, "producer_byte_rate", rc, n, b.rm.now()).Milliseconds())
	return resp, nil
}

// checkProduce applies the checks Kafka makes before an append: the
// partition exists, the record set is exactly one v2 batch (zstd only from
// v7), internal topics are written only by admin tools, and this node
// leads the partition.
func (b *Broker) checkProduce(img *metadata.Image, req *kmsg.ProduceRequest, clientID string, it *produceItem) error {
	t, ok := img.Topic(it.tp.Topic)
	if !ok {
		return errf(kerr.UnknownTopicOrPartition, "topic %s does not exist", it.tp.Topic)
	}
	if _, ok := t.Partition(it.tp.Partition); !ok {
		return errf(kerr.UnknownTopicOrPartition, "partition %s does not exist", it.tp)
	}
	if err := validateProduceRecords(req.Version, it.records); err != nil {
		return err
	}
	if h, err := record.ParseHeader(it.records); err == nil {
		it.txn = h.IsTransactional()
	}
	if isInternalTopic(it.tp.Topic) && clientID != adminClientID {
		return errf(kerr.InvalidTopicException, "cannot append to internal topic %s", it.tp.Topic)
	}
	p, ok := b.rm.Partition(it.tp)
	if !ok {
		return errf(kerr.NotLeaderForPartition, "broker %d does not host %s", b.cfg.NodeID, it.tp)
	}
	it.p = p
	return nil
}

// validateProduceRecords is Kafka's ProduceRequest.validateRecords for v3+.
func validateProduceRecords(version int16, recs []byte) error {
	if len(recs) == 0 {
		return errf(kerr.InvalidRecord, "produce requests with version %d must have at least one record batch per partition", version)
	}
	const magicPos = 16
	if len(recs) > magicPos && recs[magicPos] != record.MagicV2 {
		return errf(kerr.InvalidRecord, "produce requests with version %d are only allowed to contain record batches with magic version 2", version)
	}
	batch, rest, err := record.NextBatch(recs)
	if err != nil {
		return fmt.Errorf("produce record set: %w: %w", err, kerr.CorruptMessage)
	}
	h, err := record.ParseHeader(batch)
	if err != nil {
		return fmt.Errorf("produce record set: %w: %w", err, kerr.CorruptMessage)
	}
	if version < 7 && h.Codec() == record.CodecZstd {
		return errf(kerr.UnsupportedCompressionType, "produce requests with version %d are not allowed to use zstd compression", version)
	}
	if len(rest) > 0 {
		return errf(kerr.InvalidRecord, "produce requests with version %d are only allowed to contain exactly one record batch per partition", version)
	}
	return nil
}

// verifyTransactional checks transactional batches with the transaction
// coordinator (KIP-890 verification); without one they are refused.
func (b *Broker) verifyTransactional(ctx context.Context, req *kmsg.ProduceRequest, items []*produceItem) {
	var txnItems []*produceItem
	for _, it := range items {
		if it.err == nil && it.txn {
			txnItems = append(txnItems, it)
		}
	}
	if len(txnItems) == 0 {
		return
	}
	tc := b.txn.get()
	if tc == nil || req.TransactionID == nil {
		for _, it := range txnItems {
			it.err = errf(kerr.InvalidTxnState, "%s was not added to a transaction: this broker has no transaction coordinator yet", it.tp)
		}
		return
	}
	h, _ := record.ParseHeader(txnItems[0].records)
	tps := make([]storage.TopicPartition, len(txnItems))
	for i, it := range txnItems {
		tps[i] = it.tp
	}
	errs := tc.VerifyTransaction(ctx, *req.TransactionID, h.ProducerID, h.ProducerEpoch, tps)
	for i, it := range txnItems {
		if i < len(errs) && errs[i] != nil {
			it.err = errs[i]
		}
	}
}

// waitProduceCommitted waits, for acks=-1, until every appended partition
// committed its batches (or failed), or until timeout.
func (b *Broker) waitProduceCommitted(ctx context.Context, timeout time.Duration, items []*produceItem) {
	var waiting []*produceItem
	var ns []*notifier
	for _, it := range items {
		if it.err == nil && it.appended {
			waiting = append(waiting, it)
			ns = append(ns, &it.p.notify)
		}
	}
	if len(waiting) == 0 {
		return
	}
	done := make([]bool, len(waiting))
	cond := func() bool {
		all := true
		for i, it := range waiting {
			if done[i] {
				continue
			}
			ok, err := it.p.checkCommitted(it.info.LastOffset+1, it.epoch)
			if ok {
				done[i], it.err = true, err
			} else {
				all = false
			}
		}
		return all
	}
	outcome := waitUntil(ctx, b.closing, time.Now().Add(timeout), ns, cond)
	if outcome == waitDone {
		return
	}
	for i, it := range waiting {
		if done[i] {
			continue
		}
		switch outcome {
		case waitClosing:
			it.err = errf(kerr.NotLeaderForPartition, "broker %d is shutting down", b.cfg.NodeID)
		default:
			it.err = errf(kerr.RequestTimedOut, "%s: not replicated to the ISR within %v", it.tp, timeout)
		}
	}
}

// currentLeader returns the leader and leader epoch the image has for a
// partition.
func currentLeader(img *metadata.Image, tp storage.TopicPartition) (int32, int32, bool) {
	t, ok := img.Topic(tp.Topic)
	if !ok {
		return -1, -1, false
	}
	ps, ok := t.Partition(tp.Partition)
	if !ok {
		return -1, -1, false
	}
	return ps.Leader, ps.LeaderEpoch, true
}

// rackOf returns a broker's rack as the nullable string responses carry.
func rackOf(reg metadata.BrokerRegistration) *string {
	if reg.Rack == "" {
		return nil
	}
	r := reg.Rack
	return &r
}
