package storage

import (
	"time"
)

// Start launches the background tasks: flushing logs by flush.ms, writing
// the recovery point, log start offset and high watermark checkpoints,
// retention, producer id expiry and the removal of deleted partition
// directories. They run on one goroutine, stopped by Shutdown. The log
// cleaner threads (cleaner_manager.go) start here too.
func (m *Manager) Start() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started || m.stopped {
		return
	}
	m.started = true
	m.wg.Add(1)
	go m.run()
	m.startCleaners()
}

func (m *Manager) run() {
	defer m.wg.Done()
	ms := func(v int64) time.Duration {
		const maxInterval = 100 * 365 * 24 * time.Hour
		if d := time.Duration(v) * time.Millisecond; v < int64(maxInterval/time.Millisecond) {
			return d
		}
		return maxInterval
	}
	tasks := []struct {
		every time.Duration
		run   func()
	}{
		{ms(m.cfg.FlushSchedulerIntervalMs), m.flushDirtyLogs},
		{ms(m.cfg.FlushCheckpointIntervalMs), func() { m.checkpointEach(RecoveryPointCheckpointFileName, (*Log).RecoveryPoint) }},
		{ms(m.cfg.FlushStartOffsetCheckpointIntervalMs), func() { m.checkpointEach(LogStartOffsetCheckpointFileName, (*Log).LogStartOffset) }},
		{ms(m.cfg.HighWatermarkCheckpointIntervalMs), func() { m.checkpointEach(ReplicationOffsetCheckpointFileName, (*Log).HighWatermark) }},
		{ms(m.cfg.RetentionCheckIntervalMs), m.cleanupLogs},
		{ms(m.cfg.ProducerIDExpirationCheckIntervalMs), m.expireProducers},
	}
	tickers := make([]*time.Ticker, len(tasks))
	for i, t := range tasks {
		tickers[i] = time.NewTicker(t.every)
		defer tickers[i].Stop()
	}
	deleteTimer := time.NewTimer(time.Hour)
	defer deleteTimer.Stop()
	resetDeleteTimer := func() {
		next, any := m.runDueDeletes(false)
		wait := time.Hour
		if any {
			wait = max(next.Sub(m.cfg.Now()), time.Millisecond)
		}
		deleteTimer.Reset(wait)
	}
	resetDeleteTimer()
	for {
		select {
		case <-m.stop:
			return
		case <-m.wake:
			resetDeleteTimer()
		case <-deleteTimer.C:
			resetDeleteTimer()
		case <-tickers[0].C:
			tasks[0].run()
		case <-tickers[1].C:
			tasks[1].run()
		case <-tickers[2].C:
			tasks[2].run()
		case <-tickers[3].C:
			tasks[3].run()
		case <-tickers[4].C:
			tasks[4].run()
		case <-tickers[5].C:
			tasks[5].run()
		}
	}
}

// flushDirtyLogs flushes the logs not flushed for flush.ms (Kafka's
// flushDirtyLogs).
func (m *Manager) flushDirtyLogs() {
	for _, l := range m.Logs() {
		if l.TimeSinceLastFlushMs() >= l.Config().FlushMs {
			if err := l.Flush(); err != nil {
				m.logger.Warn("scheduled flush failed", "topic", l.tp.Topic, "partition", l.tp.Partition, "error", err)
			}
		}
	}
}

func (m *Manager) checkpointEach(name string, get func(*Log) int64) {
	for _, d := range m.dirs {
		if err := m.writeCheckpoint(d, name, get); err != nil {
			m.logger.Warn("checkpoint failed", "dir", d.path, "file", name, "error", err)
		}
	}
}

// cleanupLogs applies retention to every log (Kafka's cleanupLogs).
func (m *Manager) cleanupLogs() {
	total := 0
	for _, l := range m.Logs() {
		n, err := l.DeleteOldSegments()
		if err != nil {
			m.logger.Warn("retention failed", "topic", l.tp.Topic, "partition", l.tp.Partition, "error", err)
		}
		total += n
	}
	if total > 0 {
		m.logger.Info("retention deleted segments", "segments", total)
	}
}

func (m *Manager) expireProducers() {
	for _, l := range m.Logs() {
		l.RemoveExpiredProducers()
	}
}
