package scheduler

import (
	"fmt"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/pkg/scheduler/framework"
)

// Multi-component workloads (spec.components, Karmada's multiple pod templates scheduling).
//
// A binding with components is placed whole: every cluster it goes to runs all of its
// components with all their replicas, and the unit of capacity is one complete set (the sum
// over the components of replicas × per-replica requests, and one pod slot per replica).
// A cluster that cannot hold one set is rejected by the ComponentCapacity filter, whatever the
// replica scheduling. Duplicated sends the set to every selected cluster; Divided does not
// split the components across clusters (Karmada does not either): the set goes whole to one
// cluster, the one it is on if still selected, else the best scored, then the one with room
// for the most sets, then the binding's tie-break order.

// ComponentCapacityFilter names the filter that rejects clusters without room for one set.
const ComponentCapacityFilter = "ComponentCapacity"

// HasComponents reports whether the binding is a multi-component workload.
func HasComponents(spec *workv1alpha2.ResourceBindingSpec) bool {
	return spec != nil && len(spec.Components) > 0
}

// ComponentSetRequest returns what one complete set of the components requests, summed over
// components (replicas × per-replica request), and the pod slots it takes.
func ComponentSetRequest(components []workv1alpha2.Component) (corev1.ResourceList, resource.Quantity) {
	total := corev1.ResourceList{}
	var pods int64
	for _, c := range components {
		if c.Replicas <= 0 {
			continue
		}
		pods += int64(c.Replicas)
		if c.ReplicaRequirements == nil {
			continue
		}
		for name, per := range c.ReplicaRequirements.ResourceRequest {
			if name == corev1.ResourcePods || per.Sign() <= 0 {
				continue
			}
			q := per.DeepCopy()
			q.Mul(int64(c.Replicas))
			sum := total[name]
			sum.Add(q)
			total[name] = sum
		}
	}
	return total, *resource.NewQuantity(pods, resource.DecimalSI)
}

// AvailableComponentSets estimates how many complete sets of the components the cluster can
// hold more, from status.resourceSummary as AvailableReplicas does (Karmada's
// MaxAvailableComponentSets). A set with no replicas fits math.MaxInt32 times.
func AvailableComponentSets(c *clusterv1alpha1.Cluster, components []workv1alpha2.Component) int32 {
	request, pods := ComponentSetRequest(components)
	if len(request) == 0 && pods.Sign() == 0 {
		return math.MaxInt32
	}
	return availableUnits(c, request, pods, nil)
}

// ComponentShortfall says why the cluster cannot hold one set: per resource, by how much the
// set's request exceeds what is free. It is empty when one set fits.
func ComponentShortfall(c *clusterv1alpha1.Cluster, components []workv1alpha2.Component) string {
	if AvailableComponentSets(c, components) > 0 {
		return ""
	}
	rs := c.Status.ResourceSummary
	if rs == nil {
		return "reports no free resources (no resourceSummary)"
	}
	request, pods := ComponentSetRequest(components)
	if _, ok := rs.Allocatable[corev1.ResourcePods]; ok && pods.Sign() > 0 {
		request[corev1.ResourcePods] = pods
	}
	names := make([]string, 0, len(request))
	for name := range request {
		names = append(names, string(name))
	}
	slices.Sort(names)
	var parts []string
	for _, n := range names {
		name := corev1.ResourceName(n)
		need := request[name]
		allocatable, ok := rs.Allocatable[name]
		if !ok {
			parts = append(parts, fmt.Sprintf("%s short by %s (none allocatable)", name, need.String()))
			continue
		}
		free := allocatable.DeepCopy()
		if a, ok := rs.Allocated[name]; ok && a.Sign() > 0 {
			free.Sub(a)
		}
		if a, ok := rs.Allocating[name]; ok && a.Sign() > 0 {
			free.Sub(a)
		}
		if free.Sign() < 0 {
			free = resource.Quantity{Format: need.Format}
		}
		if need.Cmp(free) <= 0 {
			continue
		}
		short := need.DeepCopy()
		short.Sub(free)
		parts = append(parts, fmt.Sprintf("%s short by %s (set needs %s, %s free)", name, short.String(), need.String(), free.String()))
	}
	if len(parts) == 0 { // rounding: every resource fits on its own but not in whole units
		return "has no room for one complete set"
	}
	return strings.Join(parts, ", ")
}

// describeComponents renders "jobmanager 1, taskmanager 3".
func describeComponents(components []workv1alpha2.Component) string {
	parts := make([]string, len(components))
	for i, c := range components {
		parts[i] = fmt.Sprintf("%s %d", c.Name, c.Replicas)
	}
	return strings.Join(parts, ", ")
}

