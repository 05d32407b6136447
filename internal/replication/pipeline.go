package replication

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/record"
)

// Pipelined fetching (Config.Pipeline): the fetcher sends request N+1 as
// soon as response N arrives and appends N's batches while N+1 is in
// flight, so that the source's serving and the network overlap the local
// appends instead of adding to them.
//
// Request N+1 asks every partition of N from where N's data ends (the
// offset after its last complete batch, and that batch's epoch as the last
// fetched epoch) before N is applied. That prediction is checked when N+1's
// answer is applied: a partition's answer counts only if its fetch offset
// then equals the one N+1 asked from (inflight.fetchOffset, see current).
// When N's append failed, diverged, was truncated or the partition was
// removed or re-added, the partition's offset differs or its value was
// replaced, and N+1's answer for it is dropped; the next request asks
// again from the applied position. The fetch session sees the predicted
// parameters as sent, and a later request corrects them like any change.
//
// Only consumer fetches pipeline: a follower's fetch offset is its log end
// as far as its leader knows (the high watermark advances on it), so it
// must never run ahead of what the follower appended.

// position is where a partition's next fetch starts.
type position struct {
	offset           int64
	lastFetchedEpoch int32
}

// pending is a response received (its session bookkeeping done) whose
// partitions' answers are not applied yet.
type pending struct {
	plan  *plan
	resp  *kmsg.FetchResponse
	ahead map[*partition]position
}

// fetchResult is the outcome of a Fetch sent in the background.
type fetchResult struct {
	resp *kmsg.FetchResponse
	err  error
}

// runPipelined is the fetcher's loop with one request in flight while the
// previous response is applied.
func (f *fetcher) runPipelined() {
	var pend *pending
	for f.ctx.Err() == nil {
		var ahead map[*partition]position
		if pend != nil {
			ahead = pend.ahead
		}
		p, nextReady := f.plan(ahead)
		if p == nil {
			if pend != nil {
				f.applyPending(pend)
				pend = nil
				continue
			}
			f.idle(nextReady)
			continue
		}
		if lim := f.cfg.Limiter; lim != nil {
			if err := lim.Wait(f.ctx); err != nil {
				return
			}
		}
		ep, err := f.endpoint()
		if err != nil {
			if pend != nil {
				f.applyPending(pend)
				pend = nil
			}
			if f.ctx.Err() != nil {
				return
			}
			f.failed(p, fmt.Errorf("connect to %s: %w", f.currentSource(), err))
			continue
		}
		done := make(chan fetchResult, 1)
		go func() {
			// Owned by this loop, which always receives from done
			// before it goes on or returns; f.ctx bounds the call.
			rctx, cancel := context.WithTimeout(f.ctx, f.cfg.MaxWait+f.cfg.RequestTimeout)
			defer cancel()
			resp, err := ep.Fetch(rctx, p.req)
			done <- fetchResult{resp, err}
		}()
		if pend != nil {
			f.applyPending(pend)
			pend = nil
		}
		res := <-done
		if res.err != nil {
			if f.ctx.Err() != nil {
				return
			}
			f.dropEndpoint()
			f.session.reset()
			f.failed(p, fmt.Errorf("fetch from %s: %w", f.currentSource(), res.err))
			continue
		}
		if lim := f.cfg.Limiter; lim != nil {
			lim.Consume(responseBytes(res.resp))
		}
		if !f.received(p, res.resp) {
			continue
		}
		pend = &pending{plan: p, resp: res.resp, ahead: f.predict(p, res.resp)}
	}
}

// applyPending applies a received response and what follows from it
// (fencing callbacks, out-of-range resolution).
func (f *fetcher) applyPending(pd *pending) {
	resets, fenced := f.applyData(pd.plan, pd.resp)
	if on := f.cfg.OnFenced; on != nil {
		for _, st := range fenced {
			on(st.add.TopicPartition, st.lastErr)
		}
	}
	if len(resets) > 0 {
		f.resolveOutOfRange(resets)
	}
}

// predict returns where each partition with data in resp will be once the
// data is appended: after its last complete batch, in that batch's epoch.
// Partitions with an error, a diverging epoch or no complete batch are
// left out (the next request asks from their current position).
func (f *fetcher) predict(p *plan, resp *kmsg.FetchResponse) map[*partition]position {
	ahead := make(map[*partition]position)
	useIDs := p.req.Version >= 13
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range resp.Topics {
		for i := range t.Partitions {
			rp := &t.Partitions[i]
			if rp.ErrorCode != 0 || rp.DivergingEpoch.EndOffset >= 0 || len(rp.RecordBatches) == 0 {
				continue
			}
			k := sessionKey{partition: rp.Partition}
			if useIDs {
				k.id = t.TopicID
			} else {
				k.topic = t.Topic
			}
			in, ok := p.parts[k]
			if !ok || !f.current(in) {
				continue
			}
			if next, epoch, ok := endOfBatches(rp.RecordBatches); ok && next > in.fetchOffset {
				ahead[in.st] = position{offset: next, lastFetchedEpoch: epoch}
			}
		}
	}
	return ahead
}

// endOfBatches returns the offset after the last complete batch of b and
// its partition leader epoch; false if b holds no complete batch. Only
// headers are read; the append validates the batches.
func endOfBatches(b []byte) (next int64, epoch int32, ok bool) {
	for len(b) > 0 {
		batch, rest, err := record.NextBatch(b)
		if err != nil {
			if !errors.Is(err, record.ErrIncomplete) {
				return 0, 0, false // the append refuses it; predict nothing
			}
			break
		}
		h, err := record.ParseHeader(batch)
		if err != nil {
			return 0, 0, false
		}
		next, epoch, ok = h.LastOffset()+1, h.PartitionLeaderEpoch, true
		b = rest
	}
	return next, epoch, ok
}
