// Package estimate estimates how many replicas of a binding fit on a member's nodes, from the
// node groups the cluster status controller reports (status.resourceSummary.nodeGroups). It
// is pure: no client, no clock.
//
// Per node, a replica fits as many times as the smallest quotient, over the resources it
// requests, of what the node has free by what the replica requests; a node also needs a free
// pod slot per replica when it reports "pods". Only nodes whose labels match the replica's
// nodeSelector and required node affinity, and whose NoSchedule and NoExecute taints the
// replica tolerates, count. The estimate is the sum over the nodes.
//
// Placements made but not yet reported by the member (Held) are placed first, as a
// scheduler would place them, on the nodes the binding could use before the others, so that
// the estimate never counts the same free capacity twice.
package estimate

import (
	"math"

	"github.com/go-logr/logr"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

// Unlimited is the estimate when nothing bounds the replicas (no requests, no pod slots).
const Unlimited = math.MaxInt32

// MaxExpandedNodes bounds how many nodes are simulated one by one to place held replicas;
// the nodes beyond it count as they are reported.
const MaxExpandedNodes = 4096

// Held is a placement made on a cluster that the member has not reported running yet:
// Replicas more replicas, each requesting Request.
type Held struct {
	Replicas int32
	Request  corev1.ResourceList
}

// Estimator estimates the replicas of one binding. Build it once per scheduling cycle (New
// compiles the node affinity) and call Replicas per cluster.
type Estimator struct {
	request     []need
	selector    labels.Selector
	affinity    *nodeaffinity.LazyErrorNodeSelector
	tolerations []corev1.Toleration
}

// need is one requested resource: its name and its amount (milli-CPUs, whole units otherwise).
type need struct {
	name   corev1.ResourceName
	amount int64
}

// New returns the estimator of a replica's requirements; nil requirements request nothing.
func New(rr *workv1alpha2.ReplicaRequirements) *Estimator {
	e := &Estimator{}
	if rr == nil {
		return e
	}
	e.request = needs(rr.ResourceRequest)
	if nc := rr.NodeClaim; nc != nil {
		if len(nc.NodeSelector) > 0 {
			e.selector = labels.SelectorFromSet(nc.NodeSelector)
		}
		if nc.HardNodeAffinity != nil && len(nc.HardNodeAffinity.NodeSelectorTerms) > 0 {
			e.affinity = nodeaffinity.NewLazyErrorNodeSelector(nc.HardNodeAffinity)
		}
		e.tolerations = nc.Tolerations
	}
	return e
}

func needs(l corev1.ResourceList) []need {
	out := make([]need, 0, len(l))
	for name, q := range l {
		if name == corev1.ResourcePods {
			continue
		}
		if a := Amount(name, q); a > 0 {
			out = append(out, need{name, a})
		}
	}
	return out
}

// Amount is a quantity as an int64: milli-CPUs for CPU, whole units (rounded up) otherwise.
// Values too large for an int64 saturate.
func Amount(name corev1.ResourceName, q resource.Quantity) int64 {
	v := q.Value()
	if name != corev1.ResourceCPU {
		return v
	}
	switch {
	case v > math.MaxInt64/1000:
		return math.MaxInt64
	case v < math.MinInt64/1000:
		return math.MinInt64
	}
	return q.MilliValue()
}

// Matches reports whether a replica may run on the group's nodes: labels and taints.
func (e *Estimator) Matches(g *clusterv1alpha1.NodeGroup) bool {
	if e.selector != nil && !e.selector.Matches(labels.Set(g.Labels)) {
		return false
	}
	if e.affinity != nil {
		node := &corev1.Node{}
		node.Labels = g.Labels
		if ok, err := e.affinity.Match(node); err != nil || !ok {
			return false
		}
	}
	for i := range g.Taints {
		t := &g.Taints[i]
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if !corev1helpers.TolerationsTolerateTaint(logr.Discard(), e.tolerations, t, false) {
			return false
		}
	}
	return true
}

// Replicas returns how many more replicas fit on the groups' nodes after the held ones.
func (e *Estimator) Replicas(groups []clusterv1alpha1.NodeGroup, held []Held) int64 {
	if len(held) > 0 {
		return e.replicasAfter(groups, held)
	}
	var total int64
	for i := range groups {
		g := &groups[i]
		if g.Count <= 0 || !e.Matches(g) {
			continue
		}
		per := e.perGroupNode(g.Free)
		if per >= Unlimited {
			return Unlimited
		}
		total += per * int64(g.Count)
		if total >= Unlimited {
			return Unlimited
		}
	}
	return total
}

// perGroupNode is how many replicas fit on one node with free free.
func (e *Estimator) perGroupNode(free corev1.ResourceList) int64 {
	n := int64(Unlimited)
	if slots, ok := free[corev1.ResourcePods]; ok {
		n = min(n, max(slots.Value(), 0))
	}
	for _, r := range e.request {
		q, ok := free[r.name]
		if !ok {
			return 0
		}
		n = min(n, max(Amount(r.name, q), 0)/r.amount)
		if n == 0 {
			return 0
		}
	}
	return n
}

// vectors index the resources of one simulation: the binding's requests, the held
// placements' requests and pod slots (index 0).
type vectors struct {
	names []corev1.ResourceName
	index map[corev1.ResourceName]int
}

func (v *vectors) add(name corev1.ResourceName) int {
	if i, ok := v.index[name]; ok {
		return i
	}
	v.index[name] = len(v.names)
	v.names = append(v.names, name)
	return len(v.names) - 1
}

// amounts returns a request as amounts by index; a replica also takes a pod slot.
func (v *vectors) amounts(req []need) []int64 {
	out := make([]int64, len(v.names))
	out[0] = 1
	for _, r := range req {
		out[v.index[r.name]] = r.amount
	}
	return out
}

// replicasAfter places the held replicas node by node, first on the nodes the binding could
// use (the worst case for it), then counts what is left.
func (e *Estimator) replicasAfter(groups []clusterv1alpha1.NodeGroup, held []Held) int64 {
	v := &vectors{index: map[corev1.ResourceName]int{}}
	v.add(corev1.ResourcePods)
	for _, r := range e.request {
		v.add(r.name)
	}
	heldNeeds := make([][]need, len(held))
	for i, h := range held {
		heldNeeds[i] = needs(h.Request)
		for _, r := range heldNeeds[i] {
			v.add(r.name)
		}
	}
	width := len(v.names)
	mine := v.amounts(e.request)
	// The nodes the binding could use first, then the others; a node's free amounts by
	// index, math.MaxInt64 pod slots when it does not count them.
	var matching, others [][]int64
	var total int64 // of the nodes beyond MaxExpandedNodes
	expanded := 0
	for i := range groups {
		g := &groups[i]
		count := int(max(g.Count, 0))
		matches := e.Matches(g)
		free := make([]int64, width)
		for j, name := range v.names {
			q, ok := g.Free[name]
			switch {
			case ok:
				free[j] = max(Amount(name, q), 0)
			case j == 0:
				free[j] = math.MaxInt64
			}
		}
		expand := min(count, MaxExpandedNodes-expanded)
		expanded += expand
		backing := make([]int64, expand*width)
		for k := range expand {
			node := backing[k*width : (k+1)*width]
			copy(node, free)
			if matches {
				matching = append(matching, node)
			} else {
				others = append(others, node)
			}
		}
		if matches && count > expand {
			total = min(total+perVector(free, mine)*int64(count-expand), Unlimited)
		}
	}
	for i, h := range held {
		// A held replica that fits nowhere stays Pending in the member: it takes nothing.
		need := v.amounts(heldNeeds[i])
		left := takeN(matching, need, int64(max(h.Replicas, 0)))
		takeN(others, need, left)
	}
	for _, node := range matching {
		if total += perVector(node, mine); total >= Unlimited {
			return Unlimited
		}
	}
	return total
}

// perVector is how many of need fit in free.
func perVector(free, need []int64) int64 {
	n := int64(Unlimited)
	for j, a := range need {
		if a > 0 {
			n = min(n, free[j]/a)
		}
	}
	return max(n, 0)
}

// takeN places n replicas that each need need, each on the first node it fits on (first
// fit), and returns how many fit nowhere. Identical replicas placed first-fit one by one fill
// the first node as far as it holds them, then the next: so does takeN, a node at a time,
// which keeps a thousand Pending pods as cheap to place as one.
func takeN(nodes [][]int64, need []int64, n int64) int64 {
	for _, node := range nodes {
		if n <= 0 {
			break
		}
		k := min(perVector(node, need), n)
		if k <= 0 {
			continue
		}
		for j, a := range need {
			if node[j] != math.MaxInt64 {
				node[j] -= k * a
			}
		}
		n -= k
	}
	return n
}

// Pending returns the Pods the cluster counts as waiting for a Node (status.resourceSummary's
// allocating) as one held placement of that many replicas, each requesting the average of
// their requests, or false when the cluster reports none. The node groups' free amounts only
// subtract the Pods bound to a Node, so without it the room the member's scheduler is about
// to give the waiting Pods would be offered again: a placement the member counts as Pending
// is no longer held by the scheduler's ledger (it counts allocated and allocating Pods as
// reported), and would be booked twice while the member's scheduler is slower than its
// status sync. The average is exact for Pods of one workload and conservative otherwise
// (the Pods are placed first fit where they could fit, even those kept Pending by a
// constraint the groups do not show).
func Pending(rs *clusterv1alpha1.ResourceSummary) (Held, bool) {
	if rs == nil {
		return Held{}, false
	}
	pods := rs.Allocating[corev1.ResourcePods]
	count := pods.Value()
	if count <= 0 {
		return Held{}, false
	}
	request := make(corev1.ResourceList, len(rs.Allocating))
	for name, q := range rs.Allocating {
		if name == corev1.ResourcePods {
			continue
		}
		each := max(Amount(name, q), 0) / count
		if name == corev1.ResourceCPU {
			request[name] = *resource.NewMilliQuantity(each, resource.DecimalSI)
		} else {
			request[name] = *resource.NewQuantity(each, q.Format)
		}
	}
	return Held{Replicas: int32(min(count, math.MaxInt32)), Request: request}, true
}
