// Package clusteraffinity is the filter plugin for placement.clusterAffinity and for the
// clusterAffinities group being tried: clusterNames, labelSelector, fieldSelector (provider,
// region, zone) and exclude. Matching is internal/clusteraffinity's; the selector is compiled
// once per cycle.
//
// A group with overflowAffinities (CycleState.Tiers) lets a cluster through when it matches
// the group or any of its overflow groups; TierOf says which tier it belongs to (the first it
// matches), for the select and assign steps.
package clusteraffinity

import (
	"fmt"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clusteraffinity"
	"github.com/flotilla-io/flotilla/pkg/scheduler/framework"
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
	if len(state.Tiers) > 0 {
		tierOf, err := TierOf(state)
		if err != nil {
			return nil, err
		}
		return func(c *clusterv1alpha1.Cluster) string {
			if tierOf(c) >= 0 {
				return ""
			}
			return ReasonNotMatched
		}, nil
	}
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

// TierOf compiles the tiers of the cycle (CycleState.Tiers) and returns the function that
// gives a cluster's tier: the index of the first tier whose affinity it matches, or -1 when it
// matches none. Without tiers every cluster is in tier 0.
func TierOf(state *framework.CycleState) (func(*clusterv1alpha1.Cluster) int, error) {
	if len(state.Tiers) == 0 {
		return func(*clusterv1alpha1.Cluster) int { return 0 }, nil
	}
	matchers := make([]*clusteraffinity.Matcher, len(state.Tiers))
	for i, t := range state.Tiers {
		m, err := clusteraffinity.Compile(t.Affinity)
		if err != nil {
			where := fmt.Sprintf("clusterAffinities[%s]", state.AffinityName)
			if i > 0 {
				where += fmt.Sprintf(".overflowAffinities[%s]", t.Name)
			}
			return nil, fmt.Errorf("%w: %s: %v", framework.ErrInvalidPlacement, where, err)
		}
		matchers[i] = m
	}
	return func(c *clusterv1alpha1.Cluster) int {
		for i, m := range matchers {
			if m.Matches(c) {
				return i
			}
		}
		return -1
	}, nil
}
