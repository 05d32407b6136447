package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

func init() {
	addCommand(newGroupCommand())
}

// groupFlags are the flags shared by every `kmirror group` subcommand.
type groupFlags struct {
	clientFlags
	timeout time.Duration
}

// run connects an admin client, bounds fn by --timeout and closes the client.
func (f *groupFlags) run(cmd *cobra.Command, fn func(ctx context.Context, adm *kadm.Client, format outputFormat) error) error {
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

// newGroupCommand builds `kmirror group` and its subcommands with fresh flag
// state.
func newGroupCommand() *cobra.Command {
	f := &groupFlags{}
	cmd := &cobra.Command{
		Use:   "group",
		Short: "List, describe, delete consumer groups and reset their offsets",
		Args:  cobra.NoArgs,
	}
	f.register(cmd, true)
	cmd.PersistentFlags().DurationVar(&f.timeout, "timeout", defaultAdminTimeout,
		"how long to wait for the cluster to answer")
	cmd.AddCommand(
		newGroupListCommand(f),
		newGroupDescribeCommand(f),
		newGroupDeleteCommand(f),
		newGroupResetOffsetsCommand(f),
	)
	return cmd
}

// groupSummary is one group's line in list output.
type groupSummary struct {
	Group        string `json:"group"`
	State        string `json:"state"`
	ProtocolType string `json:"protocol_type"`
	Coordinator  int32  `json:"coordinator"`
}

func newGroupListCommand(f *groupFlags) *cobra.Command {
	var states []string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the consumer groups of the cluster",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd, func(ctx context.Context, adm *kadm.Client, format outputFormat) error {
				listed, err := adm.ListGroups(ctx, states...)
				if err != nil {
					return fmt.Errorf("list groups: %w", err)
				}
				out := []groupSummary{}
				for _, g := range listed.Sorted() {
					out = append(out, groupSummary{Group: g.Group, State: g.State, ProtocolType: g.ProtocolType, Coordinator: g.Coordinator})
				}
				if format == formatJSON {
					return writeJSON(cmd.OutOrStdout(), out)
				}
				rows := make([][]string, len(out))
				for i, g := range out {
					rows[i] = []string{tableCell(g.Group), g.State, orDash(g.ProtocolType), strconv.Itoa(int(g.Coordinator))}
				}
				return writeTable(cmd.OutOrStdout(), []string{"GROUP", "STATE", "PROTOCOL-TYPE", "COORDINATOR"}, rows)
			})
		},
	}
	cmd.Flags().StringSliceVar(&states, "state", nil, "only groups in these states (Empty, Stable, PreparingRebalance, CompletingRebalance, Dead)")
	return cmd
}

// groupDescription is what describe reports of a group: its state and
// members, and per partition the committed offset, log end and lag, like
// kafka-consumer-groups.sh --describe.
type groupDescription struct {
	Group        string            `json:"group"`
	State        string            `json:"state"`
	ProtocolType string            `json:"protocol_type"`
	Protocol     string            `json:"protocol"`
	Coordinator  int32             `json:"coordinator"`
	Members      []groupMember     `json:"members"`
	Offsets      []partitionOffset `json:"offsets"`
	TotalLag     int64             `json:"total_lag"`
}

type groupMember struct {
	MemberID   string               `json:"member_id"`
	InstanceID string               `json:"instance_id,omitempty"`
	ClientID   string               `json:"client_id"`
	Host       string               `json:"host"`
	Assignment []assignedPartitions `json:"assignment"`
}

type assignedPartitions struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

type partitionOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Committed is the group's committed offset, nil when it has none.
	Committed *int64 `json:"committed_offset"`
	LogEnd    *int64 `json:"log_end_offset"`
	Lag       *int64 `json:"lag"`
	MemberID  string `json:"member_id,omitempty"`
	Host      string `json:"host,omitempty"`
	ClientID  string `json:"client_id,omitempty"`
	Error     string `json:"error,omitempty"`
}

