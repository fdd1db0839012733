// Package workloadaffinity is the filter plugin for placement.workloadAffinity: a workload
// goes with the other workloads of its affinity group and apart from those of its
// anti-affinity group. The groups are the binding's spec.workloadAffinityGroups (the label
// key's value on the template, "key=value", filled in by the detector); where the peers are
// is CycleState.Peers, which the scheduler controller lists.
//
// Both rules are hard, as in Karmada: a cluster holding a workload of the anti-affinity group
// is rejected, and so is a cluster that does not hold every scheduled workload of the affinity
// group. The first workload of an affinity group (no peer scheduled yet) may go anywhere.
package workloadaffinity

import (
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/pkg/scheduler/framework"
)

// Name is the plugin's registry name (Karmada's name for the same plugin).
const Name = "WorkloadAffinity"

// Rejection reasons, read after a count.
const (
	// ReasonAntiAffinity: the cluster holds a workload of the anti-affinity group.
	ReasonAntiAffinity = "held a workload of the same anti-affinity group"
	// ReasonAffinity: some workload of the affinity group is not on the cluster.
	ReasonAffinity = "did not hold the workloads of the same affinity group"
)

// Plugin filters clusters by the binding's workload affinity groups.
type Plugin struct{}

var _ framework.FilterPlugin = Plugin{}

// New returns the plugin.
func New() Plugin { return Plugin{} }

// Name implements framework.Plugin.
func (Plugin) Name() string { return Name }

// NewFilter indexes the peers' clusters once per cycle. Without peers there is nothing to
// check and no filter is returned.
func (Plugin) NewFilter(state *framework.CycleState) (framework.Filter, error) {
	peers := state.Peers
	if peers.IsZero() {
		return nil, nil
	}
	apart := make(map[string]struct{}, len(peers.AntiAffinity))
	for _, c := range peers.AntiAffinity {
		apart[c] = struct{}{}
	}
	// with counts, per cluster, the scheduled affinity peers that are on it.
	with := map[string]int{}
	for _, clusters := range peers.Affinity {
		seen := make(map[string]struct{}, len(clusters))
		for _, c := range clusters {
			if _, dup := seen[c]; !dup {
				seen[c] = struct{}{}
				with[c]++
			}
		}
	}
	together := len(peers.Affinity)
	return func(c *clusterv1alpha1.Cluster) string {
		if _, ok := apart[c.Name]; ok {
			return ReasonAntiAffinity
		}
		if with[c.Name] < together {
			return ReasonAffinity
		}
		return ""
	}, nil
}
