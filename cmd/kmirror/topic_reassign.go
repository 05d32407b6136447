package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// `kmirror topic reassign` and `kmirror topic reassignments` move a
// partition's replicas to other brokers (AlterPartitionReassignments) and
// list the moves in progress (ListPartitionReassignments), what Kafka's
// kafka-reassign-partitions.sh does with its --execute, --cancel and
// --verify steps.

// reassignment is one partition's move in the commands' JSON output.
type reassignment struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas,omitempty"`
	Adding    []int32 `json:"adding_replicas,omitempty"`
	Removing  []int32 `json:"removing_replicas,omitempty"`
	Status    string  `json:"status,omitempty"`
}

// parseBrokerList parses --replicas: comma-separated broker ids.
func parseBrokerList(s string) ([]int32, error) {
	var ids []int32
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		id, err := strconv.ParseInt(f, 10, 32)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("invalid --replicas %q: want comma-separated broker ids", s)
		}
		ids = append(ids, int32(id))
	}
	return ids, nil
}

func newTopicReassignCommand(f *topicFlags) *cobra.Command {
	var partitions []int32
	var replicas string
	var cancel bool
	var throttle int64
	cmd := &cobra.Command{
		Use:   "reassign NAME --partition P... (--replicas IDS [--throttle BYTES] | --cancel)",
		Short: "Move partitions to other brokers, or cancel their move (AlterPartitionReassignments)",
		Long: "Move the given partitions of a topic to the brokers of --replicas (the first is the preferred leader).\n" +
			"The new replicas copy the data from the leader; once all of them are in sync the old replicas leave.\n" +
			"Follow the move with `kmirror topic reassignments`. --cancel returns partitions being moved to their replicas.\n" +
			"--throttle bounds the copy to BYTES a second, as kafka-reassign-partitions.sh --throttle: it lists the\n" +
			"partitions' current replicas in the topic's leader.replication.throttled.replicas and sets the brokers'\n" +
			"leader.replication.throttled.rate; lift it with `kmirror topic reassignments --clear-throttle` once done.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if len(partitions) == 0 {
				return errors.New("give the partitions to move with --partition")
			}
			var target []int32
			switch {
			case cancel && replicas != "":
				return errors.New("give either --replicas or --cancel, not both")
			case !cancel && replicas == "":
				return errors.New("give the target brokers with --replicas, or --cancel")
			case cancel && throttle != 0:
				return errors.New("--throttle goes with --replicas")
			case throttle < 0:
				return fmt.Errorf("invalid --throttle %d: want bytes a second", throttle)
			case !cancel:
				var err error
				if target, err = parseBrokerList(replicas); err != nil {
					return err
				}
			}
			parts := dedupeInt32(partitions)
			return f.run(cmd, func(ctx context.Context, adm *kadm.Client, format outputFormat) error {
				if throttle > 0 {
					if err := setReassignThrottle(ctx, adm, name, parts, throttle); err != nil {
						return err
					}
				}
				var req kadm.AlterPartitionAssignmentsReq
				for _, p := range parts {
					req.Assign(name, p, target)
				}
				resps, err := adm.AlterPartitionAssignments(ctx, req)
				if err != nil {
					return fmt.Errorf("reassign partitions of topic %s: %w", name, err)
				}
				status := "moving"
				if cancel {
					status = "cancelled"
				}
				var errs []error
				results := []reassignment{}
				for _, p := range parts {
					r, ok := resps[name][p]
					switch {
					case !ok:
						errs = append(errs, fmt.Errorf("reassign %s-%d: no answer for this partition", name, p))
					case r.Err != nil:
						errs = append(errs, fmt.Errorf("reassign %s-%d: %w", name, p, brokerError(r.Err, r.ErrMessage)))
					default:
						results = append(results, reassignment{Topic: name, Partition: p, Replicas: target, Status: status})
					}
				}
				return writeResults(cmd.OutOrStdout(), format, results, []string{"TOPIC", "PARTITION", "TARGET", "STATUS"},
					func(r reassignment) []string {
						return []string{r.Topic, strconv.Itoa(int(r.Partition)), brokerCell(r.Replicas), r.Status}
					}, errs)
			})
		},
	}
	cmd.Flags().Int32SliceVar(&partitions, "partition", nil, "partition to move (repeatable, or comma-separated)")
	cmd.Flags().StringVar(&replicas, "replicas", "", "target broker ids, comma-separated, preferred leader first")
	cmd.Flags().BoolVar(&cancel, "cancel", false, "cancel the partitions' move in progress")
	cmd.Flags().Int64Var(&throttle, "throttle", 0, "bound the copy to this many bytes a second (leader.replication.throttled.*)")
	return cmd
}

// throttleConfigs are the configs --throttle sets and --clear-throttle
// removes: the topics' replica lists and the brokers' rates.
var (
	throttleTopicConfigs  = []string{"leader.replication.throttled.replicas", "follower.replication.throttled.replicas"}
	throttleBrokerConfigs = []string{"leader.replication.throttled.rate", "follower.replication.throttled.rate"}
)