func newGroupDescribeCommand(f *groupFlags) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "describe GROUP...",
		Short: "Show a group's state, members, assignments, committed offsets and lag",
		RunE: func(cmd *cobra.Command, names []string) error {
			if len(names) == 0 && !all {
				return errors.New("name the groups to describe, or give --all-groups")
			}
			return f.run(cmd, func(ctx context.Context, adm *kadm.Client, format outputFormat) error {
				if all {
					listed, err := adm.ListGroups(ctx)
					if err != nil {
						return fmt.Errorf("list groups: %w", err)
					}
					names = append(names, listed.Groups()...)
				}
				names = dedupe(names)
				if len(names) == 0 {
					if format == formatJSON {
						return writeJSON(cmd.OutOrStdout(), []groupDescription{})
					}
					return nil
				}
				lags, err := adm.Lag(ctx, names...)
				if err != nil {
					return fmt.Errorf("describe groups: %w", err)
				}
				var descs []groupDescription
				var errs []error
				for _, name := range names {
					l, ok := lags[name]
					switch {
					case !ok:
						errs = append(errs, fmt.Errorf("describe group %s: no answer for this group", name))
						continue
					case l.Error() != nil:
						errs = append(errs, fmt.Errorf("describe group %s: %w", name, l.Error()))
						continue
					}
					descs = append(descs, describeLag(l))
				}
				var perr error
				if format == formatJSON {
					if descs == nil {
						descs = []groupDescription{}
					}
					perr = writeJSON(cmd.OutOrStdout(), descs)
				} else {
					perr = writeGroupDescriptions(cmd, descs)
				}
				return errors.Join(append([]error{perr}, errs...)...)
			})
		},
	}
	cmd.Flags().BoolVar(&all, "all-groups", false, "describe every group of the cluster")
	return cmd
}

// describeLag turns kadm's view of a group into a description.
func describeLag(l kadm.DescribedGroupLag) groupDescription {
	d := groupDescription{
		Group:        l.Group,
		State:        l.State,
		ProtocolType: l.ProtocolType,
		Protocol:     l.Protocol,
		Coordinator:  l.Coordinator.NodeID,
		Members:      []groupMember{},
		Offsets:      []partitionOffset{},
	}
	for _, m := range l.Members {
		gm := groupMember{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Assignment: []assignedPartitions{}}
		if m.InstanceID != nil {
			gm.InstanceID = *m.InstanceID
		}
		if c, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range c.Topics {
				ps := slices.Clone(t.Partitions)
				slices.Sort(ps)
				gm.Assignment = append(gm.Assignment, assignedPartitions{Topic: t.Topic, Partitions: ps})
			}
			sort.Slice(gm.Assignment, func(i, j int) bool { return gm.Assignment[i].Topic < gm.Assignment[j].Topic })
		}
		d.Members = append(d.Members, gm)
	}
	for _, ml := range l.Lag.Sorted() {
		if ml.Member == nil && ml.Commit.At < 0 {
			continue // neither assigned nor committed: not the group's
		}
		po := partitionOffset{Topic: ml.Topic, Partition: ml.Partition}
		if ml.Commit.At >= 0 {
			at := ml.Commit.At
			po.Committed = &at
		}
		if ml.End.Err == nil && ml.End.Offset >= 0 {
			end := ml.End.Offset
			po.LogEnd = &end
		}
		if ml.Err == nil && ml.Lag >= 0 && po.Committed != nil {
			lag := ml.Lag
			po.Lag = &lag
			d.TotalLag += lag
		} else if ml.Err != nil {
			po.Error = ml.Err.Error()
		}
		if ml.Member != nil {
			po.MemberID, po.Host, po.ClientID = ml.Member.MemberID, ml.Member.ClientHost, ml.Member.ClientID
		}
		d.Offsets = append(d.Offsets, po)
	}
	return d
}

