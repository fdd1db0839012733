package main

import (
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/internal/join"
)

// clusterResourceNames are the names `get` accepts for Clusters, as kubectl does.
var clusterResourceNames = []string{"clusters", "cluster", "clusters.cluster.karmada.io"}

func newGetCommand(host *hostFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "get clusters [NAME...]",
		Short: "List member clusters with their readiness, nodes and capacity",
		Long: `List member clusters: NAME VERSION MODE READY, NODES (ready/total), CPU in cores and
MEMORY (allocated by pods / allocatable on nodes), AGE.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(clusterResourceNames, args[0]) {
				return fmt.Errorf("unknown resource %q: `get` lists clusters", args[0])
			}
			cfg, err := host.config()
			if err != nil {
				return err
			}
			cl, err := client.New(cfg, client.Options{Scheme: flotillascheme.New()})
			if err != nil {
				return err
			}
			list := &clusterv1alpha1.ClusterList{}
			if err := cl.List(cmd.Context(), list); err != nil {
				return fmt.Errorf("list clusters in the host at %s: %w", cfg.Host, err)
			}
			items := list.Items
			if names := args[1:]; len(names) > 0 {
				items = slices.DeleteFunc(items, func(c clusterv1alpha1.Cluster) bool { return !slices.Contains(names, c.Name) })
			}
			if len(items) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "No clusters found.")
				return nil
			}
			return join.PrintClusters(cmd.OutOrStdout(), items, time.Now())
		},
	}
}
