package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The options every client command (topic, produce, consume, group,
// mirror, acl, user) shares: which cluster to talk to, how to log in to it,
// and how to print what it answered. They live with the
// output code because both are the command's contract with the person or
// script that runs it.

// outputFormat is how a client command prints its result: aligned tables for
// people, JSON for scripts.
type outputFormat string

const (
	formatTable outputFormat = "table"
	formatJSON  outputFormat = "json"
)

// defaultBootstrap is where a client command looks for a cluster when no
// --bootstrap-server is given: the address `kmirror server` listens on by
// default.
const defaultBootstrap = "localhost:9092"

// clientFlags holds the values of the flags shared by client commands. One
// value per command tree, so commands built for tests never share flag state.
type clientFlags struct {
	bootstrap string
	output    string
	// commandConfig is the client properties file of a secured cluster
	// (command_config.go).
	commandConfig string
}

// register adds --bootstrap-server, --command-config and -o/--output to
// cmd. A parent command registers them as persistent flags so that
// `kmirror topic --bootstrap-server X list` and `kmirror topic list
// --bootstrap-server X` both work.
func (f *clientFlags) register(cmd *cobra.Command, persistent bool) {
	fs := cmd.Flags()
	if persistent {
		fs = cmd.PersistentFlags()
	}
	fs.StringVar(&f.bootstrap, "bootstrap-server", defaultBootstrap,
		"comma-separated host:port list of brokers to connect to first")
	fs.StringVar(&f.commandConfig, "command-config", "", commandConfigUsage)
	fs.StringVarP(&f.output, "output", "o", string(formatTable), "output format: table or json")
}

// securityOpts returns the franz-go options of --command-config (TLS,
// SASL); none without it.
func (f *clientFlags) securityOpts() ([]kgo.Opt, error) {
	return commandConfigOpts(f.commandConfig)
}

// format validates -o and returns it.
func (f *clientFlags) format() (outputFormat, error) {
	switch outputFormat(f.output) {
	case formatTable, formatJSON:
		return outputFormat(f.output), nil
	}
	return "", fmt.Errorf("invalid --output %q: want table or json", f.output)
}

// seeds returns the bootstrap addresses, rejecting an empty list so that the
// client does not silently fall back to its own default.
func (f *clientFlags) seeds() ([]string, error) {
	var seeds []string
	for _, s := range strings.Split(f.bootstrap, ",") {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	if len(seeds) == 0 {
		return nil, errors.New("--bootstrap-server is empty")
	}
	return seeds, nil
}

// newClient connects a franz-go client to the bootstrap servers, secured as
// --command-config says, with the command's extra options.
func (f *clientFlags) newClient(opts ...kgo.Opt) (*kgo.Client, error) {
	seeds, err := f.seeds()
	if err != nil {
		return nil, err
	}
	sec, err := f.securityOpts()
	if err != nil {
		return nil, err
	}
	all := append(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, sec...), opts...)
	cl, err := kgo.NewClient(all...)
	if err != nil {
		return nil, fmt.Errorf("create client: %w", err)
	}
	return cl, nil
}

// explain turns a client error into one a person can act on: a deadline that
// expired means the cluster did not answer in time, which the raw
// "context deadline exceeded" does not say.
func (f *clientFlags) explain(err error, timeout time.Duration) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer from the cluster at %s within %s: %w", f.bootstrap, timeout, err)
	}
	return err
}

// brokerError formats a per-resource error from a response together with the
// broker's message, which often says more than the code's generic text.
func brokerError(err error, message string) error {
	if err == nil {
		return nil
	}
	var ke *kerr.Error
	if message != "" && errors.As(err, &ke) && !strings.Contains(ke.Description, message) {
		return fmt.Errorf("%w (%s)", err, message)
	}
	return err
}

// writeTable prints rows under header with columns aligned by two spaces.
// Cells must not contain tabs or newlines; callers quote user data that may.
func writeTable(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	writeRow := func(cells []string) {
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	writeRow(header)
	for _, r := range rows {
		writeRow(r)
	}
	return tw.Flush()
}

// writeResults prints what a command did to several items: results as
// JSON, or as a table (header, one row per result) when there are any, and
// returns the print error joined with errs, the items that failed. The
// items that succeeded are printed even when others failed.
func writeResults[T any](w io.Writer, format outputFormat, results []T, header []string, row func(T) []string, errs []error) error {
	var perr error
	if format == formatJSON {
		perr = writeJSON(w, results)
	} else if len(results) > 0 {
		rows := make([][]string, len(results))
		for i, r := range results {
			rows[i] = row(r)
		}
		perr = writeTable(w, header, rows)
	}
	return errors.Join(append([]error{perr}, errs...)...)
}

// writeJSON prints v as indented JSON followed by a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// tableCell makes s safe for one table cell: tabs and line breaks would break
// the column alignment, so they are shown escaped.
func tableCell(s string) string {
	if !strings.ContainsAny(s, "\t\r\n") {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// joinInt32s renders a broker-id list such as replicas or ISR as "1,2,3".
func joinInt32s(ids []int32) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(int64(id), 10)
	}
	return strings.Join(parts, ",")
}