// writeGroupDescriptions prints each group as three tables: the group, its
// members, its partitions.
func writeGroupDescriptions(cmd *cobra.Command, descs []groupDescription) error {
	out := cmd.OutOrStdout()
	for i, d := range descs {
		if i > 0 {
			fmt.Fprintln(out)
		}
		if err := writeTable(out, []string{"GROUP", "STATE", "PROTOCOL-TYPE", "PROTOCOL", "COORDINATOR", "MEMBERS", "TOTAL-LAG"},
			[][]string{{tableCell(d.Group), d.State, orDash(d.ProtocolType), orDash(d.Protocol),
				strconv.Itoa(int(d.Coordinator)), strconv.Itoa(len(d.Members)), strconv.FormatInt(d.TotalLag, 10)}}); err != nil {
			return err
		}
		if len(d.Members) > 0 {
			fmt.Fprintln(out)
			rows := make([][]string, len(d.Members))
			for j, m := range d.Members {
				var parts []string
				for _, a := range m.Assignment {
					parts = append(parts, a.Topic+":"+joinInt32s(a.Partitions))
				}
				rows[j] = []string{tableCell(m.MemberID), orDash(tableCell(m.InstanceID)), orDash(tableCell(m.ClientID)),
					orDash(m.Host), orDash(tableCell(strings.Join(parts, ";")))}
			}
			if err := writeTable(out, []string{"MEMBER-ID", "INSTANCE-ID", "CLIENT-ID", "HOST", "ASSIGNMENT"}, rows); err != nil {
				return err
			}
		}
		if len(d.Offsets) > 0 {
			fmt.Fprintln(out)
			rows := make([][]string, len(d.Offsets))
			for j, o := range d.Offsets {
				rows[j] = []string{tableCell(d.Group), tableCell(o.Topic), strconv.Itoa(int(o.Partition)),
					optInt(o.Committed), optInt(o.LogEnd), optInt(o.Lag),
					orDash(tableCell(o.MemberID)), orDash(o.Host), orDash(tableCell(o.ClientID))}
			}
			if err := writeTable(out, []string{"GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
				"CONSUMER-ID", "HOST", "CLIENT-ID"}, rows); err != nil {
				return err
			}
		}
	}
	return nil
}

func newGroupDeleteCommand(f *groupFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "delete GROUP...",
		Short: "Delete groups that have no members, with their committed offsets",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, names []string) error {
			return f.run(cmd, func(ctx context.Context, adm *kadm.Client, format outputFormat) error {
				names = dedupe(names)
				resps, err := adm.DeleteGroups(ctx, names...)
				if err != nil {
					return fmt.Errorf("delete groups: %w", err)
				}
				type deleted struct {
					Group  string `json:"group"`
					Status string `json:"status"`
				}
				results := []deleted{}
				var errs []error
				for _, name := range names {
					r, ok := resps[name]
					switch {
					case !ok:
						errs = append(errs, fmt.Errorf("delete group %s: no answer for this group", name))
					case r.Err != nil:
						errs = append(errs, fmt.Errorf("delete group %s: %w", name, r.Err))
					default:
						results = append(results, deleted{name, "deleted"})
					}
				}
				return writeResults(cmd.OutOrStdout(), format, results, []string{"GROUP", "STATUS"},
					func(r deleted) []string { return []string{tableCell(r.Group), r.Status} }, errs)
			})
		},
	}
}

// resetSpec is where reset-offsets moves each partition.
type resetSpec struct {
	toEarliest, toLatest bool
	toOffset             *int64
	shiftBy              *int64
	toDatetime           *time.Time
}

// resetRow is one partition of a reset: where the group was and where it
// goes.
type resetRow struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Previous  *int64 `json:"previous_offset"`
	New       int64  `json:"new_offset"`
}

