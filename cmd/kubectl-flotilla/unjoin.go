package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/flotilla-io/flotilla/internal/join"
)

func newUnjoinCommand(host *hostFlags) *cobra.Command {
	var (
		o                join.UnjoinOptions
		memberKubeconfig string
		memberContext    string
	)
	cmd := &cobra.Command{
		Use:   "unjoin NAME [--cluster-kubeconfig FILE] [--keep-workloads]",
		Short: "Remove a member cluster from the host, and the control plane's access from the member",
		Long: `Delete the Cluster NAME and wait until it is gone (its Works deleted, its execution namespace
deleted), then the host Secret flotilla-system/NAME. Waiting is bounded by --timeout.

What happens to the workloads Flotilla propagated to the member:
  by default         they are deleted from the member with the Cluster's Works (objects a
                     policy preserves with preserveResourcesOnDeletion are kept);
  --keep-workloads   they are left running in the member, orphaned: nothing updates or
                     deletes them any more. They keep the label karmada.io/managed, so a later
                     join of the same member under this host takes them over again.
If the member cannot be reached, its Works are released without cleanup either way.

With --cluster-kubeconfig it also deletes, in the member, the ServiceAccount, ClusterRole and
ClusterRoleBinding that join created, which revokes the control plane's tokens. Without it they
are left in place, and listed.`,
		Example: `  kubectl flotilla unjoin member2
  # leave its workloads running in the member, no longer managed
  kubectl flotilla unjoin member2 --keep-workloads --timeout 5m`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			var err error
			if o.Host, err = host.config(); err != nil {
				return err
			}
			if memberKubeconfig != "" {
				if o.Member, err = join.LoadKubeconfig(memberKubeconfig, memberContext); err != nil {
					return err
				}
			}
			res, err := join.Unjoin(cmd.Context(), o)
			out := cmd.OutOrStdout()
			if res != nil {
				for _, r := range res.Removed {
					fmt.Fprintf(out, "deleted %s\n", r)
				}
			}
			if err != nil {
				return err
			}
			if len(res.Removed) == 0 {
				fmt.Fprintf(out, "Cluster %s is not joined: nothing to remove in the host.\n", o.Name)
			}
			if len(res.NotRemoved) > 0 {
				fmt.Fprintf(out, "Not removed from the member (no --cluster-kubeconfig given); while they are there, the control plane's token keeps working:\n")
				for _, l := range res.NotRemoved {
					fmt.Fprintf(out, "  %s\n", l)
				}
				fmt.Fprintf(out, "Remove them with: kubectl flotilla unjoin %s --cluster-kubeconfig <member kubeconfig>\n", o.Name)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&memberKubeconfig, "cluster-kubeconfig", "", "Kubeconfig of the member cluster, to remove what join created there")
	f.StringVar(&memberContext, "cluster-context", "", "Context of the member kubeconfig to use (default: its current context)")
	f.DurationVar(&o.Timeout, "timeout", join.DefaultUnjoinTimeout, "How long to wait for the Cluster to be deleted")
	f.BoolVar(&o.KeepWorkloads, "keep-workloads", false, "Leave the propagated objects running in the member (orphaned) instead of deleting them")
	return cmd
}
