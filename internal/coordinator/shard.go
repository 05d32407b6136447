package coordinator

import (
	"log/slog"
)

// Record is a record a coordinator writes: a key and a value; a nil Value is
// a tombstone (compaction removes the key).
type Record struct {
	Key, Value []byte
}

// LoggedRecord is a record read back from the log during load.
type LoggedRecord struct {
	Offset        int64
	Timestamp     int64 // milliseconds
	ProducerID    int64 // -1 unless written for a producer
	ProducerEpoch int16
	// Transactional records take effect only when their producer's COMMIT
	// marker follows (and never after an ABORT).
	Transactional bool
	Key, Value    []byte
}

// Marker is a transaction marker: the end of a producer's transaction in
// this partition.
type Marker struct {
	ProducerID       int64
	ProducerEpoch    int16
	CoordinatorEpoch int32
	Commit           bool // false: abort
}

// Producer makes a write transactional: its records belong to the
// producer's ongoing transaction and count only once a COMMIT marker
// follows.
type Producer struct {
	ID    int64
	Epoch int16
}

// Shard is a coordinator's state for one partition. The runtime calls its
// methods only from the shard's goroutine.
type Shard interface {
	// Replay applies one record read from the log while loading. An error
	// means the record is malformed: the runtime logs it with its offset,
	// skips it and goes on, so one bad record does not lose the rest.
	Replay(r LoggedRecord) error
	// ReplayMarker applies a transaction marker read from the log while
	// loading, at offset.
	ReplayMarker(offset int64, m Marker) error
	// Loaded is called once the partition is replayed, before the first
	// operation; the shard may schedule timers.
	Loaded()
	// Unloaded is called when the shard is dropped (leadership lost,
	// reload, shutdown), after its timers are stopped; the shard fails
	// whatever it still holds with NOT_COORDINATOR.
	Unloaded()
}

// ShardContext is what a new shard gets from the runtime.
type ShardContext[S Shard] struct {
	Topic       string
	Partition   int32
	LeaderEpoch int32
	// Timers schedules operations on the shard; usable from the shard's
	// goroutine only (its methods and operations).
	Timers *Timers[S]
	Clock  Clock
	Logger *slog.Logger
}

// Result is what a write operation decided.
type Result struct {
	// Records are appended as one batch; none means nothing is written
	// (Apply runs at once).
	Records []Record
	// Producer, if set, makes the batch transactional for that producer.
	Producer *Producer
	// Marker, if set, writes this transaction marker instead of Records.
	Marker *Marker
	// Apply runs on the shard's goroutine once the batch is committed (with
	// its base offset; -1 when nothing was written). It is where the
	// operation changes the shard's state and answers its callers.
	Apply func(baseOffset int64)
	// OnError, if set, runs on the shard's goroutine when the append failed
	// without writing anything; the state is still as before the operation.
	OnError func(err error)
}

// Op is an operation on a shard, run on the shard's goroutine. It reads the
// shard and returns what to write and what to do after; it must not change
// the shard itself (that is Apply's job), so that a failed write leaves the
// state untouched.
type Op[S Shard] func(s S) (Result, error)