// componentFilter rejects clusters that cannot hold one complete set of the components. A
// cluster the binding is already on runs a set whose requests its free capacity no longer
// counts, so there only the replicas added since (a scaled-up component) must fit.
func componentFilter(spec *workv1alpha2.ResourceBindingSpec) framework.Filter {
	set := describeComponents(spec.Components)
	placed := make(map[string][]workv1alpha2.ComponentReplicas, len(spec.Clusters))
	for _, tc := range spec.Clusters {
		placed[tc.Name] = tc.Components
	}
	return func(c *clusterv1alpha1.Cluster) string {
		running, ok := placed[c.Name]
		if !ok {
			if short := ComponentShortfall(c, spec.Components); short != "" {
				return fmt.Sprintf("cannot hold one set of the components (%s): %s", set, short)
			}
			return ""
		}
		added := addedReplicas(spec.Components, running)
		if short := ComponentShortfall(c, added); short != "" {
			return fmt.Sprintf("cannot hold the replicas added to the components it runs (%s): %s", describeComponents(added), short)
		}
		return ""
	}
}

// addedReplicas returns, per component, the replicas beyond those running (0 when none are
// added), with the component's per-replica requirements.
func addedReplicas(components []workv1alpha2.Component, running []workv1alpha2.ComponentReplicas) []workv1alpha2.Component {
	out := make([]workv1alpha2.Component, len(components))
	for i, c := range components {
		var have int32
		for _, r := range running {
			if r.Name == c.Name {
				have = r.Replicas
			}
		}
		out[i] = c
		out[i].Replicas = max(c.Replicas-max(have, 0), 0)
	}
	return out
}

// componentReplicas is every component with all its replicas, for TargetCluster.components.
func componentReplicas(components []workv1alpha2.Component) []workv1alpha2.ComponentReplicas {
	out := make([]workv1alpha2.ComponentReplicas, len(components))
	for i, c := range components {
		out[i] = workv1alpha2.ComponentReplicas{Name: c.Name, Replicas: max(c.Replicas, 0)}
	}
	return out
}

// componentsDuplicated reads the placement of a binding with components: true for Duplicated
// (or no replicaScheduling), false for Divided, whatever the division preference, since the
// set is not split.
func componentsDuplicated(placement *policyv1alpha1.Placement) (bool, error) {
	rs := placement.ReplicaScheduling
	if rs == nil {
		return true, nil
	}
	switch rs.ReplicaSchedulingType {
	case policyv1alpha1.ReplicaSchedulingTypeDuplicated:
		return true, nil
	case policyv1alpha1.ReplicaSchedulingTypeDivided, "":
		return false, nil
	}
	return false, fmt.Errorf("%w: replicaScheduling.replicaSchedulingType %q: must be Duplicated or Divided", ErrInvalidPlacement, rs.ReplicaSchedulingType)
}

// assignComponents places the whole set: on every selected cluster (of the first overflow tier)
// when Duplicated, else on the one best cluster.
func assignComponents(state *framework.CycleState, selected []framework.Candidate) ([]workv1alpha2.TargetCluster, error) {
	dup, err := componentsDuplicated(state.Placement)
	if err != nil {
		return nil, err
	}
	if len(selected) == 0 {
		return nil, nil
	}
	target := func(c framework.Candidate) workv1alpha2.TargetCluster {
		return workv1alpha2.TargetCluster{Name: c.Cluster.Name, Replicas: max(state.Spec.Replicas, 0),
			Components: componentReplicas(state.Spec.Components)}
	}
	if dup {
		tier := slices.MinFunc(selected, func(a, b framework.Candidate) int { return a.Tier - b.Tier }).Tier
		var out []workv1alpha2.TargetCluster
		for _, c := range selected {
			if c.Tier == tier {
				out = append(out, target(c))
			}
		}
		return out, nil
	}
	best := slices.MinFunc(selected, func(a, b framework.Candidate) int { return compareForWhole(state, a, b) })
	return []workv1alpha2.TargetCluster{target(best)}, nil
}

// compareForWhole orders candidates for a Divided set: the cluster it is on, then the lower
// overflow tier, the higher score, the room for more sets, the lower tie-break rank.
func compareForWhole(state *framework.CycleState, a, b framework.Candidate) int {
	aOn, bOn := state.IsScheduled(a.Cluster.Name), state.IsScheduled(b.Cluster.Name)
	switch {
	case aOn && !bOn:
		return -1
	case bOn && !aOn:
		return 1
	case a.Tier != b.Tier:
		return a.Tier - b.Tier
	case a.Score != b.Score:
		if a.Score > b.Score {
			return -1
		}
		return 1
	case a.Available != b.Available:
		if a.Available > b.Available {
			return -1
		}
		return 1
	case a.Rank != b.Rank:
		if a.Rank < b.Rank {
			return -1
		}
		return 1
	}
	return 0
}
