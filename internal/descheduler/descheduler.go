// Package descheduler is the pure core of the descheduler: which clusters of a binding give
// up replicas that their member's scheduler could not place, and how many, and whether a
// new placement keeps every replica that runs.
//
// A binding's replicas move only when:
//
//   - the placement divides them by the members' room: Divided with dynamicWeight
//     AvailableReplicas, or Aggregated. Static weights and Duplicated say where the replicas
//     go; the user fixed that, so they stay;
//   - the workload is a Deployment or a ReplicaSet, whose controller removes unscheduled Pods
//     first when it scales down, so lowering a cluster's replicas by its unschedulable ones
//     removes exactly those (a StatefulSet removes its highest ordinals, a Job any Pod);
//   - the member reports them unschedulable for at least the threshold (all of them: the
//     member reports since when the last of them is);
//   - the binding is in a steady state: scheduled for its generation, no eviction under way,
//     not suspended, not being deleted, no move of its own in the last threshold.
//
// A cluster gives up at most its replicas less those the member reports ready, so what runs
// is never removed, and nothing while the member rolls the workload out.
//
// Nothing here reads the clock or the apiserver (controllers/descheduler reads, the scheduler
// controller places and writes).
package descheduler

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

// DefaultThreshold is how long replicas stay unschedulable before they move (Karmada's
// --unschedulable-threshold).
const DefaultThreshold = 5 * time.Minute

// Unschedulable is what a member reports of one workload: how many of its replicas its
// scheduler could not place, each of them since Since at least.
type Unschedulable struct {
	Replicas int32
	Since    time.Time
}

// Input is what Plan needs of one binding.
type Input struct {
	// Spec is the binding's spec.
	Spec *workv1alpha2.ResourceBindingSpec
	// Unsteady says why the binding is not in a steady state (see the package doc); empty
	// when it is.
	Unsteady string
	// Unschedulable is, by cluster, what the member reports of the workload.
	Unschedulable map[string]Unschedulable
	// Ready is, by cluster, the ready replicas the member reports; a cluster missing here
	// reports no status yet, and gives up nothing.
	Ready map[string]int32
	// RollingOut names the clusters where the member reports a rollout under way (fewer
	// updated replicas than replicas): scaling down then takes from every ReplicaSet in
	// proportion, running Pods of the old one too, so they give up nothing.
	RollingOut map[string]bool
	// LastMove is when this binding's replicas last moved; zero when never (or not since the
	// manager started).
	LastMove time.Time
	// Now is the time; Threshold is how long replicas stay unschedulable before they move.
	Now       time.Time
	Threshold time.Duration
}

// Decision is what Plan decided for one binding.
type Decision struct {
	// Take is, by cluster, how many replicas to take off it; empty when none move.
	Take map[string]int32
	// Why says why none move, when the binding has unschedulable replicas.
	Why string
	// RecheckAt is when replicas that are unschedulable now become due; zero when none wait.
	RecheckAt time.Time
	// Ineligible is true when the binding's replicas never move (Eligible), whatever the
	// reports say.
	Ineligible bool
}

// Eligible returns "" when the binding's replicas may move, else why not.
func Eligible(spec *workv1alpha2.ResourceBindingSpec) string {
	p := spec.Placement
	switch {
	case p == nil:
		return "it follows the workloads that depend on it"
	case spec.Replicas <= 0 || len(spec.Components) > 0:
		return "it has no replicas to divide"
	case !movableKind(spec.Resource):
		return fmt.Sprintf("a %s does not remove its unschedulable Pods first when it scales down", spec.Resource.Kind)
	}
	rs := p.ReplicaScheduling
	if rs == nil || rs.ReplicaSchedulingType == policyv1alpha1.ReplicaSchedulingTypeDuplicated {
		return "its placement is Duplicated: every cluster runs all the replicas"
	}
	if rs.ReplicaDivisionPreference == policyv1alpha1.ReplicaDivisionPreferenceAggregated {
		return ""
	}
	if rs.WeightPreference != nil && rs.WeightPreference.DynamicWeight == policyv1alpha1.DynamicWeightByAvailableReplicas {
		return ""
	}
	return "its placement divides the replicas by static weights"
}

// movableKind: the workloads whose scale-down removes unscheduled Pods first.
func movableKind(r workv1alpha2.ObjectReference) bool {
	group, _, _ := strings.Cut(r.APIVersion, "/")
	return (r.Kind == "Deployment" || r.Kind == "ReplicaSet") && group == "apps"
}

