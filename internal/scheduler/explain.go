package scheduler

import (
	"errors"
	"math"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/pkg/scheduler/framework"
)

// Explanation says why a binding is placed as it is: the cycle's result, and for every
// cluster every filter's verdict (not only the first rejection), every scorer's score and
// the estimated room. It is what `kubectl flotilla schedule --dry-run` prints.
type Explanation struct {
	// Result is what Schedule returned, and Err its error (unschedulable, invalid placement).
	Result Result
	Err    error
	// AffinityName is the clusterAffinities group the clusters are explained for: the one
	// the result uses, or the first tried when none fits; empty without groups.
	AffinityName string
	// Clusters are explained in the order given.
	Clusters []ClusterExplanation
}

// ClusterExplanation is one cluster's part of an Explanation.
type ClusterExplanation struct {
	Cluster string
	// Filters are the verdicts of the filters that check this binding, in order; an empty
	// Reason passes.
	Filters []FilterVerdict
	// Scores are the score plugins' scores (before weighting) and weights, in order.
	Scores []PluginScore
	// Room is the estimated room in replicas (CycleState.Room); RoomKnown is false when the
	// cluster has not reported its capacity.
	Room      int32
	RoomKnown bool
}

// Feasible reports whether every filter passed the cluster.
func (c ClusterExplanation) Feasible() bool {
	for _, f := range c.Filters {
		if f.Reason != "" {
			return false
		}
	}
	return true
}

// FilterVerdict is one filter's verdict on one cluster.
type FilterVerdict struct {
	Plugin string
	Reason string
}

// PluginScore is one score plugin's score of one cluster.
type PluginScore struct {
	Plugin string
	Score  int64
	Weight int64
}

// Explain runs Schedule and explains its result. An error is returned only when a plugin
// fails to prepare; an unschedulable or invalid placement is Explanation.Err.
func (s *Scheduler) Explain(in Input, clusters []*clusterv1alpha1.Cluster) (Explanation, error) {
	result, err := s.Schedule(in, clusters)
	out := Explanation{Result: result, Err: err}
	if in.Fresh {
		in = in.forgetCurrent()
	}
	state := newState(in)
	if groups := state.Placement.ClusterAffinities; len(groups) > 0 {
		i := firstGroup(groups, result.AffinityName)
		if err != nil {
			i = firstGroup(groups, state.Status.SchedulerObservedAffinityName)
		}
		state = state.WithGroup(&groups[i])
		out.AffinityName = groups[i].AffinityName
	}
	type namedFilter struct {
		plugin string
		check  framework.Filter
	}
	var filters []namedFilter
	for _, p := range s.filters {
		f, ferr := p.NewFilter(state)
		if ferr != nil && !errors.Is(ferr, framework.ErrInvalidPlacement) {
			return out, pluginError(p, ferr)
		}
		if f != nil {
			filters = append(filters, namedFilter{p.Name(), f})
		}
	}
	if HasComponents(state.Spec) {
		filters = append(filters, namedFilter{ComponentCapacityFilter, componentFilter(state.Spec)})
	}
	type weightedScorer struct {
		plugin string
		score  framework.Scorer
		weight int64
	}
	var scorers []weightedScorer
	for i, p := range s.scorers {
		f, serr := p.NewScorer(state)
		if serr != nil && !errors.Is(serr, framework.ErrInvalidPlacement) {
			return out, pluginError(p, serr)
		}
		if f != nil {
			scorers = append(scorers, weightedScorer{p.Name(), f, s.weights[i]})
		}
	}
	for _, c := range clusters {
		if c == nil {
			continue
		}
		ce := ClusterExplanation{Cluster: c.Name}
		for _, f := range filters {
			ce.Filters = append(ce.Filters, FilterVerdict{Plugin: f.plugin, Reason: f.check(c)})
		}
		for _, sc := range scorers {
			ce.Scores = append(ce.Scores, PluginScore{Plugin: sc.plugin, Score: min(max(sc.score(c), 0), framework.MaxScore), Weight: sc.weight})
		}
		if state.Spec.Replicas > 0 && !HasComponents(state.Spec) {
			ce.Room, ce.RoomKnown = state.RoomOn(c)
			if !ce.RoomKnown {
				ce.Room = math.MaxInt32
			}
		}
		out.Clusters = append(out.Clusters, ce)
	}
	return out, nil
}
