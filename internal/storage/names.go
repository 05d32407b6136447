package storage

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// File names and suffixes of a partition directory and of a log directory,
// as Kafka names them.
const (
	LogFileSuffix       = ".log"
	IndexFileSuffix     = ".index"
	TimeIndexFileSuffix = ".timeindex"
	TxnIndexFileSuffix  = ".txnindex"

	// DeletedFileSuffix marks a file of a segment removed from its log: it is
	// unlinked after file.delete.delay.ms, and at start-up.
	DeletedFileSuffix = ".deleted"
	// CleanedFileSuffix marks a replacement segment being written by the
	// cleaner; an unfinished one is deleted at start-up.
	CleanedFileSuffix = ".cleaned"
	// SwapFileSuffix marks a complete replacement segment whose swap-in may
	// have been interrupted; start-up completes the swap.
	SwapFileSuffix = ".swap"

	LeaderEpochCheckpointFileName = "leader-epoch-checkpoint"
	PartitionMetadataFileName     = "partition.metadata"

	RecoveryPointCheckpointFileName     = "recovery-point-offset-checkpoint"
	LogStartOffsetCheckpointFileName    = "log-start-offset-checkpoint"
	ReplicationOffsetCheckpointFileName = "replication-offset-checkpoint"
	MetaPropertiesFileName              = "meta.properties"
	CleanShutdownFileName               = ".kafka_cleanshutdown"
	LockFileName                        = ".lock"

	// DeleteDirSuffix ends the name of a partition directory being deleted:
	// <topic>-<partition>.<uuid>-delete.
	DeleteDirSuffix = "-delete"
	// FutureDirSuffix and StrayDirSuffix end the names of directories of
	// future replicas (a move between log dirs) and of stray partitions; the
	// Manager leaves them alone.
	FutureDirSuffix = "-future"
	StrayDirSuffix  = "-stray"

	// MetadataTopic is the metadata log's name: its directory
	// (__cluster_metadata-0, in the first log dir by default) belongs to the
	// quorum, not to the Manager, which leaves it alone.
	MetadataTopic = "__cluster_metadata"
)

// tmpFileSuffix marks a file being written by writeFileAtomic.
const tmpFileSuffix = ".tmp"

// offsetFileName is the 20-digit zero-padded name Kafka gives a file of the
// segment (or snapshot) at offset.
func offsetFileName(offset int64) string {
	return fmt.Sprintf("%020d", offset)
}

// segmentPath returns the path of the file with the given suffix of the
// segment at base in dir.
func segmentPath(dir string, base int64, suffix string) string {
	return filepath.Join(dir, offsetFileName(base)+suffix)
}

// parseOffsetFileName returns the base offset of a segment file name such as
// 00000000000000000042.log, given the expected suffix (which may be compound,
// like ".log.swap").
func parseOffsetFileName(name, suffix string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, suffix)
	if !ok || len(digits) != 20 {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	off, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, false
	}
	return off, true
}
