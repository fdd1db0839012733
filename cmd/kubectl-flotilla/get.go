package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/fleetview"
	"github.com/flotilla-io/flotilla/internal/join"
)

// clusterResourceNames are the names `get` accepts for Clusters, as kubectl does.
var clusterResourceNames = []string{"clusters", "cluster", "clusters.cluster.karmada.io"}

func newGetCommand(host *hostFlags) *cobra.Command {
	ns := &namespaceFlags{host: host}
	o := &getFlags{}
	cmd := &cobra.Command{
		Use:   "get (clusters [NAME...] | KIND [NAME])",
		Short: "List member clusters, or a kind's objects in the members side by side",
		Long: `get clusters lists member clusters: NAME VERSION MODE READY, NODES (ready/total), CPU in
cores and MEMORY (allocated by pods / allocatable on nodes), AGE.

get KIND [NAME] reads the objects from the members (all Ready clusters, or --clusters) in
parallel, through the credentials the host holds for them, and prints them as one table with a
CLUSTER column; the other columns are the kind's own, from the members' server-side Tables, as
kubectl get prints them. A member that fails or does not answer within --member-timeout gets
an error row, and the command exits non-zero after printing the others.`,
		Example: `  kubectl flotilla get clusters
  kubectl flotilla get deployments -n shop
  kubectl flotilla get deploy web -n shop --clusters member1,member2 -o wide
  kubectl flotilla get configmaps -A -l app=web -o yaml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(clusterResourceNames, args[0]) {
				return getMembers(cmd, host, ns, o, args)
			}
			return getClusters(cmd, host, o.output, args[1:])
		},
	}
	ns.add(cmd, true)
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "Output format: wide, json or yaml")
	cmd.Flags().StringVarP(&o.selector, "selector", "l", "", "Label selector of the members' objects (e.g. app=web)")
	cmd.Flags().StringSliceVar(&o.clusters, "clusters", nil, "Member clusters to read, comma-separated (default: every Ready cluster)")
	_ = cmd.RegisterFlagCompletionFunc("clusters", host.completeClusterList)
	cmd.Flags().DurationVar(&o.memberTimeout, "member-timeout", fleetview.DefaultMemberTimeout, "How long to wait for each member")
	return cmd
}

func getClusters(cmd *cobra.Command, host *hostFlags, output string, names []string) error {
	if err := checkOutput(output); err != nil {
		return err
	}
	list, err := host.listClusters(cmd.Context())
	if err != nil {
		return err
	}
	items := list.Items
	if len(names) > 0 {
		items = slices.DeleteFunc(items, func(c clusterv1alpha1.Cluster) bool { return !slices.Contains(names, c.Name) })
	}
	switch output {
	case "json", "yaml":
		for i := range items {
			items[i].APIVersion, items[i].Kind = clusterv1alpha1.GroupVersion.String(), "Cluster"
			items[i].ManagedFields = nil
		}
		out := map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""}, "items": items}
		var data []byte
		if output == "json" {
			data, err = json.MarshalIndent(out, "", "    ")
			data = append(data, '\n')
		} else {
			data, err = yaml.Marshal(out)
		}
		if err != nil {
			return err
		}
		_, err = cmd.OutOrStdout().Write(data)
		return err
	}
	if len(items) == 0 {
		fmt.Fprintln(cmd.ErrOrStderr(), "No clusters found.")
		return nil
	}
	return join.PrintClusters(cmd.OutOrStdout(), items, time.Now())
}
