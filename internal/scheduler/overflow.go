package scheduler

import (
	"fmt"
	"slices"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/scheduler/division"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins/clusteraffinity"
	"github.com/flotilla-io/flotilla/pkg/scheduler/framework"
)

// checkOverflow rejects overflowAffinities with a replica scheduling that does not look at
// capacity: as in Karmada, they need Divided replicas by dynamicWeight AvailableReplicas or
// Aggregated, which are the divisions that know when a tier is full.
func checkOverflow(g *policyv1alpha1.ClusterAffinityTerm, p *policyv1alpha1.Placement) error {
	if len(g.OverflowAffinities) == 0 {
		return nil
	}
	rs := p.ReplicaScheduling
	capacityAware := rs != nil && rs.ReplicaSchedulingType != policyv1alpha1.ReplicaSchedulingTypeDuplicated &&
		(rs.ReplicaDivisionPreference == policyv1alpha1.ReplicaDivisionPreferenceAggregated ||
			(rs.WeightPreference != nil && rs.WeightPreference.DynamicWeight != ""))
	if !capacityAware {
		return fmt.Errorf("%w: clusterAffinities[%s].overflowAffinities: only with replicaScheduling Divided by weightPreference.dynamicWeight AvailableReplicas or by replicaDivisionPreference Aggregated (replicas overflow when a tier's free capacity runs out)",
			ErrInvalidPlacement, g.AffinityName)
	}
	return nil
}

// setTiers records each feasible cluster's overflow tier. Without tiers all stay in tier 0.
func setTiers(state *framework.CycleState, feasible []framework.Candidate) error {
	if len(state.Tiers) == 0 {
		return nil
	}
	tierOf, err := clusteraffinity.TierOf(state)
	if err != nil {
		return err
	}
	for i := range feasible {
		// The filter let through only clusters of some tier; a tier of -1 cannot happen
		// but would sort first, so it is put last.
		if t := tierOf(feasible[i].Cluster); t >= 0 {
			feasible[i].Tier = t
		} else {
			feasible[i].Tier = len(state.Tiers)
		}
	}
	return nil
}

// divideByTier assigns replicas tier by tier. Scaling up (or a first placement) fills the
// preferred tier first: each tier takes what its clusters can still hold, divided among them
// as the mode divides, and what is left overflows to the next tier. Scaling down takes
// replicas from the last tier holding any first, back towards the preferred one. With the
// count unchanged the replicas stay where they are: a preferred cluster that has room again
// does not pull replicas back (a WorkloadRebalancer or a scale does).
//
// targets and the returned replicas are in the order of tiers; tiers[i] is the tier of
// targets[i]. It returns an *InsufficientCapacityError when all tiers together cannot hold
// the replicas.
func divideByTier(m mode, replicas int32, targets []division.Target, tiers []int) ([]int32, error) {
	byTier := map[int][]int{}
	var order []int
	for i, t := range tiers {
		if _, ok := byTier[t]; !ok {
			order = append(order, t)
		}
		byTier[t] = append(byTier[t], i)
	}
	slices.Sort(order)
	prior := make([]int64, len(order))
	var held int64
	for k, t := range order {
		for _, i := range byTier[t] {
			prior[k] += int64(max(targets[i].Prior, 0))
		}
		held += prior[k]
	}
	// want is each tier's new total.
	want := slices.Clone(prior)
	switch target := int64(replicas); {
	case held > target: // leave the last tiers first
		remove := held - target
		for k := len(order) - 1; k >= 0 && remove > 0; k-- {
			n := min(prior[k], remove)
			want[k] -= n
			remove -= n
		}
	case held < target: // fill the first tiers first
		add := target - held
		var free int64
		for k, t := range order {
			var room int64
			for _, i := range byTier[t] {
				room += max(targets[i].Weight, 0)
			}
			free += room
			n := min(room, add)
			want[k] += n
			add -= n
		}
		if add > 0 {
			return nil, &division.InsufficientCapacityError{Replicas: replicas, Capacity: held + free}
		}
	}
	out := make([]int32, len(targets))
	for k, t := range order {
		idx := byTier[t]
		sub := make([]division.Target, len(idx))
		for j, i := range idx {
			sub[j] = targets[i]
		}
		got, err := divide(m, int32(want[k]), sub)
		if err != nil {
			return nil, err
		}
		for j, i := range idx {
			out[i] = got[j]
		}
	}
	return out, nil
}

// duplicateFirstTier gives the clusters of the lowest tier present spec.replicas each: a
// template without replicas under an overflow group goes to the preferred clusters only.
func duplicateFirstTier(selected []framework.Candidate, replicas int32) []workv1alpha2.TargetCluster {
	first := slices.MinFunc(selected, func(a, b framework.Candidate) int { return a.Tier - b.Tier }).Tier
	out := make([]workv1alpha2.TargetCluster, 0, len(selected))
	for _, c := range selected {
		if c.Tier == first {
			out = append(out, workv1alpha2.TargetCluster{Name: c.Cluster.Name, Replicas: replicas})
		}
	}
	return out
}
