package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	rootCmd.AddCommand(newTopicCommand())
}

// defaultAdminTimeout bounds every topic command, so that an unreachable or
// stuck cluster ends the command with an error instead of hanging it.
const defaultAdminTimeout = 30 * time.Second

// topicFlags are the flags shared by every `kmirror topic` subcommand.
type topicFlags struct {
	clientFlags
	timeout time.Duration
}

// run connects an admin client, bounds fn by --timeout and closes the client.
func (f *topicFlags) run(cmd *cobra.Command, fn func(ctx context.Context, adm *kadm.Client, format outputFormat) error) error {
	format, err := f.format()
	if err != nil {
		return err
	}
	if f.timeout <= 0 {
		return fmt.Errorf("invalid --timeout %s: must be positive", f.timeout)
	}
	cl, err := f.newClient()
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	return f.explain(fn(ctx, kadm.NewClient(cl), format), f.timeout)
}

// newTopicCommand builds `kmirror topic` and its subcommands with fresh flag
// state.
func newTopicCommand() *cobra.Command {
	f := &topicFlags{}
	cmd := &cobra.Command{
		Use:   "topic",
		Short: "Create, list, describe, delete topics, change their configs and move their partitions",
		Args:  cobra.NoArgs,
	}
	f.register(cmd, true)
	cmd.PersistentFlags().DurationVar(&f.timeout, "timeout", defaultAdminTimeout,
		"how long to wait for the cluster to answer")
	cmd.AddCommand(
		newTopicCreateCommand(f),
		newTopicListCommand(f),
		newTopicDescribeCommand(f),
		newTopicDeleteCommand(f),
		newTopicAlterConfigCommand(f),
		newTopicReassignCommand(f),
		newTopicReassignmentsCommand(f),
	)
	return cmd
}

// parseConfigPairs turns repeated k=v flag values into a config map, refusing
// malformed and repeated keys (a repeated key is almost always a typo).
func parseConfigPairs(flag string, pairs []string) (map[string]*string, error) {
	configs := make(map[string]*string, len(pairs))
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("invalid --%s %q: want key=value", flag, p)
		}
		if _, dup := configs[k]; dup {
			return nil, fmt.Errorf("invalid --%s: key %q given twice", flag, k)
		}
		configs[k] = kadm.StringPtr(v)
	}
	return configs, nil
}

// topicSummary is one topic's line in create and list output.
type topicSummary struct {
	Name              string `json:"name"`
	ID                string `json:"id"`
	Partitions        int    `json:"partitions"`
	ReplicationFactor int    `json:"replication_factor"`
	Internal          bool   `json:"internal,omitempty"`
	Status            string `json:"status,omitempty"`
}

func summarize(d kadm.TopicDetail) topicSummary {
	return topicSummary{
		Name:              d.Topic,
		ID:                topicID(d.ID),
		Partitions:        len(d.Partitions),
		ReplicationFactor: d.Partitions.NumReplicas(),
		Internal:          d.IsInternal,
	}
}

