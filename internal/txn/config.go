package txn

import (
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/coordinator"
)

// TransactionStateTopic is Kafka's internal topic of transaction metadata.
const TransactionStateTopic = "__transaction_state"

// OffsetsTopic is the group coordinator's topic, whose partitions
// AddOffsetsToTxn adds to transactions.
const OffsetsTopic = "__consumer_offsets"

// Config configures the transaction coordinator. Field comments name the
// Kafka setting each one is.
type Config struct {
	// NodeID is this node's id (node.id): partitions whose leader it is get
	// their markers by a direct call.
	NodeID int32
	// InterBrokerListener is the listener name (inter.broker.listener.name)
	// markers and verification requests are sent to on other brokers.
	InterBrokerListener string

	TopicPartitions          int32         // transaction.state.log.num.partitions
	TopicReplicationFactor   int16         // transaction.state.log.replication.factor
	TopicMinISR              int32         // transaction.state.log.min.isr
	TopicSegmentBytes        int32         // transaction.state.log.segment.bytes
	LoadBufferSize           int           // transaction.state.log.load.buffer.size
	MaxTimeout               time.Duration // transaction.max.timeout.ms
	IDExpiration             time.Duration // transactional.id.expiration.ms
	AbortTimedOutInterval    time.Duration // transaction.abort.timed.out.transaction.cleanup.interval.ms
	RemoveExpiredIDsInterval time.Duration // transaction.remove.expired.transaction.cleanup.interval.ms
	// RequestTimeout (request.timeout.ms) bounds one WriteTxnMarkers or
	// verification request to another broker, and a write to
	// __transaction_state.
	RequestTimeout time.Duration
	// MarkerRetryBackoff is the pause before markers that failed with a
	// retriable error are sent again (Kafka retries at once on the next
	// poll; a short pause avoids spinning while a leader moves).
	MarkerRetryBackoff time.Duration

	// Clock and Logger default to the wall clock and slog.Default().
	Clock  coordinator.Clock
	Logger *slog.Logger
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		NodeID:                   -1,
		InterBrokerListener:      "PLAINTEXT",
		TopicPartitions:          50,
		TopicReplicationFactor:   3,
		TopicMinISR:              2,
		TopicSegmentBytes:        100 << 20,
		LoadBufferSize:           5 << 20,
		MaxTimeout:               15 * time.Minute,
		IDExpiration:             7 * 24 * time.Hour,
		AbortTimedOutInterval:    10 * time.Second,
		RemoveExpiredIDsInterval: time.Hour,
		RequestTimeout:           30 * time.Second,
		MarkerRetryBackoff:       100 * time.Millisecond,
	}
}

// FromBrokerConfig returns the coordinator's settings from the node's
// validated configuration (Kafka's defaults for what it does not carry:
// request.timeout.ms and transaction.state.log.load.buffer.size).
func FromBrokerConfig(bc *config.Config) Config {
	c := DefaultConfig()
	c.NodeID = bc.NodeID
	if bc.InterBrokerListenerName != "" {
		c.InterBrokerListener = bc.InterBrokerListenerName
	}
	c.TopicPartitions = bc.TransactionStateLogNumPartitions
	c.TopicReplicationFactor = bc.TransactionStateLogReplicationFactor
	c.TopicMinISR = bc.TransactionStateLogMinISR
	c.TopicSegmentBytes = bc.TransactionStateLogSegmentBytes
	c.MaxTimeout = time.Duration(bc.TransactionMaxTimeoutMs) * time.Millisecond
	c.IDExpiration = time.Duration(bc.TransactionalIDExpirationMs) * time.Millisecond
	c.AbortTimedOutInterval = time.Duration(bc.TransactionAbortTimedOutCleanupIntervalMs) * time.Millisecond
	c.RemoveExpiredIDsInterval = time.Duration(bc.TransactionRemoveExpiredCleanupIntervalMs) * time.Millisecond
	return c
}

// ConfigFromProperties returns the defaults overridden by the settings in
// props the transaction coordinator knows (Kafka's names, including node.id,
// inter.broker.listener.name and request.timeout.ms); other keys are
// ignored. A value that does not parse or is out of range is an error naming
// the key.
func ConfigFromProperties(props map[string]string) (Config, error) {
	c := DefaultConfig()
	ms := func(d *time.Duration) func(int64) {
		return func(v int64) { *d = time.Duration(v) * time.Millisecond }
	}
	type setter struct {
		min, max int64
		set      func(int64)
	}
	setters := map[string]setter{
		"node.id":                                                     {0, math.MaxInt32, func(v int64) { c.NodeID = int32(v) }},
		"transaction.state.log.num.partitions":                        {1, math.MaxInt32, func(v int64) { c.TopicPartitions = int32(v) }},
		"transaction.state.log.replication.factor":                    {1, math.MaxInt16, func(v int64) { c.TopicReplicationFactor = int16(v) }},
		"transaction.state.log.min.isr":                               {1, math.MaxInt32, func(v int64) { c.TopicMinISR = int32(v) }},
		"transaction.state.log.segment.bytes":                         {1, math.MaxInt32, func(v int64) { c.TopicSegmentBytes = int32(v) }},
		"transaction.state.log.load.buffer.size":                      {1, math.MaxInt32, func(v int64) { c.LoadBufferSize = int(v) }},
		"transaction.max.timeout.ms":                                  {1, math.MaxInt32, ms(&c.MaxTimeout)},
		"transactional.id.expiration.ms":                              {1, math.MaxInt32, ms(&c.IDExpiration)},
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": {1, math.MaxInt32, ms(&c.AbortTimedOutInterval)},
		"transaction.remove.expired.transaction.cleanup.interval.ms":  {1, math.MaxInt32, ms(&c.RemoveExpiredIDsInterval)},
		"request.timeout.ms":                                          {1, math.MaxInt32, ms(&c.RequestTimeout)},
	}
	for k, s := range setters {
		raw, ok := props[k]
		if !ok {
			continue
		}
		v, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return Config{}, fmt.Errorf("%s: %q is not an integer", k, raw)
		}
		if v < s.min || v > s.max {
			return Config{}, fmt.Errorf("%s: %d is out of range", k, v)
		}
		s.set(v)
	}
	if l, ok := props["inter.broker.listener.name"]; ok && l != "" {
		c.InterBrokerListener = l
	} else if p, ok := props["security.inter.broker.protocol"]; ok && p != "" {
		c.InterBrokerListener = p
	}
	return c, nil
}

// maxTimeoutMs is MaxTimeout in milliseconds, as InitProducerId checks it.
func (c *Config) maxTimeoutMs() int32 {
	return int32(min(c.MaxTimeout.Milliseconds(), math.MaxInt32))
}

// topicConfigs are the configs __transaction_state is created with, as
// Kafka creates it: compacted, uncompressed, min.insync.replicas from
// transaction.state.log.min.isr, no unclean leader election.
func (c *Config) topicConfigs() map[string]string {
	return map[string]string{
		"cleanup.policy":                 "compact",
		"compression.type":               "uncompressed",
		"min.insync.replicas":            strconv.FormatInt(int64(c.TopicMinISR), 10),
		"segment.bytes":                  strconv.FormatInt(int64(c.TopicSegmentBytes), 10),
		"unclean.leader.election.enable": "false",
	}
}
