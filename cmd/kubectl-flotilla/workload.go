package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/flotilla-io/flotilla/internal/fleetview"
)

// workloadFlags are the flags of the commands that read a workload's pods in the members.
type workloadFlags struct {
	ns            *namespaceFlags
	selector      string
	clusters      []string
	memberTimeout time.Duration
}

func (o *workloadFlags) add(cmd *cobra.Command, host *hostFlags, all bool) {
	o.ns.add(cmd, all)
	cmd.Flags().StringVarP(&o.selector, "selector", "l", "", "Label selector of the pods (ANDed with the workload's own)")
	cmd.Flags().StringSliceVar(&o.clusters, "clusters", nil, "Member clusters to read, comma-separated (default: every Ready cluster)")
	_ = cmd.RegisterFlagCompletionFunc("clusters", host.completeClusterList)
	cmd.Flags().DurationVar(&o.memberTimeout, "member-timeout", fleetview.DefaultMemberTimeout, "How long to wait for each member (everything read from it)")
}

// request builds the request from KIND/NAME or KIND NAME (optional when optional is set).
func (o *workloadFlags) request(args []string, optional bool) (fleetview.WorkloadRequest, error) {
	req := fleetview.WorkloadRequest{Selector: o.selector, Clusters: o.clusters, MemberTimeout: o.memberTimeout,
		AllNamespaces: o.ns.allNamespaces}
	if o.memberTimeout <= 0 {
		return req, fmt.Errorf("--member-timeout must be positive, got %s", o.memberTimeout)
	}
	if len(args) > 0 || !optional {
		kind, name, err := fleetview.SplitKindName(args)
		if err != nil {
			return req, err
		}
		req.Kind, req.Name = kind, name
	}
	if req.AllNamespaces && o.ns.namespace != "" {
		return req, fmt.Errorf("-A and -n cannot be used together")
	}
	ns, err := o.ns.resolve()
	if err != nil {
		return req, err
	}
	req.Namespace = ns
	return req, nil
}

// reportMembers prints the members' errors to errOut and returns the exit verdict.
func reportMembers(errOut io.Writer, res *fleetview.WorkloadResult, printed bool) error {
	if !printed {
		for _, m := range res.Members {
			if m.Err != nil {
				fmt.Fprintf(errOut, "error: cluster %s: %v\n", m.Cluster, m.Err)
			}
		}
	}
	return res.Check()
}

func newLogsCommand(host *hostFlags) *cobra.Command {
	o := &workloadFlags{ns: &namespaceFlags{host: host}}
	var container string
	var tail int64
	cmd := &cobra.Command{
		Use:   "logs (KIND/NAME | KIND NAME | -l SELECTOR)",
		Short: "Print the logs of a workload's pods in every member cluster",
		Long: `Print the logs of a workload's pods, read from the members in parallel through the
credentials the host holds for them. The workload must exist in the host (it is the template);
its spec.selector selects the pods in each member, or -l selects pods directly. Each line is
prefixed with [CLUSTER/POD/CONTAINER]; output is in cluster, pod and container order.

A member or container that cannot be read gets a line on stderr. The command exits non-zero
when every member failed, or when the workload is in none of the members read.

Members whose nodes are kwok's (the local fleet) run no containers: their kubelet endpoint
serves no logs, and each container gets an error line.`,
		Example: `  kubectl flotilla logs deploy/web -n shop
  kubectl flotilla logs deploy web -c app --tail 20 --clusters member1,member2
  kubectl flotilla logs -l app=web -n shop`,
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && o.selector == "" {
				return fmt.Errorf("name a workload (KIND/NAME) or select pods with -l")
			}
			if tail < -1 {
				return fmt.Errorf("--tail must be -1 (all lines) or more, got %d", tail)
			}
			req, err := o.request(args, o.selector != "")
			if err != nil {
				return err
			}
			if tail == -1 && len(args) == 0 {
				tail = 10 // kubectl's default with a selector
			}
			req.Logs = &fleetview.LogOptions{Container: container, TailLines: tail}
			return showWorkload(cmd, host, req, true, func(res *fleetview.WorkloadResult) error {
				return fleetview.PrintLogs(cmd.OutOrStdout(), cmd.ErrOrStderr(), res)
			})
		},
	}
	o.add(cmd, host, false)
	cmd.Flags().StringVarP(&container, "container", "c", "", "Container to print (default: every container of each pod)")
	cmd.Flags().Int64Var(&tail, "tail", -1, "Lines of the end of each log to print; -1 prints all (10 with -l only, as kubectl)")
	return cmd
}

func newEventsCommand(host *hostFlags) *cobra.Command {
	o := &workloadFlags{ns: &namespaceFlags{host: host}}
	var output string
	cmd := &cobra.Command{
		Use:   "events [KIND/NAME | KIND NAME]",
		Short: "List the events of a workload, its pods and their owners in every member cluster",
		Long: `List events from the members in one table with a CLUSTER column, oldest first: with a
workload, the events about it, its pods and the pods' owners (a Deployment's ReplicaSets);
with -l, the events of the selected pods; otherwise every event of the namespace (or of all
namespaces with -A).

A member that fails or does not answer within --member-timeout gets an error row. The command
exits non-zero when every member failed, or when the workload is in none of the members read.`,
		Example: `  kubectl flotilla events deploy/web -n shop
  kubectl flotilla events -A --clusters member1
  kubectl flotilla events -l app=web -o yaml`,
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			req, err := o.request(args, true)
			if err != nil {
				return err
			}
			req.Events = true
			return showWorkload(cmd, host, req, output == "" || output == "wide", func(res *fleetview.WorkloadResult) error {
				return fleetview.PrintEvents(cmd.OutOrStdout(), res, output, time.Now())
			})
		},
	}
	o.add(cmd, host, true)
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: wide, json or yaml")
	return cmd
}

// describeWorkload is `describe KIND NAME`: the workload in each member, its pods and events.
func describeWorkload(cmd *cobra.Command, host *hostFlags, o *workloadFlags, args []string) error {
	req, err := o.request(args, false)
	if err != nil {
		return err
	}
	req.Events = true
	return showWorkload(cmd, host, req, true, func(res *fleetview.WorkloadResult) error {
		return fleetview.PrintWorkloadDescription(cmd.OutOrStdout(), res, time.Now())
	})
}

// showWorkload reads a workload from the members, prints it, and returns the exit verdict
// (reportMembers; printed says whether the output already shows each member's error).
func showWorkload(cmd *cobra.Command, host *hostFlags, req fleetview.WorkloadRequest, printed bool, print func(*fleetview.WorkloadResult) error) error {
	h, err := host.fleetview()
	if err != nil {
		return err
	}
	res, err := h.Workload(cmd.Context(), req)
	if err != nil {
		return err
	}
	if err := print(res); err != nil {
		return err
	}
	return reportMembers(cmd.ErrOrStderr(), res, printed)
}
