package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/auth"
)

func init() {
	addCommand(newUserCommand())
}

// userFlags are the flags of every `kmirror user` subcommand.
type userFlags struct {
	clientFlags
	timeout time.Duration
}

func (f *userFlags) run(cmd *cobra.Command, fn func(ctx context.Context, cl *kgo.Client, format outputFormat) error) error {
	format, err := f.format()
	if err != nil {
		return err
	}
	cl, err := f.newClient()
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	return f.explain(fn(ctx, cl, format), f.timeout)
}

func newUserCommand() *cobra.Command {
	f := &userFlags{}
	cmd := &cobra.Command{
		Use:   "user",
		Short: "Create, delete and list SCRAM users (kafka-configs --entity-type users)",
		Long: `Manage the SCRAM-SHA-256 and SCRAM-SHA-512 credentials clients authenticate
with. The password never leaves this command: it sends a random salt and the
salted password (RFC 5802), from which the cluster keeps only the keys it
verifies logins with.`,
		Args: cobra.NoArgs,
	}
	f.clientFlags.register(cmd, true)
	cmd.PersistentFlags().DurationVar(&f.timeout, "timeout", defaultAdminTimeout, "how long to wait for the cluster to answer")
	cmd.AddCommand(newUserCreateCommand(f), newUserDeleteCommand(f), newUserListCommand(f))
	return cmd
}

// mechanisms parses --mechanism values (both SCRAM mechanisms when none).
func mechanisms(names []string) ([]auth.ScramMechanism, error) {
	if len(names) == 0 {
		return []auth.ScramMechanism{auth.ScramSHA256, auth.ScramSHA512}, nil
	}
	var out []auth.ScramMechanism
	for _, n := range names {
		m, ok := auth.ScramMechanismByName(n)
		if !ok {
			return nil, fmt.Errorf("invalid --mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", n)
		}
		out = append(out, m)
	}
	return out, nil
}

// readPassword returns the password from --password, --password-file, or
// the first line of standard input.
func readPassword(cmd *cobra.Command, flag, file string) (string, error) {
	switch {
	case flag != "" && file != "":
		return "", errors.New("give --password or --password-file, not both")
	case flag != "":
		return flag, nil
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--password-file: %w", err)
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the password from standard input: %w", err)
	}
	if line = strings.TrimRight(line, "\r\n"); line == "" {
		return "", errors.New("no password: give --password, --password-file or one line on standard input")
	}
	return line, nil
}

// userResult is one user's outcome of create or delete.
type userResult struct {
	User       string `json:"user"`
	Mechanisms string `json:"mechanisms"`
	Result     string `json:"result"`
}

func writeUserResults(cmd *cobra.Command, format outputFormat, rows []userResult) error {
	if format == formatJSON {
		return writeJSON(cmd.OutOrStdout(), rows)
	}
	cells := make([][]string, len(rows))
	for i, r := range rows {
		cells[i] = []string{tableCell(r.User), r.Mechanisms, r.Result}
	}
	return writeTable(cmd.OutOrStdout(), []string{"USER", "MECHANISMS", "RESULT"}, cells)
}

// alter sends an AlterUserScramCredentials request and reports per user.
func alter(ctx context.Context, cmd *cobra.Command, cl *kgo.Client, format outputFormat, req *kmsg.AlterUserSCRAMCredentialsRequest, mechs, verb string) error {
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("alter user scram credentials: %w", err)
	}
	var errs []error
	var rows []userResult
	for _, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			errs = append(errs, fmt.Errorf("user %s: %w", r.User, brokerError(err, deref(r.ErrorMessage))))
			continue
		}
		rows = append(rows, userResult{User: r.User, Mechanisms: mechs, Result: verb})
	}
	return errors.Join(append([]error{writeUserResults(cmd, format, rows)}, errs...)...)
}

func mechanismNames(ms []auth.ScramMechanism) string {
	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
	}
	return strings.Join(names, ",")
}

func newUserCreateCommand(f *userFlags) *cobra.Command {
	var mechs []string
	var password, passwordFile string
	var iterations int
	cmd := &cobra.Command{
		Use:   "create USER...",
		Short: "Set users' SCRAM passwords (creating or replacing the credentials)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, users []string) error {
			ms, err := mechanisms(mechs)
			if err != nil {
				return err
			}
			pw, err := readPassword(cmd, password, passwordFile)
			if err != nil {
				return err
			}
			req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
			for _, u := range users {
				for _, m := range ms {
					up, err := auth.NewScramUpsertion(m, u, pw, iterations)
					if err != nil {
						return fmt.Errorf("--iterations: %w", err)
					}
					req.Upsertions = append(req.Upsertions, up)
				}
			}
			return f.run(cmd, func(ctx context.Context, cl *kgo.Client, format outputFormat) error {
				return alter(ctx, cmd, cl, format, req, mechanismNames(ms), "created")
			})
		},
	}
	cmd.Flags().StringSliceVar(&mechs, "mechanism", nil, "SCRAM-SHA-256 and/or SCRAM-SHA-512 (default both)")
	cmd.Flags().StringVar(&password, "password", "", "the password (visible to other local users in the process list: prefer --password-file or standard input)")
	cmd.Flags().StringVar(&passwordFile, "password-file", "", "file whose first line is the password")
	cmd.Flags().IntVar(&iterations, "iterations", auth.MinScramIterations, "PBKDF2 iterations (4096 to 16384)")
	return cmd
}

