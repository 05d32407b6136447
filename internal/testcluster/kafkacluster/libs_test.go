package kafkacluster_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/kmirror/kmirror/internal/testcluster/kafkacluster"
)

// fatalRecorder is a testing.TB whose Fatalf records the message and ends
// the goroutine, as the real one does.
type fatalRecorder struct {
	testing.TB
	msg     string
	skipped bool
}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (f *fatalRecorder) Skip(...any)          { f.skipped = true; runtime.Goexit() }
func (f *fatalRecorder) Skipf(string, ...any) { f.skipped = true; runtime.Goexit() }
func (f *fatalRecorder) SkipNow()             { f.skipped = true; runtime.Goexit() }

// TestLibsMissingFails: without the jars the helper fails the test, never
// skips it, and says how to install them.
func TestLibsMissingFails(t *testing.T) {
	t.Setenv(kafkacluster.LibsEnv, t.TempDir())
	f := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		kafkacluster.Libs(f)
	}()
	<-done
	if f.skipped {
		t.Fatal("Libs skipped the test")
	}
	for _, want := range []string{"scripts/test.sh", "test/kafka/pom.xml", kafkacluster.LibsEnv} {
		if !strings.Contains(f.msg, want) {
			t.Errorf("Libs failed with %q, which does not mention %s", f.msg, want)
		}
	}
}
