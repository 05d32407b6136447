package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/wire"
	"github.com/kmirror/kmirror/pkg/mirroradmin"
)

func init() {
	addCommand(newMirrorCommand())
}

// mirrorFlags are the flags shared by every `kmirror mirror` subcommand.
type mirrorFlags struct {
	clientFlags
	timeout time.Duration
}

// run connects a mirror admin client to the destination cluster, bounds fn
// by --timeout and closes the client.
func (f *mirrorFlags) run(cmd *cobra.Command, fn func(ctx context.Context, adm *mirroradmin.Client, format outputFormat) error) error {
	adm, format, err := f.connect()
	if err != nil {
		return err
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	return f.explain(fn(ctx, adm, format), f.timeout)
}

// runWatch runs describe --watch: without an overall deadline, until the
// command's context ends or Ctrl-C, which ends it normally.
func (f *mirrorFlags) runWatch(cmd *cobra.Command, name string, interval time.Duration) error {
	adm, format, err := f.connect()
	if err != nil {
		return err
	}
	defer adm.Close()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return f.watch(ctx, adm, name, interval, format, cmd.OutOrStdout())
}

// connect validates the shared flags and returns a mirror admin client on
// the destination cluster, which the caller closes.
func (f *mirrorFlags) connect() (*mirroradmin.Client, outputFormat, error) {
	format, err := f.format()
	if err != nil {
		return nil, "", err
	}
	if f.timeout <= 0 {
		return nil, "", fmt.Errorf("invalid --timeout %s: must be positive", f.timeout)
	}
	seeds, err := f.seeds()
	if err != nil {
		return nil, "", err
	}
	sec, err := f.securityOpts()
	if err != nil {
		return nil, "", err
	}
	adm, err := mirroradmin.NewFromAddrs(seeds, sec...)
	if err != nil {
		return nil, "", fmt.Errorf("create client: %w", err)
	}
	adm.SetTimeoutMillis(int32(f.timeout.Milliseconds()))
	return adm, format, nil
}

// newMirrorCommand builds `kmirror mirror` and its subcommands with fresh
// flag state.
func newMirrorCommand() *cobra.Command {
	f := &mirrorFlags{}
	cmd := &cobra.Command{
		Use:   "mirror",
		Short: "Create and manage cluster mirrors (this cluster copies topics from a source cluster)",
		Long: `A mirror links this cluster (the destination, --bootstrap-server) to a source
cluster. Topics added to a mirror become read-only, offset-preserving copies of
the source's topics; removing them from the mirror fails them over (makes them
writable here).`,
		Args: cobra.NoArgs,
	}
	f.register(cmd, true)
	cmd.PersistentFlags().DurationVar(&f.timeout, "timeout", defaultAdminTimeout,
		"how long to wait for the cluster to answer")
	cmd.AddCommand(
		newMirrorCreateCommand(f),
		newMirrorTopicsCommand(f, "add-topics", "Add topics to a mirror (creating them from the source's if needed)", "added",
			(*mirroradmin.Client).AddTopics),
		newMirrorTopicsCommand(f, "pause-topics", "Pause mirroring of topics", "paused", (*mirroradmin.Client).PauseTopics),
		newMirrorTopicsCommand(f, "resume-topics", "Resume mirroring of paused topics", "resumed", (*mirroradmin.Client).ResumeTopics),
		withFailoverDryRun(f, newMirrorTopicsCommand(f, "remove-topics", "Remove topics from a mirror: fail them over (they become writable here)", "removed",
			(*mirroradmin.Client).RemoveTopics)),
		newMirrorAlterConfigCommand(f),
		newMirrorDeleteCommand(f),
		newMirrorListCommand(f),
		newMirrorDescribeCommand(f),
		newMirrorWaitCommand(f),
	)
	return cmd
}

// sourceConfigs merges the source properties of `mirror create`: the file
// first, then each --source-config, then --source-bootstrap, later ones
// winning.
func sourceConfigs(bootstrap string, pairs []string, file string) (map[string]string, error) {
	out := map[string]string{}
	if file != "" {
		text, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--source-config-file: %w", err)
		}
		props, err := config.ParseProperties(string(text))
		if err != nil {
			return nil, fmt.Errorf("--source-config-file %s: %w", file, err)
		}
		for _, p := range props {
			out[p.Key] = p.Value
		}
	}
	given, err := parseConfigPairs("source-config", pairs)
	if err != nil {
		return nil, err
	}
	for k, v := range given {
		out[k] = *v
	}
	if bootstrap != "" {
		out["bootstrap.servers"] = bootstrap
	}
	if strings.TrimSpace(out["bootstrap.servers"]) == "" {
		return nil, errors.New("--source-bootstrap is required (or bootstrap.servers in --source-config or --source-config-file)")
	}
	return out, nil
}