func newTopicCreateCommand(f *topicFlags) *cobra.Command {
	var (
		partitions  int32
		replication int16
		configs     []string
		ifNotExists bool
	)
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a topic",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if partitions == 0 || partitions < -1 {
				return fmt.Errorf("invalid --partitions %d: must be at least 1 (or -1 for the broker's num.partitions)", partitions)
			}
			if replication == 0 || replication < -1 {
				return fmt.Errorf("invalid --replication-factor %d: must be at least 1 (or -1 for the broker's default.replication.factor)", replication)
			}
			cfg, err := parseConfigPairs("config", configs)
			if err != nil {
				return err
			}
			return f.run(cmd, func(ctx context.Context, adm *kadm.Client, format outputFormat) error {
				resp, err := adm.CreateTopic(ctx, partitions, replication, cfg, name)
				if err != nil && !(ifNotExists && errors.Is(err, kerr.TopicAlreadyExists)) {
					return fmt.Errorf("create topic %s: %w", name, brokerError(err, resp.ErrMessage))
				}
				sum := topicSummary{
					Name:              name,
					ID:                topicID(resp.ID),
					Partitions:        int(resp.NumPartitions),
					ReplicationFactor: int(resp.ReplicationFactor),
					Status:            "created",
				}
				if err != nil || sum.Partitions <= 0 || sum.ReplicationFactor <= 0 {
					// Exists already, or a broker too old to echo what it
					// created: ask the metadata for the facts.
					details, merr := adm.ListTopicsWithInternal(ctx, name)
					if merr != nil {
						return fmt.Errorf("describe topic %s: %w", name, merr)
					}
					d := details[name]
					if d.Err != nil {
						return fmt.Errorf("describe topic %s: %w", name, d.Err)
					}
					status := sum.Status
					sum = summarize(d)
					sum.Status = status
					if err != nil {
						sum.Status = "exists"
					}
				}
				out := cmd.OutOrStdout()
				if format == formatJSON {
					return writeJSON(out, sum)
				}
				return writeTable(out, []string{"TOPIC", "ID", "PARTITIONS", "REPLICATION-FACTOR", "STATUS"},
					[][]string{{sum.Name, sum.ID, strconv.Itoa(sum.Partitions), strconv.Itoa(sum.ReplicationFactor), sum.Status}})
			})
		},
	}
	fs := cmd.Flags()
	fs.Int32Var(&partitions, "partitions", -1, "number of partitions (-1: the broker's num.partitions)")
	fs.Int16Var(&replication, "replication-factor", -1, "replicas per partition (-1: the broker's default.replication.factor)")
	fs.StringArrayVar(&configs, "config", nil, "topic config key=value (repeatable)")
	fs.BoolVar(&ifNotExists, "if-not-exists", false, "succeed if the topic exists already")
	return cmd
}

func newTopicListCommand(f *topicFlags) *cobra.Command {
	var internal bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List topics",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd, func(ctx context.Context, adm *kadm.Client, format outputFormat) error {
				list := adm.ListTopics
				if internal {
					list = adm.ListTopicsWithInternal
				}
				details, err := list(ctx)
				if err != nil {
					return fmt.Errorf("list topics: %w", err)
				}
				sums := []topicSummary{}
				for _, d := range details.Sorted() {
					if d.Err != nil {
						return fmt.Errorf("list topics: topic %s: %w", d.Topic, d.Err)
					}
					sums = append(sums, summarize(d))
				}
				out := cmd.OutOrStdout()
				if format == formatJSON {
					return writeJSON(out, sums)
				}
				header := []string{"TOPIC", "ID", "PARTITIONS", "REPLICATION-FACTOR"}
				if internal {
					header = append(header, "INTERNAL")
				}
				rows := make([][]string, 0, len(sums))
				for _, s := range sums {
					row := []string{s.Name, s.ID, strconv.Itoa(s.Partitions), strconv.Itoa(s.ReplicationFactor)}
					if internal {
						row = append(row, strconv.FormatBool(s.Internal))
					}
					rows = append(rows, row)
				}
				return writeTable(out, header, rows)
			})
		},
	}
	cmd.Flags().BoolVar(&internal, "internal", false, "include internal topics such as __consumer_offsets")
	return cmd
}

// partitionDescription is one partition in `topic describe` output.
type partitionDescription struct {
	Partition       int32   `json:"partition"`
	Leader          int32   `json:"leader"`
	LeaderEpoch     int32   `json:"leader_epoch"`
	Replicas        []int32 `json:"replicas"`
	ISR             []int32 `json:"isr"`
	OfflineReplicas []int32 `json:"offline_replicas"`
	// AddingReplicas and RemovingReplicas are set while the partition is
	// being reassigned (ListPartitionReassignments).
	AddingReplicas   []int32 `json:"adding_replicas,omitempty"`
	RemovingReplicas []int32 `json:"removing_replicas,omitempty"`
	Error            string  `json:"error,omitempty"`
}

