package replication

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// The decisions of this file are pure: what a fetcher does with one
// partition's answer, given what it knows of the local log. The fetcher
// (fetcher.go) performs them.

// truncation is where a diverging replica cuts its log.
type truncation struct {
	// offset is the offset to truncate to (every offset >= it goes).
	offset int64
	// complete is false when the replica did not know the epoch the source
	// answered with: after truncating it asks again, with its new last
	// epoch, and may truncate further.
	complete bool
}

// divergenceTruncation computes the truncation of a replica whose source
// answered its last fetched epoch with a diverging epoch: divEpoch is the
// largest epoch <= the last fetched one that the source knows, divEnd where
// that epoch ends on the source. The rules are Kafka's follower rules
// (AbstractFetcherThread.getOffsetTruncationState):
//
//   - the replica knows divEpoch: truncate to the smaller of the two end
//     offsets of that epoch (where the logs stop agreeing);
//   - the replica knows only an older epoch: truncate to where its largest
//     epoch below divEpoch ends, and ask again;
//   - the replica knows no epoch at all, or the source named none: the
//     source's end offset is the best bound.
//
// The result never exceeds the local log end offset leo.
func divergenceTruncation(divEpoch int32, divEnd, leo int64, endOffsetForEpoch func(int32) (int32, int64)) truncation {
	if divEnd < 0 {
		// The source gave no end offset: nothing to cut by.
		return truncation{offset: leo, complete: true}
	}
	if divEpoch < 0 {
		return truncation{offset: min(divEnd, leo), complete: true}
	}
	e, end := endOffsetForEpoch(divEpoch)
	switch {
	case e < 0 || end < 0:
		return truncation{offset: min(divEnd, leo), complete: true}
	case e != divEpoch:
		return truncation{offset: min(end, leo), complete: false}
	}
	return truncation{offset: min(divEnd, end, leo), complete: true}
}

// outOfRangeAction is how a replica whose fetch offset the source refused
// as out of range gets back into range.
type outOfRangeAction struct {
	// truncateTo >= 0: truncate the local log to it (the local log is
	// longer than the source's).
	truncateTo int64
	// restartAt >= 0: empty the local log and restart it there (the local
	// log ends before the source's begins).
	restartAt int64
	// fetchOffset is where to fetch next.
	fetchOffset int64
}

// resolveOutOfRange applies Kafka's follower rule for OFFSET_OUT_OF_RANGE
// (AbstractFetcherThread.fetchOffsetAndTruncate): a source that ends before
// the local log end means the local tail is not on the source (an unclean
// election, or a mirror source that lost data): truncate to the source's end.
// Otherwise the local log ends before the source's log start: restart the
// local log empty at the source's log start. A local end inside the source's
// range (the source moved between the fetch and the question) fetches on.
func resolveOutOfRange(leo int64, r OffsetRange) outOfRangeAction {
	switch {
	case r.End < leo:
		return outOfRangeAction{truncateTo: r.End, restartAt: -1, fetchOffset: r.End}
	case r.Start > leo:
		return outOfRangeAction{truncateTo: -1, restartAt: r.Start, fetchOffset: r.Start}
	}
	return outOfRangeAction{truncateTo: -1, restartAt: -1, fetchOffset: leo}
}

// reaction is what a fetcher does about a partition's error code.
type reaction int8

const (
	// reactNone: no error.
	reactNone reaction = iota
	// reactOutOfRange: ask the source for its log range (resolveOutOfRange).
	reactOutOfRange
	// reactFence: the partition's leader epoch is stale; stop fetching it
	// until it is added again with newer metadata.
	reactFence
	// reactBackoff: try again after the backoff (the source is not the
	// leader yet or any more, its metadata lags ours, it has a storage
	// error, ...).
	reactBackoff
)

// classify maps a partition's error code to the fetcher's reaction, as
// Kafka's fetcher does: FENCED_LEADER_EPOCH removes the partition until new
// metadata arrives; NOT_LEADER_OR_FOLLOWER and UNKNOWN_LEADER_EPOCH mean
// that one side's metadata lags, which a retry after the backoff resolves
// once the other side catches up; everything else is retried too.
func classify(code int16) reaction {
	switch code {
	case 0:
		return reactNone
	case kerr.OffsetOutOfRange.Code:
		return reactOutOfRange
	case kerr.FencedLeaderEpoch.Code:
		return reactFence
	}
	return reactBackoff
}
