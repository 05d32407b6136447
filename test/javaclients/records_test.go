package javaclients

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"
)

// txnLog is a topic's records as this test computes them from a
// READ_UNCOMMITTED read that keeps control records: a transactional
// record is committed when a COMMIT marker of its producer follows it in
// its partition, aborted when an ABORT marker does, and open otherwise.
// It is an independent check of what the broker's READ_COMMITTED fetches
// return.
type txnLog struct {
	committed map[int32][]*kgo.Record // by partition, in offset order
	aborted   int                     // records of aborted transactions
	open      int                     // records of transactions still open
	ends      map[int32]int64         // the high watermarks read up to
}

// readTxnLog reads every partition of topic from its start to its high
// watermark.
func (c *procCluster) readTxnLog(topic string, parts int32) txnLog {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	adm := c.admin()
	log := txnLog{committed: map[int32][]*kgo.Record{}, ends: map[int32]int64{}}
	waitFor(c.t, topic+" end offsets", func() (bool, string) {
		res, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return false, err.Error()
		}
		for p := range parts {
			o, ok := res.Lookup(topic, p)
			if !ok || o.Err != nil {
				return false, fmt.Sprintf("partition %d: %v", p, o.Err)
			}
			log.ends[p] = o.Offset
		}
		return true, ""
	})
	starts := map[int32]kgo.Offset{}
	for p := range parts {
		starts[p] = kgo.NewOffset().AtStart()
	}
	cl := c.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: starts}),
		kgo.KeepControlRecords(), kgo.FetchIsolationLevel(kgo.ReadUncommitted()))
	defer cl.Close()
	all := map[int32][]*kgo.Record{}
	done := func() bool {
		for p := range parts {
			if rs := all[p]; log.ends[p] > 0 && (len(rs) == 0 || rs[len(rs)-1].Offset < log.ends[p]-1) {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			c.t.Fatalf("read %s: timed out (ends %v)", topic, log.ends)
		}
		fs.EachError(func(t string, p int32, err error) { c.t.Logf("read %s-%d: %v", t, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < log.ends[r.Partition] {
				all[r.Partition] = append(all[r.Partition], r)
			}
		})
	}
	for p, rs := range all {
		pending := map[int64][]*kgo.Record{} // by producer id
		for _, r := range rs {
			switch {
			case r.Attrs.IsControl():
				if len(r.Key) < 4 {
					c.t.Fatalf("%s-%d offset %d: control record key %x", topic, p, r.Offset, r.Key)
				}
				switch typ := binary.BigEndian.Uint16(r.Key[2:4]); typ {
				case 0: // ABORT
					log.aborted += len(pending[r.ProducerID])
				case 1: // COMMIT
					log.committed[p] = append(log.committed[p], pending[r.ProducerID]...)
				}
				delete(pending, r.ProducerID)
			case r.Attrs.IsTransactional():
				pending[r.ProducerID] = append(pending[r.ProducerID], r)
			default:
				log.committed[p] = append(log.committed[p], r)
			}
		}
		for _, rs := range pending {
			log.open += len(rs)
		}
		slices.SortFunc(log.committed[p], func(a, b *kgo.Record) int { return int(a.Offset - b.Offset) })
	}
	return log
}