func newUserDeleteCommand(f *userFlags) *cobra.Command {
	var mechs []string
	cmd := &cobra.Command{
		Use:   "delete USER...",
		Short: "Delete users' SCRAM credentials (every mechanism they have, or those of --mechanism)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, users []string) error {
			return f.run(cmd, func(ctx context.Context, cl *kgo.Client, format outputFormat) error {
				req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
				var named []auth.ScramMechanism
				if len(mechs) > 0 {
					ms, err := mechanisms(mechs)
					if err != nil {
						return err
					}
					named = ms
				}
				have, err := describeUsers(ctx, cl, users)
				if err != nil {
					return err
				}
				var errs []error
				for _, u := range users {
					ms := named
					if ms == nil {
						for _, c := range have[u] {
							if m, ok := auth.ScramMechanismByCode(c.Mechanism); ok {
								ms = append(ms, m)
							}
						}
						if len(ms) == 0 {
							errs = append(errs, fmt.Errorf("user %s: %w (no SCRAM credentials)", u, kerr.ResourceNotFound))
							continue
						}
					}
					for _, m := range ms {
						d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
						d.Name, d.Mechanism = u, m.Code
						req.Deletions = append(req.Deletions, d)
					}
				}
				if len(req.Deletions) == 0 {
					return errors.Join(errs...)
				}
				return errors.Join(append([]error{alter(ctx, cmd, cl, format, req, mechanismNames(named), "deleted")}, errs...)...)
			})
		},
	}
	cmd.Flags().StringSliceVar(&mechs, "mechanism", nil, "only these mechanisms (SCRAM-SHA-256, SCRAM-SHA-512)")
	return cmd
}

// describeUsers returns the credential infos of users (all users when
// none are named); a named user without credentials maps to nothing.
func describeUsers(ctx context.Context, cl *kgo.Client, users []string) (map[string][]kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo, error) {
	req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for _, u := range dedupe(users) {
		ru := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		ru.Name = u
		req.Users = append(req.Users, ru)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("describe user scram credentials: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("describe user scram credentials: %w", brokerError(err, deref(resp.ErrorMessage)))
	}
	out := map[string][]kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{}
	for _, r := range resp.Results {
		if r.ErrorCode == kerr.ResourceNotFound.Code {
			continue
		}
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return nil, fmt.Errorf("describe user %s: %w", r.User, brokerError(err, deref(r.ErrorMessage)))
		}
		out[r.User] = r.CredentialInfos
	}
	return out, nil
}

// userCredential is one credential in list output: never a salt or key.
type userCredential struct {
	User       string `json:"user"`
	Mechanism  string `json:"mechanism"`
	Iterations int32  `json:"iterations"`
}

func newUserListCommand(f *userFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "list [USER...]",
		Short: "List SCRAM users with their mechanisms and iterations",
		RunE: func(cmd *cobra.Command, users []string) error {
			return f.run(cmd, func(ctx context.Context, cl *kgo.Client, format outputFormat) error {
				have, err := describeUsers(ctx, cl, users)
				if err != nil {
					return err
				}
				names := make([]string, 0, len(have))
				for u := range have {
					names = append(names, u)
				}
				slices.Sort(names)
				rows := []userCredential{}
				for _, u := range names {
					for _, c := range have[u] {
						m, _ := auth.ScramMechanismByCode(c.Mechanism)
						rows = append(rows, userCredential{User: u, Mechanism: m.Name, Iterations: c.Iterations})
					}
				}
				var missing []error
				for _, u := range users {
					if _, ok := have[u]; !ok {
						missing = append(missing, fmt.Errorf("user %s: %w (no SCRAM credentials)", u, kerr.ResourceNotFound))
					}
				}
				var perr error
				if format == formatJSON {
					perr = writeJSON(cmd.OutOrStdout(), rows)
				} else {
					cells := make([][]string, len(rows))
					for i, r := range rows {
						cells[i] = []string{tableCell(r.User), r.Mechanism, strconv.Itoa(int(r.Iterations))}
					}
					perr = writeTable(cmd.OutOrStdout(), []string{"USER", "MECHANISM", "ITERATIONS"}, cells)
				}
				return errors.Join(append([]error{perr}, missing...)...)
			})
		},
	}
}
