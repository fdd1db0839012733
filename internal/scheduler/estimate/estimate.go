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
		per := e.perNode(freeOf(g.Free))
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

// free is a node's free amounts by resource.
type free map[corev1.ResourceName]int64

func freeOf(l corev1.ResourceList) free {
	f := make(free, len(l))
	for name, q := range l {
		f[name] = max(Amount(name, q), 0)
	}
	return f
}

// perNode is how many replicas fit in f.
func (e *Estimator) perNode(f free) int64 {
	n := int64(Unlimited)
	if slots, ok := f[corev1.ResourcePods]; ok {
		n = min(n, slots)
	}
	for _, r := range e.request {
		n = min(n, f[r.name]/r.amount)
		if n == 0 {
			return 0
		}
	}
	return max(n, 0)
}

// node is one simulated node.
type node struct {
	free    free
	matches bool
}

// replicasAfter places the held replicas node by node, first on the nodes the binding could
// use (the worst case for it), then counts what is left.
func (e *Estimator) replicasAfter(groups []clusterv1alpha1.NodeGroup, held []Held) int64 {
	var nodes []node
	var total int64 // of the nodes beyond MaxExpandedNodes
	for i := range groups {
		g := &groups[i]
		matches := e.Matches(g)
		count := int(max(g.Count, 0))
		expand := min(count, MaxExpandedNodes-len(nodes))
		for range expand {
			nodes = append(nodes, node{free: freeOf(g.Free), matches: matches})
		}
		if matches && count > expand {
			total = min(total+e.perNode(freeOf(g.Free))*int64(count-expand), Unlimited)
		}
	}
	// Matching nodes first: held replicas take the binding's room before anything else.
	ordered := make([]*node, 0, len(nodes))
	for i := range nodes {
		if nodes[i].matches {
			ordered = append(ordered, &nodes[i])
		}
	}
	for i := range nodes {
		if !nodes[i].matches {
			ordered = append(ordered, &nodes[i])
		}
	}
	for _, h := range held {
		req := needs(h.Request)
		for range max(h.Replicas, 0) {
			for _, n := range ordered {
				if take(n.free, req) {
					break
				}
			}
			// A held replica that fits nowhere stays Pending in the member: it takes nothing.
		}
	}
	for _, n := range nodes {
		if !n.matches {
			continue
		}
		per := e.perNode(n.free)
		if per >= Unlimited {
			return Unlimited
		}
		if total += per; total >= Unlimited {
			return Unlimited
		}
	}
	return total
}

// take takes one replica's request (and a pod slot) from f when it fits.
func take(f free, req []need) bool {
	if slots, ok := f[corev1.ResourcePods]; ok && slots < 1 {
		return false
	}
	for _, r := range req {
		if f[r.name] < r.amount {
			return false
		}
	}
	if _, ok := f[corev1.ResourcePods]; ok {
		f[corev1.ResourcePods]--
	}
	for _, r := range req {
		f[r.name] -= r.amount
	}
	return true
}
