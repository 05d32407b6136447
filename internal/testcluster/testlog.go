package testcluster

import (
	"bytes"
	"sync"
	"testing"
)

// testLog copies node logs to the test log until the cluster is shut down;
// later lines (from goroutines that outlive a node by a moment) are dropped,
// since logging after a test ends panics.
type testLog struct {
	t      testing.TB
	mu     sync.Mutex
	closed bool
}

func newTestLog(t testing.TB) *testLog { return &testLog{t: t} }

// Write implements io.Writer; slog handlers write one line per call.
func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.t.Log(string(bytes.TrimRight(p, "\n")))
	}
	return len(p), nil
}

func (l *testLog) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
}
