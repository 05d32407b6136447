package coordinator

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Errors of the runtime, wrapping Kafka's codes.
var (
	// ErrNotCoordinator: this node does not lead the partition.
	ErrNotCoordinator = fmt.Errorf("coordinator: partition not led here: %w", kerr.NotCoordinator)
	// ErrLoading: the partition is being loaded.
	ErrLoading = fmt.Errorf("coordinator: partition is loading: %w", kerr.CoordinatorLoadInProgress)
	// ErrNotAvailable: the partition could not be loaded.
	ErrNotAvailable = fmt.Errorf("coordinator: partition failed to load: %w", kerr.CoordinatorNotAvailable)
)

// appendOutcome classifies an append failure.
type appendOutcome int8

const (
	// refused: nothing was written; the shard state stays valid.
	refused appendOutcome = iota
	// fenced: leadership moved; nothing was written and the shard must stop
	// serving until the host tells it what happened.
	fenced
	// unknown: the batch may or may not be in the log: reload.
	unknown
)

// classifyAppendError decides what an append failure means for the shard.
func classifyAppendError(err error) appendOutcome {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		switch ke {
		case kerr.NotLeaderForPartition, kerr.FencedLeaderEpoch, kerr.UnknownTopicOrPartition:
			return fenced
		case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.CorruptMessage, kerr.InvalidRecord,
			kerr.NotEnoughReplicas, kerr.InvalidProducerEpoch, kerr.ProducerFenced,
			kerr.InvalidProducerIDMapping, kerr.InvalidTxnState, kerr.TransactionCoordinatorFenced,
			kerr.InvalidTimestamp:
			return refused
		}
	}
	return unknown
}

// timeoutError makes a context error look like Kafka's REQUEST_TIMED_OUT.
func timeoutError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("%w: %w", err, kerr.RequestTimedOut)
	}
	return err
}
