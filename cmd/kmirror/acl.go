package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/auth"
)

func init() {
	addCommand(newACLCommand())
}

// aclFlags are the flags of every `kmirror acl` subcommand: the cluster,
// the ACL's resource (--topic, --group, --transactional-id, --cluster and
// --resource-pattern-type) and entry (principals, hosts, operations).
type aclFlags struct {
	clientFlags
	timeout time.Duration

	topics, groups, txnIDs []string
	cluster                bool
	patternType            string

	allowPrincipals, denyPrincipals []string
	allowHosts, denyHosts           []string
	operations                      []string
	principals                      []string // list: filter
}

// run connects a client, bounds fn by --timeout and closes the client.
func (f *aclFlags) run(cmd *cobra.Command, fn func(ctx context.Context, cl *kgo.Client, format outputFormat) error) error {
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

func newACLCommand() *cobra.Command {
	f := &aclFlags{}
	cmd := &cobra.Command{
		Use:   "acl",
		Short: "Add, list and remove ACLs (kafka-acls)",
		Long: `Manage the cluster's access control lists, as kafka-acls.sh does.

An ACL allows or denies a principal (User:alice, User:* for everyone) from a
host (* for any) an operation (Read, Write, Create, Delete, Alter, Describe,
ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, All) on a
resource: a topic, a consumer group, a transactional id or the cluster, named
literally or by prefix (--resource-pattern-type prefixed). A DENY wins over
any ALLOW.`,
		Args: cobra.NoArgs,
	}
	f.clientFlags.register(cmd, true)
	pf := cmd.PersistentFlags()
	pf.DurationVar(&f.timeout, "timeout", defaultAdminTimeout, "how long to wait for the cluster to answer")
	pf.StringSliceVar(&f.topics, "topic", nil, "topic resource name (or prefix)")
	pf.StringSliceVar(&f.groups, "group", nil, "consumer group resource name (or prefix)")
	pf.StringSliceVar(&f.txnIDs, "transactional-id", nil, "transactional id resource name (or prefix)")
	pf.BoolVar(&f.cluster, "cluster", false, "the cluster resource")
	pf.StringSliceVar(&f.allowPrincipals, "allow-principal", nil, "principal to allow, e.g. User:alice")
	pf.StringSliceVar(&f.denyPrincipals, "deny-principal", nil, "principal to deny")
	pf.StringSliceVar(&f.allowHosts, "allow-host", nil, "host the allowed principals connect from (default *)")
	pf.StringSliceVar(&f.denyHosts, "deny-host", nil, "host the denied principals connect from (default *)")
	pf.StringSliceVar(&f.operations, "operation", nil, "operation: Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, All")
	cmd.AddCommand(newACLAddCommand(f), newACLListCommand(f), newACLRemoveCommand(f))
	return cmd
}

// resource is one resource pattern the flags name.
type aclResource struct {
	rt   kmsg.ACLResourceType
	name string
}

// resources returns the resources of the flags.
func (f *aclFlags) resources() []aclResource {
	var out []aclResource
	for _, n := range f.topics {
		out = append(out, aclResource{kmsg.ACLResourceTypeTopic, n})
	}
	for _, n := range f.groups {
		out = append(out, aclResource{kmsg.ACLResourceTypeGroup, n})
	}
	for _, n := range f.txnIDs {
		out = append(out, aclResource{kmsg.ACLResourceTypeTransactionalId, n})
	}
	if f.cluster {
		out = append(out, aclResource{kmsg.ACLResourceTypeCluster, auth.ClusterResourceName})
	}
	return out
}

// pattern parses --resource-pattern-type (def when unset).
func (f *aclFlags) pattern(def kmsg.ACLResourcePatternType) (kmsg.ACLResourcePatternType, error) {
	if f.patternType == "" {
		return def, nil
	}
	p, err := kmsg.ParseACLResourcePatternType(f.patternType)
	if err != nil || p == kmsg.ACLResourcePatternTypeUnknown {
		return 0, fmt.Errorf("invalid --resource-pattern-type %q: want literal, prefixed, match or any", f.patternType)
	}
	return p, nil
}

// ops parses --operation.
func (f *aclFlags) ops() ([]kmsg.ACLOperation, error) {
	var out []kmsg.ACLOperation
	for _, s := range f.operations {
		op, err := auth.ParseOperation(s)
		if err != nil || op == kmsg.ACLOperationUnknown {
			return nil, fmt.Errorf("invalid --operation %q", s)
		}
		out = append(out, op)
	}
	return out, nil
}

// bindings returns every ACL the flags describe: each allowed and denied
// principal, on each of its hosts, for each operation and resource.
func (f *aclFlags) bindings(pt kmsg.ACLResourcePatternType) ([]auth.Binding, error) {
	ops, err := f.ops()
	if err != nil {
		return nil, err
	}
	res := f.resources()
	switch {
	case len(res) == 0:
		return nil, errors.New("name a resource: --topic, --group, --transactional-id or --cluster")
	case len(ops) == 0:
		return nil, errors.New("name the operations with --operation")
	case len(f.allowPrincipals)+len(f.denyPrincipals) == 0:
		return nil, errors.New("name the principals with --allow-principal or --deny-principal")
	}
	var out []auth.Binding
	add := func(principals, hosts []string, perm kmsg.ACLPermissionType) {
		if len(hosts) == 0 {
			hosts = []string{auth.WildcardHost}
		}
		for _, p := range principals {
			for _, h := range hosts {
				for _, op := range ops {
					for _, r := range res {
						out = append(out, auth.Binding{ResourceType: r.rt, ResourceName: r.name, PatternType: pt,
							Principal: p, Host: h, Operation: op, Permission: perm})
					}
				}
			}
		}
	}
	add(f.allowPrincipals, f.allowHosts, kmsg.ACLPermissionTypeAllow)
	add(f.denyPrincipals, f.denyHosts, kmsg.ACLPermissionTypeDeny)
	return out, nil
}

// aclRow is one ACL in list output.
type aclRow struct {
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	Operation    string `json:"operation"`
	Permission   string `json:"permission"`
	ResourceType string `json:"resource_type"`
	ResourceName string `json:"resource_name"`
	PatternType  string `json:"pattern_type"`
}

func rowOf(b auth.Binding) aclRow {
	return aclRow{Principal: b.Principal, Host: b.Host, Operation: auth.OperationName(b.Operation), Permission: b.Permission.String(),
		ResourceType: b.ResourceType.String(), ResourceName: b.ResourceName, PatternType: b.PatternType.String()}
}

func writeACLs(cmd *cobra.Command, format outputFormat, rows []aclRow) error {
	if format == formatJSON {
		if rows == nil {
			rows = []aclRow{}
		}
		return writeJSON(cmd.OutOrStdout(), rows)
	}
	cells := make([][]string, len(rows))
	for i, r := range rows {
		cells[i] = []string{tableCell(r.Principal), tableCell(r.Host), r.Operation, r.Permission, r.ResourceType, tableCell(r.ResourceName), r.PatternType}
	}
	return writeTable(cmd.OutOrStdout(), []string{"PRINCIPAL", "HOST", "OPERATION", "PERMISSION", "RESOURCE-TYPE", "RESOURCE", "PATTERN"}, cells)
}

func newACLAddCommand(f *aclFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "add",
		Short: "Create ACLs: every principal x host x operation x resource named by the flags",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pt, err := f.pattern(kmsg.ACLResourcePatternTypeLiteral)
			if err != nil {
				return err
			}
			bs, err := f.bindings(pt)
			if err != nil {
				return err
			}
			for _, b := range bs {
				if err := b.Validate(); err != nil {
					return fmt.Errorf("acl %s: %w", b, err)
				}
			}
			return f.run(cmd, func(ctx context.Context, cl *kgo.Client, format outputFormat) error {
				req := kmsg.NewPtrCreateACLsRequest()
				for _, b := range bs {
					c := kmsg.NewCreateACLsRequestCreation()
					c.ResourceType, c.ResourceName, c.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
					c.Principal, c.Host, c.Operation, c.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
					req.Creations = append(req.Creations, c)
				}
				resp, err := req.RequestWith(ctx, cl)
				if err != nil {
					return fmt.Errorf("create acls: %w", err)
				}
				var errs []error
				var rows []aclRow
				for i, r := range resp.Results {
					if i >= len(bs) {
						break
					}
					if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
						errs = append(errs, fmt.Errorf("create acl %s: %w", bs[i], brokerError(err, deref(r.ErrorMessage))))
						continue
					}
					rows = append(rows, rowOf(bs[i]))
				}
				return errors.Join(append([]error{writeACLs(cmd, format, rows)}, errs...)...)
			})
		},
	}
	cmd.Flags().StringVar(&f.patternType, "resource-pattern-type", "", "literal (default) or prefixed")
	return cmd
}

