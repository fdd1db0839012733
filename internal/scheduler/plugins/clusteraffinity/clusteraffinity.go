// Package clusteraffinity is the filter plugin for placement.clusterAffinity and for the
// clusterAffinities group being tried: clusterNames, labelSelector, fieldSelector (provider,
// region, zone) and exclude. Matching is internal/clusteraffinity's; the selector is compiled
// once per cycle.
package clusteraffinity

import (
	"fmt"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clusteraffinity"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// Name is the plugin's registry name (Karmada's name for the same plugin).
const Name = "ClusterAffinity"

// ReasonNotMatched is the rejection reason of a cluster the affinity does not select.
const ReasonNotMatched = "did not match the cluster affinity"

// Plugin filters clusters by the cluster affinity in force.
type Plugin struct{}

var _ framework.FilterPlugin = Plugin{}

// New returns the plugin.
func New() Plugin { return Plugin{} }

// Name implements framework.Plugin.
func (Plugin) Name() string { return Name }

// NewFilter compiles the affinity of the cycle. With no affinity every cluster matches and no
// filter is returned.
func (Plugin) NewFilter(state *framework.CycleState) (framework.Filter, error) {
	if state.Affinity == nil {
		return nil, nil
	}
	m, err := clusteraffinity.Compile(state.Affinity)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", framework.ErrInvalidPlacement, field(state), err)
	}
	return func(c *clusterv1alpha1.Cluster) string {
		if m.Matches(c) {
			return ""
		}
		return ReasonNotMatched
	}, nil
}

// field names the affinity in error messages the way a user finds it in the policy.
func field(state *framework.CycleState) string {
	if state.AffinityName != "" {
		return fmt.Sprintf("clusterAffinities[%s]", state.AffinityName)
	}
	return "clusterAffinity"
}
