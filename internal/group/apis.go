package group

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/coordinator"
	"github.com/kmirror/kmirror/internal/wire"
)

// APIs are the group coordinator's Kafka APIs with the version ranges
// current clients use.
func (c *Coordinator) APIs() []wire.API {
	return []wire.API{
		{Key: kmsg.FindCoordinator.Int16(), MinVersion: 0, MaxVersion: 5, Handle: c.handleFindCoordinator},
		{Key: kmsg.JoinGroup.Int16(), MinVersion: 0, MaxVersion: 9, Handle: c.handleJoinGroup},
		{Key: kmsg.SyncGroup.Int16(), MinVersion: 0, MaxVersion: 5, Handle: c.handleSyncGroup},
		{Key: kmsg.Heartbeat.Int16(), MinVersion: 0, MaxVersion: 4, Handle: c.handleHeartbeat},
		{Key: kmsg.LeaveGroup.Int16(), MinVersion: 0, MaxVersion: 5, Handle: c.handleLeaveGroup},
		{Key: kmsg.OffsetCommit.Int16(), MinVersion: 0, MaxVersion: 9, Handle: c.handleOffsetCommit},
		{Key: kmsg.OffsetFetch.Int16(), MinVersion: 0, MaxVersion: 9, Handle: c.handleOffsetFetch},
		{Key: kmsg.TxnOffsetCommit.Int16(), MinVersion: 0, MaxVersion: 4, Handle: c.handleTxnOffsetCommit},
		{Key: kmsg.DescribeGroups.Int16(), MinVersion: 0, MaxVersion: 5, Handle: c.handleDescribeGroups},
		{Key: kmsg.ListGroups.Int16(), MinVersion: 0, MaxVersion: 5, Handle: c.handleListGroups},
		{Key: kmsg.DeleteGroups.Int16(), MinVersion: 0, MaxVersion: 2, Handle: c.handleDeleteGroups},
		{Key: kmsg.OffsetDelete.Int16(), MinVersion: 0, MaxVersion: 0, Handle: c.handleOffsetDelete},
	}
}

// call runs an operation that answers request id, and returns its reply:
// the reply the operation (or its failed write) gave at once, or the one
// the group gives later (a JoinGroup held for the rebalance). When the
// operation failed without answering, the reply carries the failure in Err
// (mapped by fail); when ctx ends first, call returns ctx's error and the
// reply is dropped.
func (c *Coordinator) call(ctx context.Context, partition int32, fail func(error) Reply, build func(id RequestID) coordinator.Op[*shard]) (Reply, error) {
	id, ch := c.waiters.register()
	defer wire.Waiting(ctx)() // a rebalance is not the request's own work
	err := c.rt.Write(ctx, partition, build(id))
	select {
	case r := <-ch:
		return r, nil
	default:
	}
	if err != nil {
		c.waiters.cancel(id)
		select {
		case r := <-ch:
			return r, nil
		default:
		}
		if ctx.Err() != nil {
			return Reply{}, ctx.Err()
		}
		r := fail(err)
		r.Request = id
		return r, nil
	}
	select {
	case r := <-ch:
		return r, nil
	case <-ctx.Done():
		c.waiters.cancel(id)
		return Reply{}, ctx.Err()
	}
}

// answer is an operation result that only replies.
func (s *shard) answer(r Reply) coordinator.Result {
	return coordinator.Result{Apply: func(int64) { s.c.waiters.deliver(r) }}
}

// groupFailure maps a failed group operation to its reply.
func groupFailure(err error) Reply { return Reply{Err: groupStoreError(err)} }

func millis(ms int32) time.Duration { return time.Duration(ms) * time.Millisecond }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
