package mirror

import (
	"errors"
	"testing"
)

// TestStoppedTargetAppendsNothing: once its driver stopped fetching the
// partition (a pause, a failover), a fetch target refuses appends, so that
// a fetcher that got the partition again from a refresh racing the removal
// cannot write into a PAUSED or STOPPING partition. (The target's partition
// is nil here: the refusal comes before any use of it.)
func TestStoppedTargetAppendsNothing(t *testing.T) {
	tg := &fetchTarget{}
	tg.stopped.Store(true)
	if _, err := tg.Append([]byte{1, 2, 3}); !errors.Is(err, errTargetStopped) {
		t.Fatalf("append to a stopped target: %v", err)
	}
}
