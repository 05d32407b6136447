package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/server"
)

func init() {
	addCommand(newServerCommand())
}

// serverFlags are the values of `kmirror server`'s flags.
type serverFlags struct {
	configFile string
	overrides  []string
	nodeID     int32
	listeners  string
	logDirs    string
	clusterID  string
	logLevel   string
}

// newServerCommand builds `kmirror server` with fresh flag state.
func newServerCommand() *cobra.Command {
	f := &serverFlags{}
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run a kmirror node (broker and/or controller)",
		Long: `Run a kmirror node.

With no flags it runs a single-node cluster (broker and controller, node id 1)
serving clients on localhost:9092, its controller on localhost:9093, with data
under ./data. The cluster id is generated on first start and kept in the data
directories' meta.properties.

Settings use Apache Kafka's names (node.id, process.roles, listeners,
controller.quorum.voters, log.dirs, num.partitions, ...). They are read, in
increasing precedence, from the built-in defaults, the --config file,
KMIRROR_* environment variables (KMIRROR_LOG_DIRS sets log.dirs; "__" stands
for "_"), --override key=value, and the dedicated flags below. Unknown keys
are reported as warnings; an invalid value stops the start with a message
naming the key.

The nodes of a multi-node cluster must share one cluster id: give each node
the same --cluster-id on its first start (any 22-character Kafka cluster id,
for example from "kafka-storage random-uuid").

Signals: the first SIGINT or SIGTERM shuts the node down cleanly (controlled
shutdown, clean-shutdown markers, producer snapshots, checkpoints) and exits 0.
A second one exits at once with status 130 (SIGINT) or 143 (SIGTERM); the
next start then recovers the logs as after a crash.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runServer(cmd, f) },
	}
	fs := cmd.Flags()
	fs.StringVarP(&f.configFile, "config", "c", "", "server.properties file to read")
	fs.StringArrayVar(&f.overrides, "override", nil, "set a config, key=value (repeatable); wins over the file and the environment")
	fs.Int32Var(&f.nodeID, "node-id", 0, "node.id")
	fs.StringVar(&f.listeners, "listeners", "", "listeners, e.g. PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093")
	fs.StringVar(&f.logDirs, "log-dirs", "", "log.dirs: comma-separated data directories")
	fs.StringVar(&f.clusterID, "cluster-id", "", "cluster id written to new data directories (needed by every node of a multi-node cluster on first start)")
	fs.StringVar(&f.logLevel, "log-level", "info", "least level logged to stderr: debug, info, warn or error")
	return cmd
}

// overrideMap turns --override and the dedicated flags into config
// overrides; the dedicated flags win over --override.
func (f *serverFlags) overrideMap(cmd *cobra.Command) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range f.overrides {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("--override %q: want key=value", kv)
		}
		out[k] = v
	}
	if cmd.Flags().Changed("node-id") {
		out["node.id"] = strconv.Itoa(int(f.nodeID))
	}
	if cmd.Flags().Changed("listeners") {
		out["listeners"] = f.listeners
	}
	if cmd.Flags().Changed("log-dirs") {
		out["log.dirs"] = f.logDirs
	}
	return out, nil
}

func parseLogLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("invalid --log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

// runServer loads the configuration, starts the node, prints one line when
// it serves, and shuts it down on the first signal (or when the command's
// context ends).
func runServer(cmd *cobra.Command, f *serverFlags) error {
	level, err := parseLogLevel(f.logLevel)
	if err != nil {
		return err
	}
	overrides, err := f.overrideMap(cmd)
	if err != nil {
		return err
	}
	cfg, warnings, err := config.Load(f.configFile, os.Environ(), overrides)
	if err != nil {
		return fmt.Errorf("invalid configuration: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
	for _, w := range warnings {
		logger.Warn("configuration: " + w)
	}
	var opts []server.Option
	if f.clusterID != "" {
		opts = append(opts, server.WithClusterID(f.clusterID))
	}
	node, err := server.New(cfg, logger, opts...)
	if err != nil {
		return err
	}

	ctx, stop := context.WithCancel(cmd.Context())
	defer stop()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go watchSignals(sigs, done, stop, logger)

	if err := node.Start(ctx); err != nil {
		if cmd.Context().Err() == nil && ctx.Err() != nil {
			return errors.New("start interrupted by a signal")
		}
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "kmirror node %d ready: cluster id %s, listeners %s\n",
		node.NodeID(), node.ClusterID(), strings.Join(boundListeners(node, cfg), ", "))

	<-ctx.Done()
	return node.Shutdown(context.Background())
}

// watchSignals turns the first SIGINT/SIGTERM into a graceful shutdown
// (stop) and a second one into an immediate exit, 128 + the signal number as
// shells report it.
func watchSignals(sigs <-chan os.Signal, done <-chan struct{}, stop func(), logger *slog.Logger) {
	select {
	case s := <-sigs:
		logger.Info("signal received, shutting down; send it again to exit at once", "signal", s.String())
		stop()
	case <-done:
		return
	}
	select {
	case s := <-sigs:
		code := 1
		if sig, ok := s.(syscall.Signal); ok {
			code = 128 + int(sig)
		}
		logger.Warn("second signal, exiting at once", "signal", s.String(), "exit_status", code)
		os.Exit(code)
	case <-done:
	}
}

// boundListeners names each listener with its bound address.
func boundListeners(node *server.Node, cfg *config.Config) []string {
	var out []string
	for _, l := range cfg.Listeners {
		addr := l.Address()
		if a := node.Addr(l.Name); a != nil {
			addr = a.String()
		}
		out = append(out, l.Name+"://"+addr)
	}
	return out
}
