// Package framework defines the extension points of the Flotilla scheduler: the plugin
// interfaces, the per-cycle state they read, and the registry that turns plugins on and off by
// name. It imports no Kubernetes client and does no I/O.
//
// It is Flotilla's public, stable scheduler API: a plugin written against it builds into a
// manager with pkg/manager.WithSchedulerPlugins (see examples/scheduler-plugin) and keeps
// building across Flotilla releases of the same major version; types and interfaces only gain
// fields and optional interfaces, nothing is removed or changes meaning.
//
// A plugin is prepared once per scheduling cycle (NewFilter, NewScorer): that is where it
// parses or compiles what it needs from the binding. The closure it returns is then called
// once per cluster, so the per-cluster path stays cheap.
package framework

import (
	"errors"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// MaxScore is the highest score a Scorer may give; scores are clamped to [0, MaxScore].
const MaxScore int64 = 100

// ErrInvalidPlacement marks errors caused by a placement that can never be scheduled as
// written (an invalid selector, an unsupported combination of spread constraints). Retrying
// does not help; the user must edit the policy. Test with errors.Is.
var ErrInvalidPlacement = errors.New("invalid placement")

// Plugin is implemented by every scheduler plugin.
type Plugin interface {
	// Name identifies the plugin in the registry and in rejection reasons. It must be unique
	// and stable: users disable plugins by this name.
	Name() string
}

// Filter checks one cluster. It returns "" when the cluster can hold the binding, and
// otherwise a short reason that reads after a count, for example "did not match the cluster
// affinity" (rendered as "3 did not match the cluster affinity").
type Filter func(cluster *clusterv1alpha1.Cluster) (reason string)

// FilterPlugin removes clusters that cannot hold the binding.
type FilterPlugin interface {
	Plugin
	// NewFilter prepares the plugin for one cycle. It returns nil when the plugin has nothing
	// to check for this binding. An error wrapping ErrInvalidPlacement says the placement is
	// invalid; any other error is internal.
	NewFilter(state *CycleState) (Filter, error)
}

// Scorer scores one feasible cluster; higher is better, in [0, MaxScore].
type Scorer func(cluster *clusterv1alpha1.Cluster) int64

// ScorePlugin ranks feasible clusters. Each score plugin's scores are multiplied by its
// weight (1 unless configured, pkg/scheduler/config) and added up.
type ScorePlugin interface {
	Plugin
	// NewScorer prepares the plugin for one cycle. It returns nil when the plugin scores
	// nothing for this binding.
	NewScorer(state *CycleState) (Scorer, error)
}

// Candidate is a feasible cluster with what the select step needs to rank it.
type Candidate struct {
	// Cluster is the feasible cluster.
	Cluster *clusterv1alpha1.Cluster
	// Score is the weighted sum of the score plugins' scores.
	Score int64
	// Available is how many more replicas of the binding the cluster can hold. It is only
	// computed when CycleState.CapacityAware is true, and is 0 otherwise.
	Available int32
	// Room is how many more replicas of the binding the cluster can hold by the estimate
	// (CycleState.Room); math.MaxInt32 when the cluster has not reported its capacity or
	// nothing bounds the replicas. It is computed for every binding with replicas and
	// without components.
	Room int32
	// Rank is the cluster's per-binding tie-break rank: among equals, the lower rank wins.
	Rank uint64
	// Tier is the overflow tier the cluster belongs to (CycleState.Tiers): 0 is the
	// preferred group, and always 0 without overflowAffinities. Lower tiers are filled first
	// and selected first.
	Tier int
}

// SelectPlugin narrows the scored feasible clusters to the ones the binding is placed on,
// for example one or two regions out of five. Select plugins run in registry order, each on
// the previous one's output.
type SelectPlugin interface {
	Plugin
	// Select returns the chosen candidates. It returns an *UnfitError when the candidates
	// cannot satisfy the binding, an error wrapping ErrInvalidPlacement when the placement is
	// invalid, and any other error when something internal failed.
	Select(state *CycleState, candidates []Candidate) ([]Candidate, error)
}

// UnfitError is returned by a SelectPlugin when the feasible clusters, taken together, cannot
// satisfy the binding. The scheduler reports it as unschedulable.
type UnfitError struct {
	// Reason is a sentence fragment, for example "spread by region needs at least 3 groups,
	// 2 fit".
	Reason string
}

func (e *UnfitError) Error() string { return e.Reason }
