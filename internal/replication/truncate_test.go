package replication

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// epochs is a local epoch cache for the pure decisions: start offsets by
// epoch, ending at leo.
type epochs struct {
	ents []struct {
		epoch int32
		start int64
	}
	leo int64
}

func cache(leo int64, kv ...int64) epochs {
	e := epochs{leo: leo}
	for i := 0; i+1 < len(kv); i += 2 {
		e.ents = append(e.ents, struct {
			epoch int32
			start int64
		}{int32(kv[i]), kv[i+1]})
	}
	return e
}

// endOffsetFor is Kafka's LeaderEpochFileCache.endOffsetFor.
func (e epochs) endOffsetFor(epoch int32) (int32, int64) {
	if len(e.ents) == 0 || epoch < 0 {
		return -1, -1
	}
	if epoch < e.ents[0].epoch {
		return epoch, e.ents[0].start
	}
	for i := len(e.ents) - 1; i >= 0; i-- {
		if e.ents[i].epoch <= epoch {
			if i == len(e.ents)-1 {
				return e.ents[i].epoch, e.leo
			}
			return e.ents[i].epoch, e.ents[i+1].start
		}
	}
	return -1, -1
}

func TestDivergenceTruncation(t *testing.T) {
	for _, tc := range []struct {
		name     string
		local    epochs
		divEpoch int32
		divEnd   int64
		want     int64
		complete bool
	}{
		// Local: epoch 1 at 0, epoch 3 at 10, log end 20. Leader: epoch 1
		// ends at 12 (it never had epoch 3).
		{"both know the epoch: min of the ends", cache(20, 1, 0, 3, 10), 1, 12, 10, true},
		{"the leader's epoch ends first", cache(20, 1, 0, 3, 10), 3, 15, 15, true},
		{"the local log is shorter than both", cache(8, 1, 0), 1, 12, 8, true},
		{"the leader answers an epoch we skipped: intermediate truncation", cache(20, 1, 0, 3, 10), 2, 14, 10, false},
		{"no local epochs: the leader's end", cache(20), 4, 7, 7, true},
		{"the leader names no epoch", cache(20, 1, 0), -1, 5, 5, true},
		{"the leader gives no end offset: nothing to cut", cache(20, 1, 0), 1, -1, 20, true},
		{"epoch below the local cache: it ends where the cache starts", cache(20, 5, 4), 2, 9, 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := divergenceTruncation(tc.divEpoch, tc.divEnd, tc.local.leo, tc.local.endOffsetFor)
			if got.offset != tc.want || got.complete != tc.complete {
				t.Fatalf("truncate to %d (complete %v), want %d (%v)", got.offset, got.complete, tc.want, tc.complete)
			}
		})
	}
}

func TestResolveOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		leo                  int64
		r                    OffsetRange
		truncate, restart, f int64
	}{
		{"the leader's log is shorter: truncate to its end", 50, OffsetRange{Start: 0, End: 40}, 40, -1, 40},
		{"the local log ends before the leader's start: restart", 10, OffsetRange{Start: 100, End: 140}, -1, 100, 100},
		{"inside the range now: fetch on", 120, OffsetRange{Start: 100, End: 140}, -1, -1, 120},
		{"empty leader log below us", 5, OffsetRange{Start: 0, End: 0}, 0, -1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := resolveOutOfRange(tc.leo, tc.r)
			if got.truncateTo != tc.truncate || got.restartAt != tc.restart || got.fetchOffset != tc.f {
				t.Fatalf("got %+v, want truncate %d restart %d fetch %d", got, tc.truncate, tc.restart, tc.f)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	for code, want := range map[int16]reaction{
		0:                                 reactNone,
		kerr.OffsetOutOfRange.Code:        reactOutOfRange,
		kerr.FencedLeaderEpoch.Code:       reactFence,
		kerr.NotLeaderForPartition.Code:   reactBackoff,
		kerr.UnknownLeaderEpoch.Code:      reactBackoff,
		kerr.UnknownTopicOrPartition.Code: reactBackoff,
		kerr.KafkaStorageError.Code:       reactBackoff,
	} {
		if got := classify(code); got != want {
			t.Errorf("classify(%v) = %v, want %v", kerr.ErrorForCode(code), got, want)
		}
	}
}