// setReassignThrottle throttles the move of parts of topic as
// kafka-reassign-partitions.sh --throttle does: the partitions' current
// replicas join the topic's leader.replication.throttled.replicas (and the
// follower list, which kmirror accepts without enforcing), and the rate
// becomes the brokers' cluster-wide leader and follower throttled rate.
func setReassignThrottle(ctx context.Context, adm *kadm.Client, topic string, parts []int32, rate int64) error {
	details, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return fmt.Errorf("throttle: describe topic %s: %w", topic, err)
	}
	d, ok := details[topic]
	switch {
	case !ok:
		return fmt.Errorf("throttle: describe topic %s: %w", topic, kerr.UnknownTopicOrPartition)
	case d.Err != nil:
		return fmt.Errorf("throttle: describe topic %s: %w", topic, d.Err)
	}
	var pairs []string
	for _, p := range parts {
		pd, ok := d.Partitions[p]
		if !ok {
			return fmt.Errorf("throttle: topic %s has no partition %d", topic, p)
		}
		for _, r := range pd.Replicas {
			pairs = append(pairs, fmt.Sprintf("%d:%d", p, r))
		}
	}
	resps, err := adm.AlterTopicConfigs(ctx, configOps(throttleTopicConfigs, kadm.AppendConfig, kadm.StringPtr(strings.Join(pairs, ","))), topic)
	if err == nil && len(resps) > 0 {
		err = brokerError(resps[0].Err, resps[0].ErrMessage)
	}
	if err != nil {
		return fmt.Errorf("throttle: topic %s: %w", topic, err)
	}
	return alterBrokerDefaults(ctx, adm, configOps(throttleBrokerConfigs, kadm.SetConfig, kadm.StringPtr(strconv.FormatInt(rate, 10))))
}

// configOps is one incremental op on each config named.
func configOps(names []string, op kadm.IncrementalOp, value *string) []kadm.AlterConfig {
	ops := make([]kadm.AlterConfig, len(names))
	for i, n := range names {
		ops[i] = kadm.AlterConfig{Op: op, Name: n, Value: value}
	}
	return ops
}

// alterBrokerDefaults applies ops to the cluster-wide broker configs.
func alterBrokerDefaults(ctx context.Context, adm *kadm.Client, ops []kadm.AlterConfig) error {
	resps, err := adm.AlterBrokerConfigs(ctx, ops)
	if err == nil && len(resps) > 0 {
		err = brokerError(resps[0].Err, resps[0].ErrMessage)
	}
	if err != nil {
		return fmt.Errorf("throttle: broker configs: %w", err)
	}
	return nil
}

// clearReassignThrottle removes what setReassignThrottle set, from every
// topic and the cluster-wide broker configs.
func clearReassignThrottle(ctx context.Context, adm *kadm.Client, topics []string) error {
	if len(topics) == 0 {
		return nil
	}
	resps, err := adm.AlterTopicConfigs(ctx, configOps(throttleTopicConfigs, kadm.DeleteConfig, nil), topics...)
	if err != nil {
		return fmt.Errorf("clear throttle: %w", err)
	}
	for _, r := range resps {
		if r.Err != nil {
			return fmt.Errorf("clear throttle of topic %s: %w", r.Name, brokerError(r.Err, r.ErrMessage))
		}
	}
	return alterBrokerDefaults(ctx, adm, configOps(throttleBrokerConfigs, kadm.DeleteConfig, nil))
}

func newTopicReassignmentsCommand(f *topicFlags) *cobra.Command {
	var clearThrottle bool
	cmd := &cobra.Command{
		Use:   "reassignments [NAME...] [--clear-throttle]",
		Short: "List the partitions being moved (ListPartitionReassignments)",
		Long: "List the partitions being moved, of the named topics or of all.\n" +
			"--clear-throttle removes the throttle `kmirror topic reassign --throttle` set (the topics' and brokers'\n" +
			"*.replication.throttled.* configs), and refuses while a move is still in progress.",
		RunE: func(cmd *cobra.Command, names []string) error {
			return f.run(cmd, func(ctx context.Context, adm *kadm.Client, format outputFormat) error {
				topics := dedupe(names)
				if len(topics) == 0 {
					details, err := adm.ListTopics(ctx)
					if err != nil {
						return fmt.Errorf("list topics: %w", err)
					}
					topics = details.Names()
				}
				set := kadm.TopicsSet{}
				if len(topics) > 0 {
					details, err := adm.ListTopics(ctx, topics...)
					if err != nil {
						return fmt.Errorf("list topics: %w", err)
					}
					for _, d := range details.Sorted() {
						for p := range d.Partitions {
							set.Add(d.Topic, p)
						}
					}
				}
				listed, err := adm.ListPartitionReassignments(ctx, set)
				if err != nil {
					return fmt.Errorf("list partition reassignments: %w", err)
				}
				results := []reassignment{}
				for _, r := range listed.Sorted() {
					results = append(results, reassignment{Topic: r.Topic, Partition: r.Partition,
						Replicas: r.Replicas, Adding: r.AddingReplicas, Removing: r.RemovingReplicas})
				}
				if clearThrottle {
					if len(results) > 0 {
						return fmt.Errorf("clear throttle: %d partitions are still moving; clear it once they are done", len(results))
					}
					if err := clearReassignThrottle(ctx, adm, topics); err != nil {
						return err
					}
				}
				out := cmd.OutOrStdout()
				if format == formatJSON {
					return writeJSON(out, results)
				}
				rows := make([][]string, len(results))
				for i, r := range results {
					rows[i] = []string{r.Topic, strconv.Itoa(int(r.Partition)), brokerCell(r.Replicas), brokerCell(r.Adding), brokerCell(r.Removing)}
				}
				return writeTable(out, []string{"TOPIC", "PARTITION", "REPLICAS", "ADDING", "REMOVING"}, rows)
			})
		},
	}
	cmd.Flags().BoolVar(&clearThrottle, "clear-throttle", false, "remove the reassignment throttle once no partition is moving")
	return cmd
}

// brokerCell renders broker ids for a table cell, "-" for none.
func brokerCell(ids []int32) string {
	if len(ids) == 0 {
		return "-"
	}
	return joinInt32s(ids)
}

// dedupeInt32 returns ids sorted without repeats.
func dedupeInt32(ids []int32) []int32 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}
