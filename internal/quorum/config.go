package quorum

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// Voter is a member of the static voter set (controller.quorum.voters).
type Voter struct {
	ID   int32
	Addr string // host:port of its raft endpoint
}

// Config configures a node's view of the metadata quorum.
type Config struct {
	// NodeID is this node's id (node.id); its raft server id is the id in
	// decimal.
	NodeID int32
	// Dir is the metadata log directory (metadata.log.dir, or the first
	// log dir). The quorum keeps its state in Dir/__cluster_metadata-0.
	Dir string
	// Voters is the static voter set. Every voter that starts with no state
	// bootstraps the quorum with exactly this set; afterwards membership
	// lives in the log and changes only through AddVoter/RemoveServer.
	Voters []Voter
	// AdvertiseAddr is the raft address peers dial for this node. For a
	// voter it defaults to (and must equal) its Voters entry; a non-voter
	// with its own listener defaults to the listener's address.
	AdvertiseAddr string

	// Stream carries raft over the server's shared listener. When nil, the
	// quorum listens on ListenAddr itself.
	Stream     *StreamLayer
	ListenAddr string

	// Logger receives the quorum's logs; nil means slog.Default().
	Logger *slog.Logger
	// RaftLogLevel is the least level of hashicorp/raft's own messages that
	// reach Logger; nil means warn.
	RaftLogLevel slog.Leveler

	// Raft timing, tuned for a LAN: zero values take the defaults below.
	HeartbeatTimeout   time.Duration // default 500ms
	ElectionTimeout    time.Duration // default 500ms
	LeaderLeaseTimeout time.Duration // default 500ms, at most HeartbeatTimeout
	CommitTimeout      time.Duration // default 50ms
	// SnapshotInterval is how often raft checks whether to snapshot
	// (default 2m); SnapshotThreshold is how many new log entries make it
	// snapshot (default 8192); TrailingLogs is how many entries stay in the
	// log after a snapshot so that slow followers catch up without one
	// (default 10240; set NoTrailingLogs for none).
	SnapshotInterval  time.Duration
	SnapshotThreshold uint64
	TrailingLogs      uint64
	NoTrailingLogs    bool
}

// Defaults of Config's timing fields.
const (
	DefaultHeartbeatTimeout   = 500 * time.Millisecond
	DefaultElectionTimeout    = 500 * time.Millisecond
	DefaultLeaderLeaseTimeout = 500 * time.Millisecond
	DefaultCommitTimeout      = 50 * time.Millisecond
	DefaultSnapshotInterval   = 2 * time.Minute
	DefaultSnapshotThreshold  = 8192
	DefaultTrailingLogs       = 10240
)

// metadataDirName is the directory under Config.Dir that holds the raft log
// and snapshots, named as Kafka names its metadata log partition.
const metadataDirName = "__cluster_metadata-0"

// withDefaults returns cfg with defaults filled in, or an error naming the
// first invalid field.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.NodeID < 0 {
		return cfg, fmt.Errorf("quorum config: node id %d is negative", cfg.NodeID)
	}
	if cfg.Dir == "" {
		return cfg, errors.New("quorum config: no metadata log directory")
	}
	if len(cfg.Voters) == 0 {
		return cfg, errors.New("quorum config: no voters (controller.quorum.voters)")
	}
	seen := map[int32]bool{}
	for _, v := range cfg.Voters {
		if v.ID < 0 || seen[v.ID] || v.Addr == "" {
			return cfg, fmt.Errorf("quorum config: voter %d@%s is repeated, negative or has no address", v.ID, v.Addr)
		}
		seen[v.ID] = true
		if v.ID == cfg.NodeID {
			if cfg.AdvertiseAddr == "" {
				cfg.AdvertiseAddr = v.Addr
			} else if cfg.AdvertiseAddr != v.Addr {
				return cfg, fmt.Errorf("quorum config: node %d advertises %s but the voters list it at %s", cfg.NodeID, cfg.AdvertiseAddr, v.Addr)
			}
		}
	}
	if cfg.Stream == nil && cfg.ListenAddr == "" {
		return cfg, errors.New("quorum config: neither a stream layer nor a listen address")
	}
	if cfg.Stream != nil {
		// raft reports the stream's address as this node's; it must be the
		// one peers dial.
		if sa := cfg.Stream.Addr().String(); cfg.AdvertiseAddr == "" {
			cfg.AdvertiseAddr = sa
		} else if cfg.AdvertiseAddr != sa {
			return cfg, fmt.Errorf("quorum config: advertised address %s differs from the stream layer's %s", cfg.AdvertiseAddr, sa)
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.RaftLogLevel == nil {
		cfg.RaftLogLevel = slog.LevelWarn
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&cfg.HeartbeatTimeout, DefaultHeartbeatTimeout)
	def(&cfg.ElectionTimeout, DefaultElectionTimeout)
	def(&cfg.LeaderLeaseTimeout, min(DefaultLeaderLeaseTimeout, cfg.HeartbeatTimeout))
	def(&cfg.CommitTimeout, DefaultCommitTimeout)
	def(&cfg.SnapshotInterval, DefaultSnapshotInterval)
	if cfg.SnapshotThreshold == 0 {
		cfg.SnapshotThreshold = DefaultSnapshotThreshold
	}
	if cfg.TrailingLogs == 0 && !cfg.NoTrailingLogs {
		cfg.TrailingLogs = DefaultTrailingLogs
	}
	return cfg, nil
}

// isVoter reports whether id is in the static voter set.
func (cfg *Config) isVoter(id int32) bool {
	for _, v := range cfg.Voters {
		if v.ID == id {
			return true
		}
	}
	return false
}

// ParseVoters parses Kafka's controller.quorum.voters syntax:
// "1@host1:9093,2@host2:9093".
func ParseVoters(s string) ([]Voter, error) {
	var out []Voter
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		idStr, addr, ok := strings.Cut(part, "@")
		id, err := strconv.ParseInt(idStr, 10, 32)
		if !ok || err != nil || id < 0 || addr == "" {
			return nil, fmt.Errorf("controller.quorum.voters: %q is not id@host:port", part)
		}
		if _, _, err := splitHostPort(addr); err != nil {
			return nil, fmt.Errorf("controller.quorum.voters: %q: %w", part, err)
		}
		out = append(out, Voter{ID: int32(id), Addr: addr})
	}
	if len(out) == 0 {
		return nil, errors.New("controller.quorum.voters is empty")
	}
	return out, nil
}

func splitHostPort(addr string) (string, int, error) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return "", 0, fmt.Errorf("no port in %q", addr)
	}
	port, err := strconv.Atoi(addr[i+1:])
	if err != nil || port <= 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port in %q", addr)
	}
	return addr[:i], port, nil
}

func serverID(id int32) string { return strconv.Itoa(int(id)) }

// parseServerID turns a raft server id back into a node id.
func parseServerID(s string) (int32, bool) {
	id, err := strconv.ParseInt(s, 10, 32)
	return int32(id), err == nil
}