// filters returns the DescribeAcls/DeleteAcls filters the flags describe:
// one per resource (any resource without one), principal and operation
// (any when not given).
func (f *aclFlags) filters(pt kmsg.ACLResourcePatternType) ([]auth.Filter, error) {
	ops, err := f.ops()
	if err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		ops = []kmsg.ACLOperation{kmsg.ACLOperationAny}
	}
	res := f.resources()
	type who struct {
		principal *string
		host      *string
		perm      kmsg.ACLPermissionType
	}
	var whos []who
	addWho := func(principals, hosts []string, perm kmsg.ACLPermissionType) {
		for _, p := range principals {
			if len(hosts) == 0 {
				whos = append(whos, who{principal: &p, perm: perm})
			}
			for _, h := range hosts {
				whos = append(whos, who{principal: &p, host: &h, perm: perm})
			}
		}
	}
	addWho(f.allowPrincipals, f.allowHosts, kmsg.ACLPermissionTypeAllow)
	addWho(f.denyPrincipals, f.denyHosts, kmsg.ACLPermissionTypeDeny)
	addWho(f.principals, nil, kmsg.ACLPermissionTypeAny)
	if len(whos) == 0 {
		whos = []who{{perm: kmsg.ACLPermissionTypeAny}}
	}
	var out []auth.Filter
	for _, w := range whos {
		for _, op := range ops {
			base := auth.Filter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: pt, Principal: w.principal, Host: w.host, Operation: op, Permission: w.perm}
			if len(res) == 0 {
				out = append(out, base)
				continue
			}
			for _, r := range res {
				fl := base
				name := r.name
				fl.ResourceType, fl.ResourceName = r.rt, &name
				out = append(out, fl)
			}
		}
	}
	return out, nil
}

