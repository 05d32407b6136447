package group

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// kafkaError returns the Kafka error err wraps, UNKNOWN_SERVER_ERROR if
// none. The runtime's own refusals (NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE) come out as
// themselves.
func kafkaError(err error) *kerr.Error {
	if err == nil {
		return nil
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke
	}
	return kerr.UnknownServerError
}

// groupStoreError maps a failed group metadata write to what members are
// told, as Kafka's group coordinator does.
func groupStoreError(err error) *kerr.Error {
	switch ke := kafkaError(err); ke {
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend:
		return kerr.CoordinatorNotAvailable
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError, kerr.FencedLeaderEpoch:
		return kerr.NotCoordinator
	case kerr.RequestTimedOut:
		return kerr.RebalanceInProgress
	case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidFetchSize:
		return kerr.UnknownServerError
	default:
		return ke
	}
}

// offsetStoreError maps a failed offset commit write to the partitions'
// error, as Kafka's group coordinator does.
func offsetStoreError(err error) *kerr.Error {
	switch ke := kafkaError(err); ke {
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut:
		return kerr.CoordinatorNotAvailable
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError, kerr.FencedLeaderEpoch:
		return kerr.NotCoordinator
	case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidFetchSize:
		return kerr.InvalidCommitOffsetSize
	default:
		return ke
	}
}

// errCode is the wire code of err (0 for nil).
func errCode(err *kerr.Error) int16 {
	if err == nil {
		return 0
	}
	return err.Code
}