// configDescription is one topic config in `topic describe` output. Value is
// nil for a sensitive config, whose value the broker never returns.
type configDescription struct {
	Name      string  `json:"name"`
	Value     *string `json:"value"`
	Source    string  `json:"source"`
	Sensitive bool    `json:"sensitive,omitempty"`
}

// topicDescription is one topic in `topic describe` output.
type topicDescription struct {
	Name              string                 `json:"name"`
	ID                string                 `json:"id"`
	Internal          bool                   `json:"internal"`
	ReplicationFactor int                    `json:"replication_factor"`
	Partitions        []partitionDescription `json:"partitions"`
	Configs           []configDescription    `json:"configs"`
}

// nonDefault reports whether a config was set for this topic rather than
// inherited: those are the ones worth showing, as kafka-topics does.
func nonDefault(c kadm.Config) bool {
	return c.Source == kmsg.ConfigSourceDynamicTopicConfig
}

func newTopicDescribeCommand(f *topicFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "describe NAME...",
		Short: "Show topics' ids, partitions (leader, epoch, replicas, ISR) and the configs set on them",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, names []string) error {
			return f.run(cmd, func(ctx context.Context, adm *kadm.Client, format outputFormat) error {
				details, err := adm.ListTopicsWithInternal(ctx, names...)
				if err != nil {
					return fmt.Errorf("describe topics: %w", err)
				}
				var errs []error
				var found []string
				for _, name := range dedupe(names) {
					d, ok := details[name]
					switch {
					case !ok:
						errs = append(errs, fmt.Errorf("describe topic %s: %w", name, kerr.UnknownTopicOrPartition))
					case d.Err != nil:
						errs = append(errs, fmt.Errorf("describe topic %s: %w", name, d.Err))
					default:
						found = append(found, name)
					}
				}
				descs := []topicDescription{}
				if len(found) > 0 {
					configs, err := adm.DescribeTopicConfigs(ctx, found...)
					if err != nil {
						return fmt.Errorf("describe configs: %w", err)
					}
					byName := make(map[string]kadm.ResourceConfig, len(configs))
					for _, rc := range configs {
						byName[rc.Name] = rc
					}
					moving := reassignmentsOf(ctx, adm, details, found)
					for _, name := range found {
						rc := byName[name]
						if rc.Err != nil {
							errs = append(errs, fmt.Errorf("describe configs of topic %s: %w", name, brokerError(rc.Err, rc.ErrMessage)))
						}
						desc := describeTopic(details[name], rc)
						for i := range desc.Partitions {
							if r, ok := moving[name][desc.Partitions[i].Partition]; ok {
								desc.Partitions[i].AddingReplicas, desc.Partitions[i].RemovingReplicas = r.AddingReplicas, r.RemovingReplicas
							}
						}
						descs = append(descs, desc)
					}
				}
				if err := printDescriptions(cmd, format, descs); err != nil {
					return err
				}
				return errors.Join(errs...)
			})
		},
	}
}

func describeTopic(d kadm.TopicDetail, rc kadm.ResourceConfig) topicDescription {
	desc := topicDescription{
		Name:              d.Topic,
		ID:                topicID(d.ID),
		Internal:          d.IsInternal,
		ReplicationFactor: d.Partitions.NumReplicas(),
		Partitions:        []partitionDescription{},
		Configs:           []configDescription{},
	}
	for _, p := range d.Partitions.Sorted() {
		pd := partitionDescription{
			Partition:       p.Partition,
			Leader:          p.Leader,
			LeaderEpoch:     p.LeaderEpoch,
			Replicas:        orEmpty(p.Replicas),
			ISR:             orEmpty(p.ISR),
			OfflineReplicas: orEmpty(p.OfflineReplicas),
		}
		if p.Err != nil {
			pd.Error = p.Err.Error()
		}
		desc.Partitions = append(desc.Partitions, pd)
	}
	for _, c := range rc.Configs {
		if !nonDefault(c) {
			continue
		}
		desc.Configs = append(desc.Configs, configDescription{
			Name:      c.Key,
			Value:     c.Value,
			Source:    c.Source.String(),
			Sensitive: c.Sensitive,
		})
	}
	sort.Slice(desc.Configs, func(i, j int) bool { return desc.Configs[i].Name < desc.Configs[j].Name })
	return desc
}

