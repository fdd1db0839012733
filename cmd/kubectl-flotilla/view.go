package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/internal/fleetview"
)

// namespaceFlags are kubectl's -n/--namespace and, where it makes sense, -A.
type namespaceFlags struct {
	host          *hostFlags
	namespace     string
	allNamespaces bool
}

func (n *namespaceFlags) add(cmd *cobra.Command, all bool) {
	cmd.Flags().StringVarP(&n.namespace, "namespace", "n", "", "Namespace (default: the namespace of the host kubeconfig's context, else default)")
	if all {
		cmd.Flags().BoolVarP(&n.allNamespaces, "all-namespaces", "A", false, "List across all namespaces")
	}
}

// resolve returns -n, else the host context's namespace, as kubectl does.
func (n *namespaceFlags) resolve() (string, error) {
	if n.namespace != "" {
		return n.namespace, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = n.host.kubeconfig
	ns, _, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: n.host.context}).Namespace()
	if err != nil {
		return "", err
	}
	return ns, nil
}

func checkOutput(o string) error {
	switch o {
	case "", "wide", "json", "yaml":
		return nil
	}
	return fmt.Errorf("unknown output format %q: use -o wide, json or yaml", o)
}

func (h *hostFlags) fleetview() (*fleetview.Host, error) {
	cfg, err := h.config()
	if err != nil {
		return nil, err
	}
	return fleetview.NewHost(cfg)
}

// prepare checks -o, resolves the namespace and connects to the host: what every command
// that reads a namespace of the fleet does first.
func prepare(host *hostFlags, ns *namespaceFlags, output string) (string, *fleetview.Host, error) {
	if err := checkOutput(output); err != nil {
		return "", nil, err
	}
	namespace, err := ns.resolve()
	if err != nil {
		return "", nil, err
	}
	h, err := host.fleetview()
	if err != nil {
		return "", nil, err
	}
	return namespace, h, nil
}

// listClusters lists the host's Clusters.
func (h *hostFlags) listClusters(ctx context.Context) (*clusterv1alpha1.ClusterList, error) {
	cfg, err := h.config()
	if err != nil {
		return nil, err
	}
	cl, err := client.New(cfg, client.Options{Scheme: flotillascheme.New()})
	if err != nil {
		return nil, err
	}
	list := &clusterv1alpha1.ClusterList{}
	if err := cl.List(ctx, list); err != nil {
		return nil, fmt.Errorf("list clusters in the host at %s: %w", cfg.Host, err)
	}
	return list, nil
}

func newStatusCommand(host *hostFlags) *cobra.Command {
	ns := &namespaceFlags{host: host}
	var output string
	var watch bool
	cmd := &cobra.Command{
		Use:   "status (KIND/NAME | KIND NAME)",
		Short: "Show a template's propagation: policy, binding and each member's Work",
		Long: `Show how a template propagates, as a tree: the template, the policy that claims it, its
ResourceBinding or ClusterResourceBinding (Scheduled, FullyApplied, READY clusters), then one
line per member cluster: the Work's Applied condition, the reflected health, ready replicas
when the reflected status has them, and the last error.

With --watch, the tree is printed again whenever the binding or its Works change.`,
		Example: `  kubectl flotilla status deployment/web -n shop
  kubectl flotilla status deploy web -n shop --watch
  kubectl flotilla status clusterrole/reader -o yaml`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, name, err := fleetview.SplitKindName(args)
			if err != nil {
				return err
			}
			namespace, h, err := prepare(host, ns, output)
			if err != nil {
				return err
			}
			req := fleetview.StatusRequest{Kind: kind, Namespace: namespace, Name: name}
			if watch {
				return h.WatchStatus(cmd.Context(), cmd.OutOrStdout(), req, output)
			}
			tree, err := h.Status(cmd.Context(), req)
			if err != nil {
				return err
			}
			return fleetview.PrintStatus(cmd.OutOrStdout(), tree, output)
		},
	}
	ns.add(cmd, false)
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: wide, json or yaml")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "Print the tree again when the binding or its Works change")
	return cmd
}

