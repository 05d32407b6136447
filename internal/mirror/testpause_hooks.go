//go:build kmirror_testhooks

package mirror

import (
	"context"
	"os"
	"strings"
	"time"
)

// The crash-test hook of the multi-process tests (test/mirror), compiled
// only with the kmirror_testhooks build tag. With the environment variable
//
//	KMIRROR_TEST_MIRROR_PAUSE=<point>:<file>
//
// a driver that reaches <point> while <file> exists logs "mirror test
// pause point reached" (level WARN, with the point and the partition) and
// waits until the file is removed or the driver ends. The points are
// stopping-fetchers-removed, stopping-lme-persisted and
// stopping-barrier-appended (testpause.go). It is read once, at start-up.
func init() {
	point, file, _ := strings.Cut(os.Getenv("KMIRROR_TEST_MIRROR_PAUSE"), ":")
	names := map[string]pausePoint{
		"stopping-fetchers-removed": pauseFetchersRemoved,
		"stopping-lme-persisted":    pauseLMEPersisted,
		"stopping-barrier-appended": pauseBarrierAppended,
	}
	want, ok := names[point]
	if !ok || file == "" {
		return
	}
	hook := func(ctx context.Context, d *driver, p pausePoint) {
		if p != want {
			return
		}
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for logged := false; ; logged = true {
			if _, err := os.Stat(file); err != nil {
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
	pauseHook.Store(&hook)
}