func newACLListCommand(f *aclFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List ACLs, all or those of the given resources, principals and operations",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pt, err := f.pattern(kmsg.ACLResourcePatternTypeAny)
			if err != nil {
				return err
			}
			filters, err := f.filters(pt)
			if err != nil {
				return err
			}
			return f.run(cmd, func(ctx context.Context, cl *kgo.Client, format outputFormat) error {
				seen := map[auth.Binding]bool{}
				var rows []aclRow
				for _, fl := range filters {
					req := kmsg.NewPtrDescribeACLsRequest()
					req.ResourceType, req.ResourceName, req.ResourcePatternType = fl.ResourceType, fl.ResourceName, fl.PatternType
					req.Principal, req.Host, req.Operation, req.PermissionType = fl.Principal, fl.Host, fl.Operation, fl.Permission
					resp, err := req.RequestWith(ctx, cl)
					if err != nil {
						return fmt.Errorf("describe acls: %w", err)
					}
					if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
						return fmt.Errorf("describe acls: %w", brokerError(err, deref(resp.ErrorMessage)))
					}
					for _, r := range resp.Resources {
						for _, a := range r.ACLs {
							b := auth.Binding{ResourceType: r.ResourceType, ResourceName: r.ResourceName, PatternType: r.ResourcePatternType,
								Principal: a.Principal, Host: a.Host, Operation: a.Operation, Permission: a.PermissionType}
							if !seen[b] {
								seen[b] = true
								rows = append(rows, rowOf(b))
							}
						}
					}
				}
				return writeACLs(cmd, format, rows)
			})
		},
	}
	cmd.Flags().StringVar(&f.patternType, "resource-pattern-type", "", "any (default), literal, prefixed or match (every ACL that applies to the named resource)")
	cmd.Flags().StringSliceVar(&f.principals, "principal", nil, "only ACLs of this principal")
	return cmd
}

func newACLRemoveCommand(f *aclFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "remove",
		Short: "Remove the ACLs that match the flags (resource, principals, hosts, operations)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pt, err := f.pattern(kmsg.ACLResourcePatternTypeLiteral)
			if err != nil {
				return err
			}
			if len(f.resources()) == 0 && len(f.allowPrincipals)+len(f.denyPrincipals) == 0 {
				return errors.New("name what to remove: a resource (--topic, --group, --transactional-id, --cluster) or principals")
			}
			filters, err := f.filters(pt)
			if err != nil {
				return err
			}
			return f.run(cmd, func(ctx context.Context, cl *kgo.Client, format outputFormat) error {
				req := kmsg.NewPtrDeleteACLsRequest()
				for _, fl := range filters {
					df := kmsg.NewDeleteACLsRequestFilter()
					df.ResourceType, df.ResourceName, df.ResourcePatternType = fl.ResourceType, fl.ResourceName, fl.PatternType
					df.Principal, df.Host, df.Operation, df.PermissionType = fl.Principal, fl.Host, fl.Operation, fl.Permission
					req.Filters = append(req.Filters, df)
				}
				resp, err := req.RequestWith(ctx, cl)
				if err != nil {
					return fmt.Errorf("delete acls: %w", err)
				}
				var errs []error
				var rows []aclRow
				for _, r := range resp.Results {
					if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
						errs = append(errs, fmt.Errorf("delete acls: %w", brokerError(err, deref(r.ErrorMessage))))
						continue
					}
					for _, m := range r.MatchingACLs {
						rows = append(rows, rowOf(auth.Binding{ResourceType: m.ResourceType, ResourceName: m.ResourceName, PatternType: m.ResourcePatternType,
							Principal: m.Principal, Host: m.Host, Operation: m.Operation, Permission: m.PermissionType}))
					}
				}
				return errors.Join(append([]error{writeACLs(cmd, format, rows)}, errs...)...)
			})
		},
	}
	cmd.Flags().StringVar(&f.patternType, "resource-pattern-type", "", "literal (default), prefixed, match or any")
	return cmd
}

// deref returns *s, or "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return strings.TrimSpace(*s)
}
