// Package clusterlocality is the score plugin that prefers the clusters a binding is already
// scheduled on, so that a reschedule moves as little as it can.
package clusterlocality

import (
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/pkg/scheduler/framework"
)

// Name is the plugin's registry name (Karmada's name for the same plugin).
const Name = "ClusterLocality"

// Plugin scores the clusters in spec.clusters MaxScore and the others 0.
type Plugin struct{}

var _ framework.ScorePlugin = Plugin{}

// New returns the plugin.
func New() Plugin { return Plugin{} }

// Name implements framework.Plugin.
func (Plugin) Name() string { return Name }

// NewScorer returns nil for a binding not scheduled anywhere yet.
func (Plugin) NewScorer(state *framework.CycleState) (framework.Scorer, error) {
	if len(state.Spec.Clusters) == 0 {
		return nil, nil
	}
	return func(c *clusterv1alpha1.Cluster) int64 {
		if state.IsScheduled(c.Name) {
			return framework.MaxScore
		}
		return 0
	}, nil
}