func newGroupResetOffsetsCommand(f *groupFlags) *cobra.Command {
	const flagToOffset, flagShift, flagDate = "to-offset", "shift-by", "to-datetime"
	var (
		topics               []string
		allTopics            bool
		toEarliest, toLatest bool
		toOffset, shiftBy    int64
		toDatetime           string
		execute, dryRun      bool
	)
	cmd := &cobra.Command{
		Use:   "reset-offsets GROUP",
		Short: "Move a group's committed offsets (dry run unless --execute)",
		Long: `Move the committed offsets of an inactive group (no members) for the
partitions given with --topic (all of a topic's partitions, or topic:0,1,2)
or --all-topics (every partition the group has an offset for), to the log
start (--to-earliest), the log end (--to-latest), an offset (--to-offset),
the current offset plus or minus N (--shift-by), or the first offset at or
after a time (--to-datetime 2024-01-31T12:00:00.000, local time unless a zone
is given). Offsets are kept within each partition's log start and end. Without
--execute the new offsets are only printed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			group := args[0]
			setOffset, setShift, setDate := cmd.Flags().Changed(flagToOffset), cmd.Flags().Changed(flagShift), cmd.Flags().Changed(flagDate)
			spec := resetSpec{toEarliest: toEarliest, toLatest: toLatest}
			n := 0
			for _, b := range []bool{toEarliest, toLatest, setOffset, setShift, setDate} {
				if b {
					n++
				}
			}
			if n != 1 {
				return errors.New("give exactly one of --to-earliest, --to-latest, --to-offset, --shift-by, --to-datetime")
			}
			if execute && dryRun {
				return errors.New("--execute and --dry-run contradict each other")
			}
			if (len(topics) == 0) == !allTopics {
				return errors.New("give --topic (one or more) or --all-topics")
			}
			if setOffset {
				spec.toOffset = &toOffset
			}
			if setShift {
				spec.shiftBy = &shiftBy
			}
			if setDate {
				t, err := parseResetTime(toDatetime)
				if err != nil {
					return err
				}
				spec.toDatetime = &t
			}
			selection, err := parseTopicSelection(topics)
			if err != nil {
				return err
			}
			return f.run(cmd, func(ctx context.Context, adm *kadm.Client, format outputFormat) error {
				rows, err := resetOffsets(ctx, adm, group, selection, allTopics, spec, execute)
				if err != nil {
					return err
				}
				if format == formatJSON {
					return writeJSON(cmd.OutOrStdout(), rows)
				}
				table := make([][]string, len(rows))
				for i, r := range rows {
					table[i] = []string{tableCell(r.Group), tableCell(r.Topic), strconv.Itoa(int(r.Partition)),
						optInt(r.Previous), strconv.FormatInt(r.New, 10)}
				}
				if err := writeTable(cmd.OutOrStdout(), []string{"GROUP", "TOPIC", "PARTITION", "PREVIOUS-OFFSET", "NEW-OFFSET"}, table); err != nil {
					return err
				}
				if !execute {
					fmt.Fprintln(cmd.ErrOrStderr(), "dry run: nothing changed; add --execute to commit these offsets")
				}
				return nil
			})
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&topics, "topic", nil, "topic to reset, or topic:p1,p2 for some partitions (repeatable)")
	fl.BoolVar(&allTopics, "all-topics", false, "reset every partition the group has a committed offset for")
	fl.BoolVar(&toEarliest, "to-earliest", false, "reset to each partition's log start offset")
	fl.BoolVar(&toLatest, "to-latest", false, "reset to each partition's log end offset")
	fl.Int64Var(&toOffset, flagToOffset, 0, "reset to this offset")
	fl.Int64Var(&shiftBy, flagShift, 0, "move the committed offset by this many (negative: back)")
	fl.StringVar(&toDatetime, flagDate, "", "reset to the first offset with a timestamp at or after this time (YYYY-MM-DDTHH:mm:SS[.sss][zone])")
	fl.BoolVar(&execute, "execute", false, "commit the new offsets")
	fl.BoolVar(&dryRun, "dry-run", false, "only print the new offsets (the default)")
	return cmd
}

// topicSelection maps a topic to the partitions to reset; nil means all.
type topicSelection map[string][]int32

// parseTopicSelection reads --topic values: "t" or "t:0,1,2".
func parseTopicSelection(values []string) (topicSelection, error) {
	sel := topicSelection{}
	for _, v := range values {
		name, parts, hasParts := strings.Cut(v, ":")
		if name == "" {
			return nil, fmt.Errorf("invalid --topic %q: empty topic name", v)
		}
		if !hasParts {
			sel[name] = nil
			continue
		}
		for _, p := range strings.Split(parts, ",") {
			n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("invalid --topic %q: %q is not a partition number", v, p)
			}
			sel[name] = append(sel[name], int32(n))
		}
	}
	return sel, nil
}

// parseResetTime reads a --to-datetime value: ISO-8601 with optional
// milliseconds and zone (local time without one), as kafka-consumer-groups.sh.
func parseResetTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.000Z0700", "2006-01-02T15:04:05Z0700"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	for _, layout := range []string{"2006-01-02T15:04:05.000", "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("invalid --to-datetime %q: want YYYY-MM-DDTHH:mm:SS[.sss][zone]", s)
}

// resetOffsets computes (and with execute, commits) the new offsets.
func resetOffsets(ctx context.Context, adm *kadm.Client, group string, sel topicSelection, allTopics bool, spec resetSpec, execute bool) ([]resetRow, error) {
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("describe group %s: %w", group, err)
	}
	d, ok := described[group]
	if !ok {
		return nil, fmt.Errorf("describe group %s: no answer for this group", group)
	}
	if d.Err != nil {
		return nil, fmt.Errorf("describe group %s: %w", group, d.Err)
	}
	if execute && d.State != "Empty" && d.State != "Dead" {
		return nil, fmt.Errorf("offsets can only be reset while group %s is inactive, but it is %s (stop its consumers first)", group, d.State)
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("fetch offsets of group %s: %w", group, err)
	}
	if err := committed.Error(); err != nil {
		return nil, fmt.Errorf("fetch offsets of group %s: %w", group, err)
	}

	// The partitions to reset.
	want := map[string][]int32{}
	if allTopics {
		committed.Each(func(o kadm.OffsetResponse) {
			if o.At >= 0 {
				want[o.Topic] = append(want[o.Topic], o.Partition)
			}
		})
	} else {
		var all []string
		for t, ps := range sel {
			if ps == nil {
				all = append(all, t)
			} else {
				want[t] = ps
			}
		}
		if len(all) > 0 {
			details, err := adm.ListTopics(ctx, all...)
			if err != nil {
				return nil, fmt.Errorf("list topics: %w", err)
			}
			for _, t := range all {
				td, ok := details[t]
				if !ok || td.Err != nil {
					return nil, fmt.Errorf("topic %s: %w", t, errors.Join(td.Err, errIf(!ok, "not found")))
				}
				want[t] = td.Partitions.Numbers()
			}
		}
	}
	topicNames := make([]string, 0, len(want))
	for t := range want {
		topicNames = append(topicNames, t)
	}
	sort.Strings(topicNames)
	if len(topicNames) == 0 {
		return []resetRow{}, nil
	}

	starts, err := adm.ListStartOffsets(ctx, topicNames...)
	if err != nil {
		return nil, fmt.Errorf("list start offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topicNames...)
	if err != nil {
		return nil, fmt.Errorf("list end offsets: %w", err)
	}
	var atTime kadm.ListedOffsets
	if spec.toDatetime != nil {
		if atTime, err = adm.ListOffsetsAfterMilli(ctx, spec.toDatetime.UnixMilli(), topicNames...); err != nil {
			return nil, fmt.Errorf("list offsets at %s: %w", spec.toDatetime, err)
		}
	}

	rows := []resetRow{}
	commits := kadm.Offsets{}
	for _, t := range topicNames {
		ps := slices.Clone(want[t])
		slices.Sort(ps)
		ps = slices.Compact(ps)
		for _, p := range ps {
			start, sok := starts.Lookup(t, p)
			end, eok := ends.Lookup(t, p)
			if !sok || !eok || start.Err != nil || end.Err != nil {
				return nil, fmt.Errorf("partition %s-%d: %w", t, p, errors.Join(start.Err, end.Err, errIf(!sok || !eok, "no such partition")))
			}
			row := resetRow{Group: group, Topic: t, Partition: p}
			if c, ok := committed.Lookup(t, p); ok && c.Err == nil && c.At >= 0 {
				prev := c.At
				row.Previous = &prev
			}
			var target int64
			switch {
			case spec.toEarliest:
				target = start.Offset
			case spec.toLatest:
				target = end.Offset
			case spec.toOffset != nil:
				target = *spec.toOffset
			case spec.shiftBy != nil:
				if row.Previous == nil {
					return nil, fmt.Errorf("cannot shift the offset of %s-%d: group %s has no committed offset there", t, p, group)
				}
				target = *row.Previous + *spec.shiftBy
			case spec.toDatetime != nil:
				target = end.Offset
				if o, ok := atTime.Lookup(t, p); ok && o.Err == nil && o.Offset >= 0 {
					target = o.Offset
				}
			}
			row.New = min(max(target, start.Offset), end.Offset)
			rows = append(rows, row)
			commits.Add(kadm.Offset{Topic: t, Partition: p, At: row.New, LeaderEpoch: -1})
		}
	}
	if execute {
		resps, err := adm.CommitOffsets(ctx, group, commits)
		if err != nil {
			return nil, fmt.Errorf("commit offsets of group %s: %w", group, err)
		}
		if err := resps.Error(); err != nil {
			return nil, fmt.Errorf("commit offsets of group %s: %w", group, err)
		}
	}
	return rows, nil
}

// errIf returns an error saying msg when cond holds.
func errIf(cond bool, msg string) error {
	if cond {
		return errors.New(msg)
	}
	return nil
}

// orDash shows an empty cell as "-".
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// optInt shows an optional number, "-" when absent.
func optInt(v *int64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatInt(*v, 10)
}