// Plan decides which clusters of the binding give up how many replicas.
func Plan(in Input) Decision {
	var d Decision
	pending := false
	for _, tc := range in.Spec.Clusters {
		if in.Unschedulable[tc.Name].Replicas > 0 {
			pending = true
		}
	}
	if !pending {
		return d
	}
	if why := Eligible(in.Spec); why != "" {
		d.Why, d.Ineligible = why, true
		return d
	}
	if in.Unsteady != "" {
		d.Why = in.Unsteady
		return d
	}
	if !in.LastMove.IsZero() && in.Now.Before(in.LastMove.Add(in.Threshold)) {
		d.Why = fmt.Sprintf("its replicas moved at %s; the new ones settle first", in.LastMove.UTC().Format(time.RFC3339))
		d.RecheckAt = in.LastMove.Add(in.Threshold)
		return d
	}
	var why []string
	for _, tc := range in.Spec.Clusters {
		u := in.Unschedulable[tc.Name]
		if u.Replicas <= 0 {
			continue
		}
		if due := u.Since.Add(in.Threshold); in.Now.Before(due) {
			if d.RecheckAt.IsZero() || due.Before(d.RecheckAt) {
				d.RecheckAt = due
			}
			why = append(why, fmt.Sprintf("%s: unschedulable for less than %s", tc.Name, in.Threshold))
			continue
		}
		ready, reports := in.Ready[tc.Name]
		if in.RollingOut[tc.Name] {
			why = append(why, fmt.Sprintf("%s: a rollout is under way", tc.Name))
			continue
		}
		if !reports {
			why = append(why, fmt.Sprintf("%s: no ready count reported", tc.Name))
			continue
		}
		take := min(u.Replicas, tc.Replicas-max(ready, 0))
		if take <= 0 {
			why = append(why, fmt.Sprintf("%s: all %d replicas are ready", tc.Name, tc.Replicas))
			continue
		}
		if d.Take == nil {
			d.Take = map[string]int32{}
		}
		d.Take[tc.Name] = take
	}
	if len(d.Take) == 0 {
		d.Why = strings.Join(why, "; ")
	}
	return d
}

// Total is how many replicas take moves.
func Total(take map[string]int32) int32 {
	var n int32
	for _, v := range take {
		n += v
	}
	return n
}

// Fewer returns take with only n replicas in all, taken from the clusters in name order,
// for when the others have room for fewer than take moves.
func Fewer(take map[string]int32, n int32) map[string]int32 {
	out := map[string]int32{}
	for _, name := range slices.Sorted(maps.Keys(take)) {
		if n <= 0 {
			break
		}
		k := min(take[name], n)
		out[name] = k
		n -= k
	}
	return out
}

// Reduce returns the clusters with take taken off, in their order; a cluster left with none
// is dropped.
func Reduce(clusters []workv1alpha2.TargetCluster, take map[string]int32) []workv1alpha2.TargetCluster {
	out := make([]workv1alpha2.TargetCluster, 0, len(clusters))
	for _, tc := range clusters {
		tc.Replicas -= take[tc.Name]
		if tc.Replicas > 0 {
			out = append(out, tc)
		}
	}
	return out
}

// CheckNoDip returns nil when placed keeps every replica of reduced where it is, adds none
// to a cluster that gave some up, and holds replicas in all; else what it breaks.
func CheckNoDip(reduced, placed []workv1alpha2.TargetCluster, take map[string]int32, replicas int32) error {
	got := map[string]int32{}
	var total int64
	for _, tc := range placed {
		got[tc.Name] += tc.Replicas
		total += int64(tc.Replicas)
	}
	for _, tc := range reduced {
		if got[tc.Name] < tc.Replicas {
			return fmt.Errorf("cluster %s would go from %d to %d replicas", tc.Name, tc.Replicas, got[tc.Name])
		}
		if take[tc.Name] > 0 && got[tc.Name] != tc.Replicas {
			return fmt.Errorf("cluster %s gives up %d unschedulable replicas but would get %d back", tc.Name, take[tc.Name], got[tc.Name]-tc.Replicas)
		}
	}
	for name, n := range take {
		if n > 0 && got[name] > 0 && !slices.ContainsFunc(reduced, func(tc workv1alpha2.TargetCluster) bool { return tc.Name == name }) {
			return fmt.Errorf("cluster %s gives up all its replicas but would get %d back", name, got[name])
		}
	}
	if total != int64(replicas) {
		return fmt.Errorf("the clusters would hold %d replicas, spec.replicas is %d", total, replicas)
	}
	return nil
}

// Describe renders take as "member1 (2), member2 (1)", by cluster name.
func Describe(take map[string]int32) string {
	parts := make([]string, 0, len(take))
	for _, name := range slices.Sorted(maps.Keys(take)) {
		parts = append(parts, fmt.Sprintf("%s (%d)", name, take[name]))
	}
	return strings.Join(parts, ", ")
}