// mirrorResult is one mirror's line in create and delete output. It never
// holds property values: some are secrets.
type mirrorResult struct {
	Name   string `json:"name"`
	Source string `json:"source_bootstrap_servers,omitempty"`
	Status string `json:"status"`
}

func newMirrorCreateCommand(f *mirrorFlags) *cobra.Command {
	var (
		bootstrap string
		pairs     []string
		file      string
	)
	cmd := &cobra.Command{
		Use:   "create NAME --source-bootstrap HOST:PORT[,...]",
		Short: "Create a mirror of a source cluster",
		Long: `Create a mirror named NAME whose source cluster is reached with the given Kafka
client properties: --source-bootstrap sets bootstrap.servers; --source-config
KEY=VALUE (repeatable) and --source-config-file (a properties file) set others,
such as client.id or security settings. Secret values are stored but never
shown again.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			props, err := sourceConfigs(bootstrap, pairs, file)
			if err != nil {
				return err
			}
			return f.run(cmd, func(ctx context.Context, adm *mirroradmin.Client, format outputFormat) error {
				if err := adm.CreateMirror(ctx, name, props); err != nil {
					return fmt.Errorf("create mirror %s: %w", name, err)
				}
				return printMirrorResult(cmd.OutOrStdout(), format, mirrorResult{Name: name, Source: props["bootstrap.servers"], Status: "created"})
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&bootstrap, "source-bootstrap", "", "the source cluster's brokers, host:port[,host:port...]")
	fs.StringArrayVar(&pairs, "source-config", nil, "source client property key=value (repeatable)")
	fs.StringVar(&file, "source-config-file", "", "properties file of source client properties")
	return cmd
}

func printMirrorResult(w io.Writer, format outputFormat, r mirrorResult) error {
	if format == formatJSON {
		return writeJSON(w, r)
	}
	header, row := []string{"MIRROR", "STATUS"}, []string{tableCell(r.Name), r.Status}
	if r.Source != "" {
		header = []string{"MIRROR", "SOURCE", "STATUS"}
		row = []string{tableCell(r.Name), tableCell(r.Source), r.Status}
	}
	return writeTable(w, header, [][]string{row})
}

// topicOutcome is one topic's line in the output of the topic commands.
type topicOutcome struct {
	Topic string `json:"topic"`
	ID    string `json:"id,omitempty"`
	Error string `json:"error,omitempty"`
}

// topicsOp is one of the mirroradmin membership methods.
type topicsOp func(c *mirroradmin.Client, ctx context.Context, mirror string, topics ...string) (mirroradmin.TopicResults, error)

func newMirrorTopicsCommand(f *mirrorFlags, use, short, done string, op topicsOp) *cobra.Command {
	var (
		wait     bool
		interval time.Duration
	)
	target := waitStates[use]
	cmd := &cobra.Command{
		Use:   use + " NAME TOPIC...",
		Short: short,
		Long: short + `.

With --wait the command then waits until every partition of the topics is
` + target.String() + `, showing progress on stderr; --timeout bounds the
request and the wait together.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, topics := args[0], dedupe(args[1:])
			return f.run(cmd, func(ctx context.Context, adm *mirroradmin.Client, format outputFormat) error {
				rs, err := op(adm, ctx, name, topics...)
				if err != nil && len(rs) == 0 {
					return fmt.Errorf("%s %s: %w", use, name, err)
				}
				outcomes := make([]topicOutcome, 0, len(rs))
				failed := 0
				for _, r := range rs {
					o := topicOutcome{Topic: r.Topic}
					if !r.ID.IsZero() {
						o.ID = r.ID.String()
					}
					if r.Err != nil {
						o.Error = r.Err.Error()
						failed++
					}
					outcomes = append(outcomes, o)
				}
				out := cmd.OutOrStdout()
				if format == formatJSON {
					if werr := writeJSON(out, outcomes); werr != nil {
						return werr
					}
				} else {
					rows := make([][]string, 0, len(outcomes))
					for _, o := range outcomes {
						result := done
						if o.Error != "" {
							result = "error: " + tableCell(o.Error)
						}
						rows = append(rows, []string{tableCell(o.Topic), o.ID, result})
					}
					if werr := writeTable(out, []string{"TOPIC", "ID", "RESULT"}, rows); werr != nil {
						return werr
					}
				}
				if err != nil {
					return fmt.Errorf("%s %s: %w", use, name, err)
				}
				if failed > 0 {
					return fmt.Errorf("%s %s: %d of %d topics failed", use, name, failed, len(outcomes))
				}
				if !wait {
					return nil
				}
				return f.waitForState(ctx, adm, name, topics, target, interval, cmd.ErrOrStderr())
			})
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until every partition of the topics is "+target.String())
	cmd.Flags().DurationVar(&interval, "interval", defaultWatchInterval, "with --wait, how often to ask the cluster")
	return cmd
}

func newMirrorDeleteCommand(f *mirrorFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a mirror (all its topics must have been removed and failed over)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			return f.run(cmd, func(ctx context.Context, adm *mirroradmin.Client, format outputFormat) error {
				if err := adm.DeleteMirror(ctx, name); err != nil {
					return fmt.Errorf("delete mirror %s: %w", name, err)
				}
				return printMirrorResult(cmd.OutOrStdout(), format, mirrorResult{Name: name, Status: "deleted"})
			})
		},
	}
}

