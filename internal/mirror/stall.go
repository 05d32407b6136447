package mirror

import (
	"fmt"
	"time"

	"github.com/kmirror/kmirror/internal/wire"
)

// A mirrored partition shown as MIRRORING must be copying. A partition whose
// fetching makes no progress — no fetch response for it in
// mirror.stall.timeout.ms while the source, asked directly (ListOffsets,
// lag.go), is ahead of its log end — is stalled, whatever the cause (a
// fetcher that lost the partition, a fetch session that starves it): the
// source's loop reports the stall in the partition's last error
// (DescribeMirrors) and in kmirror_mirror_partition_stalls_total, and
// restarts its fetching (EvStalled: the machine stops and starts it). A
// source that does not answer is not a stall: its high watermark is then not
// learned, and the outage shows as the fetch errors.

// checkStalls reports and restarts this source's stalled partitions.
func (s *source) checkStalls(now time.Time) {
	timeout := s.m.cfg.StallTimeout
	s.m.mu.Lock()
	var drivers []*driver
	for _, d := range s.m.drivers {
		if d.source == s {
			drivers = append(drivers, d)
		}
	}
	s.m.mu.Unlock()
	for _, d := range drivers {
		st, known, stats := d.snapshot()
		if !known || st.State != wire.MirrorStateMirroring {
			continue
		}
		log := d.part.Log()
		if log == nil {
			continue
		}
		leo := log.LogEndOffset()
		since := stats.LastFetch
		if stats.StateChange.After(since) {
			since = stats.StateChange
		}
		if now.Sub(since) < timeout || stats.SourceHW <= leo || !stats.Lag.hwAt.After(since) {
			continue
		}
		if !d.stats.stalled(now, timeout) {
			continue // reported less than a timeout ago
		}
		msg := fmt.Sprintf("mirror partition stalled: no fetch response for %s while the source's high watermark %d is above the log end offset %d; restarting its fetching",
			now.Sub(since).Round(time.Second), stats.SourceHW, leo)
		d.stats.setError(msg)
		d.log.Warn("mirror partition stalled; restarting its fetching", "since", since, "source_high_watermark", stats.SourceHW, "log_end_offset", leo)
		d.post(Event{Kind: EvStalled})
	}
}
