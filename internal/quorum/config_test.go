package quorum

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

func TestParseVoters(t *testing.T) {
	got, err := ParseVoters("1@host1:9093, 2@10.0.0.2:9093,3@[::1]:9093")
	want := []Voter{{1, "host1:9093"}, {2, "10.0.0.2:9093"}, {3, "[::1]:9093"}}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("ParseVoters = %v, %v", got, err)
	}
	for _, bad := range []string{"", "1host:9093", "x@h:1", "-1@h:1", "1@h", "1@h:0", "1@h:70000", "1@"} {
		if _, err := ParseVoters(bad); err == nil {
			t.Errorf("ParseVoters(%q) succeeded", bad)
		}
	}
}

func TestConfigValidation(t *testing.T) {
	s := NewStreamLayer(tcpAddr("h1:1"))
	ok := Config{NodeID: 1, Dir: "d", Voters: []Voter{{1, "h1:1"}, {2, "h2:1"}}, Stream: s}
	cfg, err := ok.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.AdvertiseAddr != "h1:1" || cfg.HeartbeatTimeout != DefaultHeartbeatTimeout ||
		cfg.TrailingLogs != DefaultTrailingLogs || cfg.RaftLogLevel.Level() != slog.LevelWarn {
		t.Fatalf("defaults not applied: %+v", cfg)
	}
	for name, mutate := range map[string]func(*Config){
		"negative id":        func(c *Config) { c.NodeID = -1 },
		"no dir":             func(c *Config) { c.Dir = "" },
		"no voters":          func(c *Config) { c.Voters = nil },
		"repeated voter":     func(c *Config) { c.Voters = []Voter{{1, "a:1"}, {1, "b:1"}} },
		"wrong advertise":    func(c *Config) { c.AdvertiseAddr = "elsewhere:1" },
		"no way to listen":   func(c *Config) { c.Stream = nil },
		"voter without addr": func(c *Config) { c.Voters = []Voter{{1, ""}} },
	} {
		c := ok
		mutate(&c)
		if _, err := c.withDefaults(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// A short heartbeat caps the default leader lease, as raft requires.
	c := ok
	c.HeartbeatTimeout = 100_000_000
	if cfg, _ := c.withDefaults(); cfg.LeaderLeaseTimeout > cfg.HeartbeatTimeout {
		t.Fatalf("lease %v above heartbeat %v", cfg.LeaderLeaseTimeout, cfg.HeartbeatTimeout)
	}
}

func TestHCLogAdapterRoutesToSlog(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug - 4}))
	a := newHCLogAdapter(l, slog.LevelWarn)
	a.Info("election won", "term", 3)
	a.Debug("heartbeat")
	if buf.Len() != 0 {
		t.Fatalf("below-warn messages reached slog: %s", buf.String())
	}
	a.Named("net").With("peer", "2").Warn("failed to contact", "err", "refused")
	out := buf.String()
	for _, want := range []string{"level=WARN", `msg="failed to contact"`, "component=raft.net", "peer=2", "err=refused"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in %s", want, out)
		}
	}
	buf.Reset()
	a.StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Error}).Print("from std log")
	if !strings.Contains(buf.String(), "level=ERROR") || !strings.Contains(buf.String(), "from std log") {
		t.Fatalf("standard logger: %s", buf.String())
	}
	if !a.IsWarn() || a.IsInfo() {
		t.Fatal("level predicates wrong")
	}
}
