package scheduler

import (
	"fmt"
	"math"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/clusteraffinity"
	"github.com/flotilla-io/flotilla/internal/scheduler/division"
	"github.com/flotilla-io/flotilla/pkg/scheduler/framework"
)

// mode is how replicas are assigned.
type mode int

const (
	duplicated    mode = iota // every cluster gets spec.replicas
	staticWeight              // Divided/Weighted, static weights (or equal)
	dynamicWeight             // Divided/Weighted, by available replicas
	aggregated                // Divided/Aggregated
)

// assignMode reads the placement's replicaScheduling. A nil replicaScheduling is Duplicated,
// and so is any binding with no replicas (a ConfigMap, a Deployment scaled to 0): every
// selected cluster gets 0. Divided with no division preference divides by weight.
func assignMode(spec *workv1alpha2.ResourceBindingSpec, placement *policyv1alpha1.Placement) (mode, error) {
	rs := placement.ReplicaScheduling
	if rs == nil || spec.Replicas <= 0 {
		return duplicated, nil
	}
	switch rs.ReplicaSchedulingType {
	case policyv1alpha1.ReplicaSchedulingTypeDuplicated:
		return duplicated, nil
	case policyv1alpha1.ReplicaSchedulingTypeDivided, "": // the CRD defaults it to Divided
	default:
		return 0, fmt.Errorf("%w: replicaScheduling.replicaSchedulingType %q: must be Duplicated or Divided", ErrInvalidPlacement, rs.ReplicaSchedulingType)
	}
	switch rs.ReplicaDivisionPreference {
	case policyv1alpha1.ReplicaDivisionPreferenceAggregated:
		return aggregated, nil
	case policyv1alpha1.ReplicaDivisionPreferenceWeighted, "":
	default:
		return 0, fmt.Errorf("%w: replicaScheduling.replicaDivisionPreference %q: must be Aggregated or Weighted", ErrInvalidPlacement, rs.ReplicaDivisionPreference)
	}
	wp := rs.WeightPreference
	if wp == nil || wp.DynamicWeight == "" {
		return staticWeight, nil
	}
	if wp.DynamicWeight != policyv1alpha1.DynamicWeightByAvailableReplicas {
		return 0, fmt.Errorf("%w: replicaScheduling.weightPreference.dynamicWeight %q: must be AvailableReplicas", ErrInvalidPlacement, wp.DynamicWeight)
	}
	return dynamicWeight, nil
}

// needsCapacity reports whether the division needs each cluster's free capacity.
func needsCapacity(state *framework.CycleState) bool {
	if HasComponents(state.Spec) {
		return false // the capacity of sets is computed apart (components.go)
	}
	m, err := assignMode(state.Spec, state.Placement)
	return err == nil && (m == dynamicWeight || m == aggregated)
}

// assign gives each selected cluster its replicas.
func (s *Scheduler) assign(state *framework.CycleState, selected []framework.Candidate) ([]workv1alpha2.TargetCluster, error) {
	if HasComponents(state.Spec) {
		return assignComponents(state, selected)
	}
	m, err := assignMode(state.Spec, state.Placement)
	if err != nil {
		return nil, err
	}
	if m == duplicated {
		if len(state.Tiers) > 0 && len(selected) > 0 {
			return duplicateFirstTier(selected, max(state.Spec.Replicas, 0)), nil
		}
		return duplicate(selected, max(state.Spec.Replicas, 0)), nil
	}
	selected, weights, err := divisionWeights(m, state, selected)
	if err != nil {
		return nil, err
	}
	targets := make([]division.Target, len(selected))
	tiers := make([]int, len(selected))
	for i, c := range selected {
		targets[i] = division.Target{Weight: weights[i], Prior: state.ScheduledReplicas(c.Cluster.Name), Rank: c.Rank}
		tiers[i] = c.Tier
	}
	var replicas []int32
	switch {
	case len(state.Tiers) > 0:
		replicas, err = divideByTier(m, state.Spec.Replicas, targets, tiers)
	case m == staticWeight && anyRoomKnown(selected):
		// Static weights, but never more on a cluster than it holds now plus its room.
		caps := make([]int64, len(selected))
		for i, c := range selected {
			caps[i] = int64(c.Room) + int64(max(targets[i].Prior, 0))
		}
		replicas, err = division.ByWeightWithin(state.Spec.Replicas, targets, caps)
	default:
		replicas, err = divide(m, state.Spec.Replicas, targets)
	}
	if err != nil {
		return nil, err
	}
	out := make([]workv1alpha2.TargetCluster, 0, len(selected))
	for i, c := range selected {
		if replicas[i] > 0 || s.emptyWorkloads {
			out = append(out, workv1alpha2.TargetCluster{Name: c.Cluster.Name, Replicas: replicas[i]})
		}
	}
	return out, nil
}

