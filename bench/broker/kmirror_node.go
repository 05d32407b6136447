package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/server"
)

// kmirrorTarget is an in-process single-node kmirror (broker and controller
// roles) with its data in its own directory, configured as `kmirror server`
// is by default except for the addresses.
type kmirrorTarget struct {
	node *server.Node
	addr string
	dir  string
}

// startKmirror starts the node with its data under dir and returns once it
// serves clients.
func startKmirror(dir string, logger *slog.Logger) (target, error) {
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
		// No metrics listener: its default port would collide between
		// the runs' nodes and with any node already on the machine.
		"metrics.listener": "",
	}
	cfg, warnings, err := config.Load("", nil, props)
	if err != nil {
		kafka.Close()
		ctrl.Close()
		return nil, fmt.Errorf("kmirror config: %w", err)
	}
	for _, w := range warnings {
		logger.Warn("kmirror config", "warning", w)
	}
	node, err := server.New(cfg, logger.With("node", "kmirror"),
		server.WithListener("PLAINTEXT", kafka), server.WithListener("CONTROLLER", ctrl))
	if err != nil {
		kafka.Close()
		ctrl.Close()
		return nil, fmt.Errorf("kmirror node: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := node.Start(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("start kmirror: %w", err), node.Shutdown(context.Background()))
	}
	return &kmirrorTarget{node: node, addr: kafka.Addr().String(), dir: dir}, nil
}

func (k *kmirrorTarget) bootstrap() string { return k.addr }

func (k *kmirrorTarget) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := k.node.Shutdown(ctx)
	return errors.Join(err, os.RemoveAll(k.dir))
}
