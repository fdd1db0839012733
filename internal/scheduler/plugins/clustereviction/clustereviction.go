// Package clustereviction is the filter plugin that keeps a binding off the clusters it is
// being gracefully evicted from (spec.gracefulEvictionTasks), so that failover does not put
// it straight back.
package clustereviction

import (
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/pkg/scheduler/framework"
)

// Name is the plugin's registry name (Karmada's name for the same plugin).
const Name = "ClusterEviction"

// ReasonEvicting is the rejection reason of a cluster the binding is being evicted from.
const ReasonEvicting = "had an eviction of this workload in progress"

// Plugin filters out the clusters of the binding's graceful eviction tasks.
type Plugin struct{}

var _ framework.FilterPlugin = Plugin{}

// New returns the plugin.
func New() Plugin { return Plugin{} }

// Name implements framework.Plugin.
func (Plugin) Name() string { return Name }

// NewFilter returns nil when no eviction is in progress.
func (Plugin) NewFilter(state *framework.CycleState) (framework.Filter, error) {
	tasks := state.Spec.GracefulEvictionTasks
	if len(tasks) == 0 {
		return nil, nil
	}
	evicting := make(map[string]struct{}, len(tasks))
	for _, t := range tasks {
		evicting[t.FromCluster] = struct{}{}
	}
	return func(c *clusterv1alpha1.Cluster) string {
		if _, ok := evicting[c.Name]; ok {
			return ReasonEvicting
		}
		return ""
	}, nil
}