// reassignmentsOf returns the reassignments in progress of the named
// topics' partitions; nil if the cluster does not answer
// ListPartitionReassignments (a describe does not fail for it).
func reassignmentsOf(ctx context.Context, adm *kadm.Client, details kadm.TopicDetails, names []string) kadm.ListPartitionReassignmentsResponses {
	set := kadm.TopicsSet{}
	for _, name := range names {
		for p := range details[name].Partitions {
			set.Add(name, p)
		}
	}
	moving, err := adm.ListPartitionReassignments(ctx, set)
	if err != nil {
		return nil
	}
	return moving
}

// printDescriptions renders described topics: in table form a topic table, a
// config table (when any topic has configs of its own) and a partition table.
func printDescriptions(cmd *cobra.Command, format outputFormat, descs []topicDescription) error {
	out := cmd.OutOrStdout()
	if format == formatJSON {
		return writeJSON(out, descs)
	}
	if len(descs) == 0 {
		return nil
	}
	var topics, configs, partitions [][]string
	reassigning := false
	for _, d := range descs {
		for _, p := range d.Partitions {
			reassigning = reassigning || len(p.AddingReplicas)+len(p.RemovingReplicas) > 0
		}
	}
	for _, d := range descs {
		topics = append(topics, []string{d.Name, d.ID, strconv.Itoa(len(d.Partitions)),
			strconv.Itoa(d.ReplicationFactor), strconv.FormatBool(d.Internal)})
		for _, c := range d.Configs {
			v := "<sensitive>"
			if c.Value != nil {
				v = tableCell(*c.Value)
			}
			configs = append(configs, []string{d.Name, c.Name, v, c.Source})
		}
		for _, p := range d.Partitions {
			leader := strconv.Itoa(int(p.Leader))
			if p.Leader < 0 {
				leader = "none"
			}
			row := []string{d.Name, strconv.Itoa(int(p.Partition)), leader,
				strconv.Itoa(int(p.LeaderEpoch)), joinInt32s(p.Replicas), joinInt32s(p.ISR),
				joinInt32s(p.OfflineReplicas)}
			if reassigning {
				row = append(row, brokerCell(p.AddingReplicas), brokerCell(p.RemovingReplicas))
			}
			partitions = append(partitions, append(row, p.Error))
		}
	}
	if err := writeTable(out, []string{"TOPIC", "ID", "PARTITIONS", "REPLICATION-FACTOR", "INTERNAL"}, topics); err != nil {
		return err
	}
	if len(configs) > 0 {
		fmt.Fprintln(out)
		if err := writeTable(out, []string{"TOPIC", "CONFIG", "VALUE", "SOURCE"}, configs); err != nil {
			return err
		}
	}
	fmt.Fprintln(out)
	header := []string{"TOPIC", "PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "OFFLINE"}
	if reassigning {
		// Only while a partition moves, as kafka-topics.sh shows them.
		header = append(header, "ADDING", "REMOVING")
	}
	return writeTable(out, append(header, "ERROR"), partitions)
}

func newTopicDeleteCommand(f *topicFlags) *cobra.Command {
	var ifExists bool
	cmd := &cobra.Command{
		Use:   "delete NAME...",
		Short: "Delete topics",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, names []string) error {
			return f.run(cmd, func(ctx context.Context, adm *kadm.Client, format outputFormat) error {
				resps, err := adm.DeleteTopics(ctx, dedupe(names)...)
				if err != nil {
					return fmt.Errorf("delete topics: %w", err)
				}
				type deleted struct {
					Name   string `json:"name"`
					Status string `json:"status"`
				}
				var errs []error
				results := []deleted{}
				for _, name := range dedupe(names) {
					r, ok := resps[name]
					switch {
					case !ok:
						errs = append(errs, fmt.Errorf("delete topic %s: no answer for this topic", name))
					case r.Err == nil:
						results = append(results, deleted{name, "deleted"})
					case ifExists && errors.Is(r.Err, kerr.UnknownTopicOrPartition):
						results = append(results, deleted{name, "absent"})
					default:
						errs = append(errs, fmt.Errorf("delete topic %s: %w", name, brokerError(r.Err, r.ErrMessage)))
					}
				}
				return writeResults(cmd.OutOrStdout(), format, results, []string{"TOPIC", "STATUS"},
					func(r deleted) []string { return []string{r.Name, r.Status} }, errs)
			})
		},
	}
	cmd.Flags().BoolVar(&ifExists, "if-exists", false, "succeed for topics that do not exist")
	return cmd
}