// anyRoomKnown reports whether the estimate bounds any candidate's replicas.
func anyRoomKnown(candidates []framework.Candidate) bool {
	for _, c := range candidates {
		if c.Room < math.MaxInt32 {
			return true
		}
	}
	return false
}

// duplicate gives every cluster the same replicas.
func duplicate(selected []framework.Candidate, replicas int32) []workv1alpha2.TargetCluster {
	out := make([]workv1alpha2.TargetCluster, len(selected))
	for i, c := range selected {
		out[i] = workv1alpha2.TargetCluster{Name: c.Cluster.Name, Replicas: replicas}
	}
	return out
}

// divisionWeights returns the clusters that take part in the division and their weights:
// static weights, or free capacity for dynamic weights and Aggregated.
func divisionWeights(m mode, state *framework.CycleState, selected []framework.Candidate) ([]framework.Candidate, []int64, error) {
	if m == staticWeight {
		return weighStatically(state, selected)
	}
	weights := make([]int64, len(selected))
	for i, c := range selected {
		weights[i] = int64(c.Available)
	}
	return selected, weights, nil
}

func divide(m mode, replicas int32, targets []division.Target) ([]int32, error) {
	switch m {
	case staticWeight:
		return division.ByWeight(replicas, targets)
	case dynamicWeight:
		return division.ByCapacity(replicas, targets)
	default:
		return division.Aggregate(replicas, targets)
	}
}

// weighStatically returns the candidates that carry a static weight and their weights: the
// highest weight of the staticWeightList rules a cluster matches. Clusters matching no rule
// are dropped, unless none matches at all, in which case all share equally (as they do with
// no staticWeightList).
func weighStatically(state *framework.CycleState, candidates []framework.Candidate) ([]framework.Candidate, []int64, error) {
	var rules []policyv1alpha1.StaticClusterWeight
	if wp := state.Placement.ReplicaScheduling.WeightPreference; wp != nil {
		rules = wp.StaticWeightList
	}
	matchers := make([]*clusteraffinity.Matcher, len(rules))
	for i := range rules {
		m, err := clusteraffinity.Compile(&rules[i].TargetCluster)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: replicaScheduling.weightPreference.staticWeightList[%d].targetCluster: %v", ErrInvalidPlacement, i, err)
		}
		matchers[i] = m
	}
	weighted := make([]framework.Candidate, 0, len(candidates))
	weights := make([]int64, 0, len(candidates))
	for _, c := range candidates {
		var weight int64
		for i, m := range matchers {
			if rules[i].Weight > weight && m.Matches(c.Cluster) {
				weight = rules[i].Weight
			}
		}
		if weight > 0 {
			weighted = append(weighted, c)
			weights = append(weights, weight)
		}
	}
	if len(weighted) > 0 {
		return weighted, weights, nil
	}
	weights = make([]int64, len(candidates))
	for i := range weights {
		weights[i] = 1
	}
	return candidates, weights, nil
}