func newMirrorListCommand(f *mirrorFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the mirrors of the cluster",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd, func(ctx context.Context, adm *mirroradmin.Client, format outputFormat) error {
				ls, err := adm.ListMirrors(ctx)
				if err != nil {
					return fmt.Errorf("list mirrors: %w", err)
				}
				out := cmd.OutOrStdout()
				if format == formatJSON {
					if ls == nil {
						ls = mirroradmin.MirrorListings{}
					}
					return writeJSON(out, ls)
				}
				rows := make([][]string, 0, len(ls))
				for _, l := range ls {
					rows = append(rows, []string{tableCell(l.Name), tableCell(l.SourceBootstrapServers), strconv.Itoa(l.TopicCount)})
				}
				return writeTable(out, []string{"MIRROR", "SOURCE", "TOPICS"}, rows)
			})
		},
	}
}

func newMirrorDescribeCommand(f *mirrorFlags) *cobra.Command {
	var (
		watch    bool
		interval time.Duration
	)
	cmd := &cobra.Command{
		Use:   "describe NAME",
		Short: "Describe a mirror: its source properties (secrets hidden) and the state of every mirrored partition",
		Long: `Describe a mirror: its source properties (secrets hidden), the state of every
mirrored partition and its syncs, once.

With --watch, a live table of the partitions instead, refreshed every
--interval until Ctrl-C: state, leader, the source's high watermark, this
cluster's log end, lag, the copy rate, the estimated time behind the source,
the age of the last fetch and the last error, under a summary line such as
"12/12 partitions mirroring, max lag 40 records, 0.2 s behind". On a terminal
the table is redrawn in place; otherwise the frames follow each other (with
-o json, one JSON object per line). The rate and the time behind are
derived from successive samples: BEHIND is how long ago the source had the
first record this cluster lacks, interpolated between the samples' source
high watermarks; ">" marks a lower bound (the partition was already behind
when the watch started). --timeout bounds each request.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if watch {
				if interval <= 0 {
					return fmt.Errorf("invalid --interval %s: must be positive", interval)
				}
				return f.runWatch(cmd, name, interval)
			}
			return f.run(cmd, func(ctx context.Context, adm *mirroradmin.Client, format outputFormat) error {
				ms, err := adm.DescribeMirrors(ctx, name)
				if err != nil {
					return fmt.Errorf("describe mirror %s: %w", name, err)
				}
				m, ok := ms.On(name)
				if !ok {
					return fmt.Errorf("describe mirror %s: the cluster did not describe it", name)
				}
				if m.Err != nil {
					return fmt.Errorf("describe mirror %s: %w", name, m.Err)
				}
				return printMirror(cmd.OutOrStdout(), format, m)
			})
		},
	}
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "refresh a live table of the partitions until Ctrl-C")
	cmd.Flags().DurationVar(&interval, "interval", defaultWatchInterval, "with --watch, how often to refresh")
	return cmd
}

// hiddenValue stands for a secret's value in describe output.
const hiddenValue = "(sensitive)"

// printMirror renders a mirror's description: its properties, the state of
// every partition, and its syncs.
func printMirror(w io.Writer, format outputFormat, m mirroradmin.Mirror) error {
	if format == formatJSON {
		if m.Configs == nil {
			m.Configs = []mirroradmin.Config{}
		}
		if m.Topics == nil {
			m.Topics = []mirroradmin.MirrorTopic{}
		}
		if m.Syncs == nil {
			m.Syncs = []mirroradmin.Sync{}
		}
		return writeJSON(w, m)
	}
	fmt.Fprintf(w, "Mirror: %s\n\n", tableCell(m.Name))
	rows := make([][]string, 0, len(m.Configs))
	for _, c := range m.Configs {
		v := "null"
		switch {
		case c.Sensitive:
			v = hiddenValue
		case c.Value != nil:
			v = tableCell(*c.Value)
		}
		rows = append(rows, []string{tableCell(c.Name), v})
	}
	if err := writeTable(w, []string{"PROPERTY", "VALUE"}, rows); err != nil {
		return err
	}
	fmt.Fprintln(w)
	rows = rows[:0]
	for _, t := range m.Topics {
		if len(t.Partitions) == 0 {
			rows = append(rows, []string{tableCell(t.Name), "-", membership(t), "-", "-", "-", "-", "-", ""})
		}
		for _, p := range t.Partitions {
			rows = append(rows, []string{tableCell(t.Name), strconv.Itoa(int(p.Partition)), p.State.String(), strconv.Itoa(int(p.LeaderID)),
				offset(p.SourceHighWatermark), offset(p.DestinationLogEndOffset), offset(p.Lag), when(p.LastFetch), tableCell(p.LastError)})
		}
	}
	if err := writeTable(w, []string{"TOPIC", "PARTITION", "STATE", "LEADER", "SOURCE-HW", "LOG-END", "LAG", "LAST-FETCH", "LAST-ERROR"}, rows); err != nil {
		return err
	}
	if len(m.Syncs) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	rows = rows[:0]
	for _, s := range m.Syncs {
		rows = append(rows, []string{tableCell(s.Kind), when(s.LastSuccess), tableCell(s.LastError)})
	}
	return writeTable(w, []string{"SYNC", "LAST-SUCCESS", "LAST-ERROR"}, rows)
}

// membership names a topic's standing from its mirror.name when no
// partition detail is known.
func membership(t mirroradmin.MirrorTopic) string {
	_, m := wire.ParseMirrorName(t.MirrorNameConfig)
	return m.String()
}

// offset prints an offset or lag, "-" when unknown (-1).
func offset(v int64) string {
	if v < 0 {
		return "-"
	}
	return strconv.FormatInt(v, 10)
}

// when prints a time in UTC RFC 3339, "-" for never.
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
