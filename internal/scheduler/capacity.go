package scheduler

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/estimate"
)

// AvailableReplicas estimates how many more replicas, each requesting request, the cluster can
// hold. It reads status.resourceSummary: for every requested resource, the free amount
// (allocatable - allocated - allocating) divided by the request, and the smallest quotient
// wins. A resource the cluster does not list as allocatable (nvidia.com/gpu on a cluster
// without GPUs) fits 0 replicas. When "pods" is allocatable, each replica takes one pod slot.
//
// Capacity that has not been reported counts as none: a cluster without a resourceSummary
// holds 0. With no requests and no pod limit the result is math.MaxInt32.
func AvailableReplicas(c *clusterv1alpha1.Cluster, request corev1.ResourceList) int32 {
	return availableUnits(c, request, podSlot, nil)
}

// EstimateReplicas estimates how many more replicas of the binding the cluster can hold, as
// Karmada's scheduler does with its scheduler-estimator on: the smaller of what the summed
// free resources allow (AvailableReplicas) and, when the cluster reports its node groups,
// what fits node by node (package estimate). The placements the member has not reported yet
// (held) are taken from both first, and node by node also the Pods the member counts as
// waiting for a Node (estimate.Pending). known is false when the cluster has not reported a
// resourceSummary, or reports no allocatable resources at all: no Node the cluster status
// could read (an apiserver-only member, a credential that cannot list Nodes). Such a cluster
// is not filtered or capped for want of room, as before estimates were used; a cluster whose
// Nodes are all full reports their allocatable and gets 0.
func EstimateReplicas(c *clusterv1alpha1.Cluster, request corev1.ResourceList, e *estimate.Estimator, held []estimate.Held) (replicas int32, known bool) {
	rs := c.Status.ResourceSummary
	if rs == nil || len(rs.Allocatable) == 0 {
		return 0, false
	}
	n := availableUnits(c, request, podSlot, held)
	if len(rs.NodeGroups) > 0 && n > 0 {
		// The Pods waiting for a Node are in the summed allocating above; node by node they
		// are placed as the member's scheduler would place them, after the held placements.
		if pending, ok := estimate.Pending(rs); ok {
			held = append(held[:len(held):len(held)], pending)
		}
		n = int32(min(int64(n), e.Replicas(rs.NodeGroups, held)))
	}
	return n, true
}

// availableUnits is AvailableReplicas for units that each request request and take pods pod
// slots (a replica takes one; a set of components takes one per replica of every component),
// after the held placements.
func availableUnits(c *clusterv1alpha1.Cluster, request corev1.ResourceList, pods resource.Quantity, held []estimate.Held) int32 {
	rs := c.Status.ResourceSummary
	if rs == nil {
		return 0
	}
	if len(held) > 0 {
		rs = withHeld(rs, held)
	}
	n := int64(math.MaxInt32)
	if _, ok := rs.Allocatable[corev1.ResourcePods]; ok && pods.Sign() > 0 {
		n = min(n, fits(rs, corev1.ResourcePods, pods))
	}
	for name, req := range request {
		if name == corev1.ResourcePods || req.Sign() <= 0 {
			continue
		}
		if n = min(n, fits(rs, name, req)); n == 0 {
			break
		}
	}
	return int32(n)
}

// withHeld returns a copy of the summary with the held placements added to allocating.
func withHeld(rs *clusterv1alpha1.ResourceSummary, held []estimate.Held) *clusterv1alpha1.ResourceSummary {
	allocating := rs.Allocating.DeepCopy()
	if allocating == nil {
		allocating = corev1.ResourceList{}
	}
	for _, h := range held {
		if h.Replicas <= 0 {
			continue
		}
		n := int64(h.Replicas)
		add := func(name corev1.ResourceName, per resource.Quantity) {
			total, v := allocating[name], per.DeepCopy()
			v.Mul(n)
			total.Add(v)
			allocating[name] = total
		}
		for name, per := range h.Request {
			if name != corev1.ResourcePods && per.Sign() > 0 {
				add(name, per)
			}
		}
		add(corev1.ResourcePods, podSlot)
	}
	out := *rs
	out.Allocating = allocating
	return &out
}

// podSlot is what one replica takes of the "pods" resource.
var podSlot = *resource.NewQuantity(1, resource.DecimalSI)

// milliSafe bounds the values whose milli-units fit in an int64.
const milliSafe = math.MaxInt64 / 1000

// fits returns how many requests of the resource fit in what is free. Amounts are compared in
// milli-units (fractions of a CPU) unless one is too large for that, then in whole units.
func fits(rs *clusterv1alpha1.ResourceSummary, name corev1.ResourceName, req resource.Quantity) int64 {
	allocatable, ok := rs.Allocatable[name]
	if !ok {
		return 0
	}
	allocated, allocating := rs.Allocated[name], rs.Allocating[name]
	milli := smallEnough(&allocatable) && smallEnough(&allocated) && smallEnough(&allocating) && smallEnough(&req)
	per, free := amount(&req, milli), amount(&allocatable, milli)
	if per <= 0 || free <= 0 {
		return 0
	}
	// Subtract one term at a time so that odd (negative) inputs cannot overflow.
	if free -= max(amount(&allocated, milli), 0); free <= 0 {
		return 0
	}
	if free -= max(amount(&allocating, milli), 0); free <= 0 {
		return 0
	}
	return free / per
}

func amount(q *resource.Quantity, milli bool) int64 {
	if milli {
		return q.MilliValue()
	}
	return q.Value()
}

func smallEnough(q *resource.Quantity) bool {
	v := q.Value()
	return v > -milliSafe && v < milliSafe
}
