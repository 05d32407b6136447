package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/pkg/mirroradmin"
)

// alterConfigResult is the output of `mirror alter-config`: the names of
// the properties changed, never their values (some are secrets).
type alterConfigResult struct {
	Name    string   `json:"name"`
	Set     []string `json:"set,omitempty"`
	Deleted []string `json:"deleted,omitempty"`
	Status  string   `json:"status"`
}

func newMirrorAlterConfigCommand(f *mirrorFlags) *cobra.Command {
	var (
		set  []string
		del  []string
		file string
	)
	cmd := &cobra.Command{
		Use:   "alter-config NAME",
		Short: "Change a mirror's source properties (e.g. a new password), validated like create",
		Long: `Change a mirror's source properties with IncrementalAlterConfigs on the MIRROR
resource: --set KEY=VALUE (repeatable) sets a property, --set-file reads
KEY=VALUE lines from a properties file (so that secrets stay out of the
command line and the shell history), --delete KEY (repeatable) removes one,
back to its default. The properties the mirror ends up with must be valid
together (as for create), or nothing changes. The brokers reconnect to the
source with the new properties at once; partitions that failed because the
source refused the old ones start again.

The output names the changed properties, never their values.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			changes, err := alterConfigChanges(set, file, del)
			if err != nil {
				return err
			}
			return f.run(cmd, func(ctx context.Context, adm *mirroradmin.Client, format outputFormat) error {
				if err := adm.AlterMirrorConfigs(ctx, name, changes...); err != nil {
					return fmt.Errorf("alter mirror %s: %w", name, err)
				}
				res := alterConfigResult{Name: name, Status: "altered"}
				for _, c := range changes {
					if c.Op == kadm.DeleteConfig {
						res.Deleted = append(res.Deleted, c.Name)
					} else {
						res.Set = append(res.Set, c.Name)
					}
				}
				if format == formatJSON {
					return writeJSON(cmd.OutOrStdout(), res)
				}
				return writeTable(cmd.OutOrStdout(), []string{"MIRROR", "SET", "DELETED", "STATUS"},
					[][]string{{tableCell(name), tableCell(strings.Join(res.Set, ",")), tableCell(strings.Join(res.Deleted, ",")), res.Status}})
			})
		},
	}
	cmd.Flags().StringArrayVar(&set, "set", nil, "KEY=VALUE: set a source property (repeatable)")
	cmd.Flags().StringVar(&file, "set-file", "", "properties file whose KEY=VALUE lines are set (for secrets)")
	cmd.Flags().StringArrayVar(&del, "delete", nil, "KEY: remove a source property (repeatable)")
	return cmd
}

// alterConfigChanges turns the flags into the changes, sorted by name; a
// property both set and deleted, or no change at all, is an error.
func alterConfigChanges(set []string, file string, del []string) ([]kadm.AlterConfig, error) {
	values := map[string]string{}
	if file != "" {
		fromFile, err := readPropertiesFile("set-file", file)
		if err != nil {
			return nil, err
		}
		maps.Copy(values, fromFile)
	}
	given, err := parseConfigPairs("set", set)
	if err != nil {
		return nil, err
	}
	for k, v := range given {
		values[k] = *v
	}
	var out []kadm.AlterConfig
	for _, k := range slices.Sorted(maps.Keys(values)) {
		v := values[k]
		out = append(out, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
	}
	for _, k := range del {
		k = strings.TrimSpace(k)
		if k == "" {
			return nil, errors.New("invalid --delete: empty property name")
		}
		if _, both := values[k]; both {
			return nil, fmt.Errorf("property %s is both set and deleted", k)
		}
		out = append(out, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	if len(out) == 0 {
		return nil, errors.New("nothing to change: give --set, --set-file or --delete")
	}
	return out, nil
}

// readPropertiesFile reads KEY=VALUE lines of a properties file; errors
// name the file and the line, never a value.
func readPropertiesFile(flag, file string) (map[string]string, error) {
	text, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", flag, err)
	}
	props, err := config.ParseProperties(string(text))
	if err != nil {
		return nil, fmt.Errorf("--%s %s: %w", flag, file, err)
	}
	out := map[string]string{}
	for _, p := range props {
		out[p.Key] = p.Value
	}
	return out, nil
}