func newTopicAlterConfigCommand(f *topicFlags) *cobra.Command {
	var sets, deletes []string
	cmd := &cobra.Command{
		Use:   "alter-config NAME",
		Short: "Set or delete topic configs (IncrementalAlterConfigs)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			setMap, err := parseConfigPairs("set", sets)
			if err != nil {
				return err
			}
			if len(sets)+len(deletes) == 0 {
				return errors.New("nothing to alter: give --set key=value or --delete key")
			}
			type alteration struct {
				Config    string  `json:"config"`
				Operation string  `json:"operation"`
				Value     *string `json:"value,omitempty"`
			}
			var ops []kadm.AlterConfig
			var done []alteration
			for _, k := range sortedKeys(setMap) {
				ops = append(ops, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: setMap[k]})
				done = append(done, alteration{k, "set", setMap[k]})
			}
			for _, k := range dedupe(deletes) {
				k = strings.TrimSpace(k)
				if k == "" {
					return errors.New("invalid --delete: empty key")
				}
				if _, both := setMap[k]; both {
					return fmt.Errorf("config %s is both set and deleted", k)
				}
				ops = append(ops, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
				done = append(done, alteration{k, "delete", nil})
			}
			return f.run(cmd, func(ctx context.Context, adm *kadm.Client, format outputFormat) error {
				resps, err := adm.AlterTopicConfigs(ctx, ops, name)
				if err != nil {
					return fmt.Errorf("alter configs of topic %s: %w", name, err)
				}
				for _, r := range resps {
					if r.Err != nil {
						return fmt.Errorf("alter configs of topic %s: %w", name, brokerError(r.Err, r.ErrMessage))
					}
				}
				out := cmd.OutOrStdout()
				if format == formatJSON {
					return writeJSON(out, struct {
						Topic   string       `json:"topic"`
						Altered []alteration `json:"altered"`
					}{name, done})
				}
				rows := make([][]string, len(done))
				for i, a := range done {
					v := ""
					if a.Value != nil {
						v = tableCell(*a.Value)
					}
					rows[i] = []string{name, a.Config, a.Operation, v}
				}
				return writeTable(out, []string{"TOPIC", "CONFIG", "OPERATION", "VALUE"}, rows)
			})
		},
	}
	cmd.Flags().StringArrayVar(&sets, "set", nil, "config key=value to set (repeatable)")
	cmd.Flags().StringArrayVar(&deletes, "delete", nil, "config key to delete, reverting it to the default (repeatable)")
	return cmd
}

// topicID renders a topic id as Kafka's tools do (Uuid.toString: URL-safe
// base64 without padding, 22 characters), so ids can be compared with what
// other Kafka tooling prints.
func topicID(id kadm.TopicID) string {
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// dedupe returns names without repeats, in first-seen order.
func dedupe(names []string) []string {
	seen := make(map[string]bool, len(names))
	out := make([]string, 0, len(names))
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

func sortedKeys(m map[string]*string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func orEmpty(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}
