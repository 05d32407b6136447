package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/kmirror/kmirror/pkg/mirroradmin"
)

// withFailoverDryRun gives remove-topics --dry-run: what a failover now
// would do — per partition where its log would be cut, how many records
// that drops (transactions the source had not finished), how far behind the
// source it is — and when group offsets were last synced: the recovery
// point of a failover now. Nothing changes.
func withFailoverDryRun(f *mirrorFlags, cmd *cobra.Command) *cobra.Command {
	var dry bool
	run := cmd.RunE
	cmd.Flags().BoolVar(&dry, "dry-run", false,
		"show what a failover now would do (each partition's cut, the records it drops, the lag behind the source, the last group-offset sync) and change nothing")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if !dry {
			return run(cmd, args)
		}
		name, topics := args[0], dedupe(args[1:])
		return f.run(cmd, func(ctx context.Context, adm *mirroradmin.Client, format outputFormat) error {
			plan, err := adm.PlanFailover(ctx, name, topics...)
			if err != nil {
				return fmt.Errorf("remove-topics %s --dry-run: %w", name, err)
			}
			if err := printFailoverPlan(cmd.OutOrStdout(), format, plan); err != nil {
				return err
			}
			failed := 0
			for _, t := range plan.Topics {
				if t.Err != nil {
					failed++
				}
			}
			if failed > 0 {
				return fmt.Errorf("remove-topics %s --dry-run: %d of %d topics cannot be failed over", name, failed, len(plan.Topics))
			}
			return nil
		})
	}
	return cmd
}

func printFailoverPlan(w io.Writer, format outputFormat, plan *mirroradmin.FailoverPlan) error {
	if format == formatJSON {
		return writeJSON(w, plan)
	}
	var rows [][]string
	for _, t := range plan.Topics {
		if t.Err != nil {
			rows = append(rows, []string{tableCell(t.Name), "-", "error: " + tableCell(t.ErrMessage), "", "", "", "", "", ""})
			continue
		}
		for _, p := range t.Partitions {
			secs := "-"
			if p.LagSeconds >= 0 {
				secs = strconv.FormatFloat(p.LagSeconds, 'f', 1, 64)
			}
			rows = append(rows, []string{tableCell(t.Name), strconv.Itoa(int(p.Partition)), p.State.String(),
				offset(p.LogEndOffset), offset(p.CutOffset), offset(p.DroppedRecords), offset(p.SourceHighWatermark), offset(p.Lag), secs})
		}
	}
	if err := writeTable(w, []string{"TOPIC", "PARTITION", "STATE", "LOG-END", "CUT-AT", "DROPPED", "SOURCE-HW", "LAG", "LAG-S"}, rows); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "group offsets last synced: %s\nnothing was changed (dry run)\n", when(plan.GroupOffsetsSynced))
	return err
}
