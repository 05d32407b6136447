package mirror

import (
	"context"
	"os"
	"strings"
	"time"
)

// A crash-test hook: the multi-process tests of test/mirror kill a node
// while a partition's failover is between two of its steps, and need the
// kill to land there every time. With the environment variable
//
//	KMIRROR_TEST_MIRROR_PAUSE=<point>:<file>
//
// a driver that reaches <point> while <file> exists logs "mirror test
// pause point reached" (level WARN, with the point and the partition) and
// waits until the file is removed or the driver ends. The points are
// stopping-fetchers-removed (after STOPPING's first step),
// stopping-lme-persisted (after the fourth, before the barrier) and
// stopping-barrier-appended (after the fifth, before STOPPED is
// persisted). Without the variable, or with the file absent, nothing
// waits. It is read once, at start-up; operators have no use for it.
var testPause = parseTestPause(os.Getenv("KMIRROR_TEST_MIRROR_PAUSE"))

// The pause points.
const (
	pauseFetchersRemoved = "stopping-fetchers-removed"
	pauseLMEPersisted    = "stopping-lme-persisted"
	pauseBarrierAppended = "stopping-barrier-appended"
)

type pausePoint struct{ point, file string }

func parseTestPause(v string) pausePoint {
	point, file, _ := strings.Cut(v, ":")
	return pausePoint{point: point, file: file}
}

// pauseAt waits at point while the test hook asks for it (see testPause).
func (d *driver) pauseAt(ctx context.Context, point string) {
	if testPause.point != point || testPause.file == "" {
		return
	}
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for logged := false; ; logged = true {
		if _, err := os.Stat(testPause.file); err != nil {
			return
		}
		if !logged {
			d.log.Warn("mirror test pause point reached", "point", point)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
