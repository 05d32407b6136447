package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/server"
	"github.com/kmirror/kmirror/internal/storage"
)

// node is an in-process single-node kmirror cluster (broker and controller
// roles), configured as `kmirror server` is by default except for the
// addresses, one-replica internal topics and the extra properties it was
// started with.
type node struct {
	name string
	srv  *server.Node
	addr string
	dir  string
}

// startNode starts a node with its data under dir and returns once it
// serves clients.
func startNode(name, dir string, extra map[string]string, logger *slog.Logger) (*node, error) {
	kafka, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ctrl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		kafka.Close()
		return nil, err
	}
	props := map[string]string{
		"node.id":                   "1",
		"process.roles":             "broker,controller",
		"listeners":                 "PLAINTEXT://" + kafka.Addr().String() + ",CONTROLLER://" + ctrl.Addr().String(),
		"controller.listener.names": "CONTROLLER",
		"controller.quorum.voters":  "1@" + ctrl.Addr().String(),
		"log.dirs":                  filepath.Join(dir, "data"),
		// One node: the internal topics cannot have more replicas.
		"offsets.topic.replication.factor":         "1",
		"transaction.state.log.replication.factor": "1",
		"transaction.state.log.min.isr":            "1",
		"mirror.state.topic.replication.factor":    "1",
	}
	maps.Copy(props, extra)
	cfg, warnings, err := config.Load("", nil, props)
	if err != nil {
		kafka.Close()
		ctrl.Close()
		return nil, fmt.Errorf("%s config: %w", name, err)
	}
	for _, w := range warnings {
		logger.Warn("config", "node", name, "warning", w)
	}
	srv, err := server.New(cfg, logger.With("node", name),
		server.WithListener("PLAINTEXT", kafka), server.WithListener("CONTROLLER", ctrl))
	if err != nil {
		kafka.Close()
		ctrl.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("start %s: %w", name, err), srv.Shutdown(context.Background()))
	}
	return &node{name: name, srv: srv, addr: kafka.Addr().String(), dir: dir}, nil
}

// close stops the node and removes its data.
func (n *node) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := n.srv.Shutdown(ctx)
	return errors.Join(err, os.RemoveAll(n.dir))
}

// logEnd returns the log end offset of the node's replica of a partition,
// -1 if it has none yet.
func (n *node) logEnd(topic string, partition int32) int64 {
	p, ok := n.srv.Broker().Replicas().Partition(storage.TopicPartition{Topic: topic, Partition: partition})
	if !ok || p.Log() == nil {
		return -1
	}
	return p.Log().LogEndOffset()
}

// logSize returns the bytes on disk of the node's replicas of topic.
func (n *node) logSize(topic string, partitions int32) int64 {
	var size int64
	for q := range partitions {
		if p, ok := n.srv.Broker().Replicas().Partition(storage.TopicPartition{Topic: topic, Partition: q}); ok && p.Log() != nil {
			size += p.Log().Size()
		}
	}
	return size
}

// waitCaughtUp polls until every partition of topic on n reaches the log
// end offsets in ends.
func (n *node) waitCaughtUp(ctx context.Context, topic string, ends []int64) error {
	for {
		done := true
		for q, end := range ends {
			if n.logEnd(topic, int32(q)) < end {
				done = false
				break
			}
		}
		if done {
			return nil
		}
		t := time.NewTimer(2 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s did not catch up with %v: %w", n.name, ends, ctx.Err())
		case <-t.C:
		}
	}
}