// getMembers is `get KIND [NAME]`: the members' objects side by side.
func getMembers(cmd *cobra.Command, host *hostFlags, ns *namespaceFlags, o *getFlags, args []string) error {
	if len(args) > 2 {
		return fmt.Errorf("expected KIND [NAME], got %d arguments", len(args))
	}
	namespace, h, err := prepare(host, ns, o.output)
	if err != nil {
		return err
	}
	req := fleetview.GetRequest{Resource: args[0], Namespace: namespace, AllNamespaces: ns.allNamespaces,
		Selector: o.selector, Clusters: o.clusters, MemberTimeout: o.memberTimeout,
		Objects: o.output == "json" || o.output == "yaml"}
	if len(args) == 2 {
		req.Name = args[1]
	}
	res, err := h.Get(cmd.Context(), req)
	if err != nil {
		return err
	}
	if len(res.Members) == 0 {
		return fmt.Errorf("no Ready member clusters: name them with --clusters")
	}
	if res.Empty() && res.Failed() == 0 && o.output != "json" && o.output != "yaml" {
		fmt.Fprintln(cmd.ErrOrStderr(), "No resources found.")
		return nil
	}
	if err := fleetview.PrintGet(cmd.OutOrStdout(), res, o.output); err != nil {
		return err
	}
	if n := res.Failed(); n > 0 {
		if o.output == "json" || o.output == "yaml" {
			for _, m := range res.Members {
				if m.Err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "error: cluster %s: %v\n", m.Cluster, m.Err)
				}
			}
		}
		return fmt.Errorf("%d of %d member clusters failed", n, len(res.Members))
	}
	return nil
}

type getFlags struct {
	output, selector string
	clusters         []string
	memberTimeout    time.Duration
}

func newDescribeCommand(host *hostFlags) *cobra.Command {
	o := &workloadFlags{ns: &namespaceFlags{host: host}}
	cmd := &cobra.Command{
		Use:   "describe (cluster NAME | KIND/NAME | KIND NAME)",
		Short: "Describe a member cluster, or a workload in every member cluster",
		Long: `describe cluster NAME shows a Cluster: conditions, version, capacity, nodes, taints and the
bindings placed on it.

describe KIND NAME shows a workload (its template must exist in the host) in each member,
read in parallel through the host's member credentials: replicas, images, conditions, its
pods (selected by the template's spec.selector) and the events about it, its pods and their
owners. A member that fails or does not answer within --member-timeout shows its error; the
command exits non-zero when every member failed or none has the workload.`,
		Example: `  kubectl flotilla describe cluster member1
  kubectl flotilla describe deploy/web -n shop
  kubectl flotilla describe deployment web --clusters member1,member2`,
		Args: cobra.RangeArgs(1, 2),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			switch len(args) {
			case 0:
				return []string{"cluster"}, cobra.ShellCompDirectiveNoFileComp
			case 1:
				if slices.Contains(clusterResourceNames, args[0]) {
					return host.clusterNames(cmd), cobra.ShellCompDirectiveNoFileComp
				}
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(clusterResourceNames, args[0]) && !strings.HasPrefix(args[0], "cluster/") &&
				!strings.HasPrefix(args[0], "clusters/") {
				return describeWorkload(cmd, host, o, args)
			}
			name := ""
			if k, n, ok := strings.Cut(args[0], "/"); ok && len(args) == 1 {
				_, name = k, n
			} else if len(args) == 2 {
				name = args[1]
			}
			if name == "" {
				return fmt.Errorf("expected describe cluster NAME")
			}
			h, err := host.fleetview()
			if err != nil {
				return err
			}
			d, err := h.DescribeCluster(cmd.Context(), name)
			if err != nil {
				return err
			}
			return fleetview.PrintClusterDescription(cmd.OutOrStdout(), d, time.Now())
		},
	}
	o.add(cmd, host, false)
	return cmd
}

// clusterNames lists the host's Cluster names, for shell completion; nil when the host
// cannot be read.
func (h *hostFlags) clusterNames(cmd *cobra.Command) []string {
	list, err := h.listClusters(cmd.Context())
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(list.Items))
	for _, c := range list.Items {
		names = append(names, c.Name)
	}
	return names
}

// completeClusterList completes the last name of a comma-separated list of Clusters.
func (h *hostFlags) completeClusterList(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	prefix := ""
	if i := strings.LastIndex(toComplete, ","); i >= 0 {
		prefix = toComplete[:i+1]
	}
	var out []string
	for _, n := range h.clusterNames(cmd) {
		out = append(out, prefix+n)
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}
