package server

import (
	"testing"

	"github.com/kmirror/kmirror/internal/config"
)

func TestCleanerConfigFollowsSettings(t *testing.T) {
	load := func(overrides map[string]string) *config.Config {
		t.Helper()
		c, _, err := config.Load("", nil, overrides)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	cc := cleanerConfigOf(load(map[string]string{
		"log.cleaner.threads":               "2",
		"log.cleaner.dedupe.buffer.size":    "1048576",
		"log.cleaner.io.buffer.load.factor": "0.5",
		"log.cleaner.backoff.ms":            "250",
	}))
	if cc.Disabled || cc.Threads != 2 || cc.DedupeBufferSize != 1<<20 || cc.LoadFactor != 0.5 || cc.BackoffMs != 250 {
		t.Fatalf("cleaner config = %+v", cc)
	}
	if cc := cleanerConfigOf(load(map[string]string{"log.cleaner.enable": "false"})); !cc.Disabled {
		t.Fatal("log.cleaner.enable=false left the cleaner on")
	}
	if cc := cleanerConfigOf(load(map[string]string{"log.cleaner.threads": "0"})); !cc.Disabled {
		t.Fatal("log.cleaner.threads=0 left the cleaner on")
	}
}
