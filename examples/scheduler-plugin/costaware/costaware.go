// Package costaware is an example scheduler plugin built outside Flotilla's tree: it uses
// only the public API of pkg/scheduler/framework. It scores clusters by what they cost, read
// from the cluster label example.flotilla.io/cost-per-cpu-hour (in cents): the cheapest
// clusters score highest, and clusters without the label score in the middle. It also
// filters out clusters labelled example.flotilla.io/frozen=true.
package costaware

import (
	"strconv"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/pkg/scheduler/framework"
)

const (
	// Name is the plugin's name, as --scheduler-plugins and --scheduler-config use it.
	Name = "CostAware"
	// CostLabel is the cluster label holding the price of a CPU hour, in cents.
	CostLabel = "example.flotilla.io/cost-per-cpu-hour"
	// FrozenLabel set to "true" keeps new placements off a cluster.
	FrozenLabel = "example.flotilla.io/frozen"
	// ReasonFrozen is the filter's rejection reason.
	ReasonFrozen = "was frozen for cost reasons"
)

// Plugin scores by price and filters frozen clusters.
type Plugin struct{}

var (
	_ framework.ScorePlugin  = Plugin{}
	_ framework.FilterPlugin = Plugin{}
)

// New returns the plugin.
func New() Plugin { return Plugin{} }

// Name implements framework.Plugin.
func (Plugin) Name() string { return Name }

// NewFilter keeps new placements off frozen clusters; a cluster the binding is already on
// stays (the plugin does not evict).
func (Plugin) NewFilter(state *framework.CycleState) (framework.Filter, error) {
	return func(c *clusterv1alpha1.Cluster) string {
		if c.Labels[FrozenLabel] == "true" && !state.IsScheduled(c.Name) {
			return ReasonFrozen
		}
		return ""
	}, nil
}

// NewScorer scores MaxScore - cost (a cost of 100 cents or more scores 0); a cluster without
// a valid price scores MaxScore/2.
func (Plugin) NewScorer(*framework.CycleState) (framework.Scorer, error) {
	return Score, nil
}

// Score is the plugin's score of one cluster.
func Score(c *clusterv1alpha1.Cluster) int64 {
	cost, err := strconv.ParseInt(c.Labels[CostLabel], 10, 64)
	if err != nil || cost < 0 {
		return framework.MaxScore / 2
	}
	return max(framework.MaxScore-cost, 0)
}
