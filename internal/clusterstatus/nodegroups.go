package clusterstatus

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// MaxNodeGroups is how many node groups a Cluster's status lists at most (the CRD's limit).
const MaxNodeGroups = 64

// maxCoarsening is how often the rounding steps are doubled before the smallest groups are
// dropped.
const maxCoarsening = 12

// nodeFree is what the status controller keeps of one Node while it sums a member: whether
// the scheduler may use it, its labels and taints, its allocatable amounts and the requests
// of the Pods bound to it (milli-CPUs, whole units otherwise).
type nodeFree struct {
	name        string
	schedulable bool
	labels      map[string]string
	taints      []corev1.Taint
	alloc, used map[corev1.ResourceName]int64
}

func newNodeFree(n *corev1.Node) *nodeFree {
	nf := &nodeFree{
		name:        n.Name,
		schedulable: nodeReady(n) && !n.Spec.Unschedulable,
		alloc:       make(map[corev1.ResourceName]int64, len(n.Status.Allocatable)),
		used:        map[corev1.ResourceName]int64{},
	}
	for name, q := range n.Status.Allocatable {
		if strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) && q.IsZero() {
			continue
		}
		nf.alloc[name] = amount(name, &q)
	}
	for k, v := range n.Labels {
		if k == corev1.LabelHostname || v == n.Name {
			continue // names one node: it would put every node in a group of its own
		}
		if nf.labels == nil {
			nf.labels = map[string]string{}
		}
		nf.labels[k] = v
	}
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			t.TimeAdded = nil
			nf.taints = append(nf.taints, t)
		}
	}
	slices.SortFunc(nf.taints, func(a, b corev1.Taint) int {
		return cmp.Or(cmp.Compare(a.Key, b.Key), cmp.Compare(a.Value, b.Value), cmp.Compare(a.Effect, b.Effect))
	})
	return nf
}

// request adds the requests of a Pod bound to the node; a Pod takes one "pods" slot.
func (nf *nodeFree) request(requests corev1.ResourceList) {
	for name, q := range requests {
		if _, ok := nf.alloc[name]; ok {
			nf.used[name] += amount(name, &q)
		}
	}
}

// step is the first rounding step of a resource: 100 milli-CPUs, 64Mi of memory, 1Gi of
// storage, 1 of anything else (pods, GPUs).
func step(name corev1.ResourceName) int64 {
	switch name {
	case corev1.ResourceCPU:
		return 100
	case corev1.ResourceMemory:
		return 64 << 20
	case corev1.ResourceEphemeralStorage, corev1.ResourceStorage:
		return 1 << 30
	}
	return 1
}

// groupNodes groups the schedulable nodes by labels, taints and free amounts rounded down.
// When there are more than MaxNodeGroups groups, the rounding steps of CPU, memory and
// storage are doubled until they fit (counted pods and devices stay exact), at most
// maxCoarsening times; then the groups of the fewest nodes are left out. Rounding down and
// leaving out only ever under-estimate what fits. The result is sorted, so that an unchanged
// member reports the same groups.
func groupNodes(nodes []*nodeFree) []clusterv1alpha1.NodeGroup {
	var groups []clusterv1alpha1.NodeGroup
	for shift := 0; ; shift++ {
		groups = groupAt(nodes, shift)
		if len(groups) <= MaxNodeGroups || shift == maxCoarsening {
			break
		}
	}
	if len(groups) > MaxNodeGroups {
		slices.SortStableFunc(groups, func(a, b clusterv1alpha1.NodeGroup) int { return cmp.Compare(b.Count, a.Count) })
		groups = groups[:MaxNodeGroups]
	}
	slices.SortFunc(groups, func(a, b clusterv1alpha1.NodeGroup) int { return cmp.Compare(groupKey(&a), groupKey(&b)) })
	if len(groups) == 0 {
		return nil
	}
	return groups
}

// groupAt groups the nodes with the rounding steps doubled shift times.
func groupAt(nodes []*nodeFree, shift int) []clusterv1alpha1.NodeGroup {
	index := map[string]int{}
	var groups []clusterv1alpha1.NodeGroup
	for _, n := range nodes {
		if !n.schedulable {
			continue
		}
		g := clusterv1alpha1.NodeGroup{Count: 1, Free: make(corev1.ResourceList, len(n.alloc)), Labels: n.labels, Taints: n.taints}
		for name, a := range n.alloc {
			v := a - n.used[name]
			s := step(name)
			if s > 1 {
				s <<= shift
			}
			g.Free[name] = quantity(name, max(v, 0)/s*s)
		}
		key := groupKey(&g)
		if i, ok := index[key]; ok {
			groups[i].Count++
			continue
		}
		index[key] = len(groups)
		groups = append(groups, g)
	}
	return groups
}

func quantity(name corev1.ResourceName, v int64) resource.Quantity {
	switch name {
	case corev1.ResourceCPU:
		return *resource.NewMilliQuantity(v, resource.DecimalSI)
	case corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourceStorage:
		return *resource.NewQuantity(v, resource.BinarySI)
	}
	return *resource.NewQuantity(v, resource.DecimalSI)
}

// groupKey identifies a group by everything but its count.
func groupKey(g *clusterv1alpha1.NodeGroup) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(g.Free)) {
		q := g.Free[name]
		b.WriteString(string(name) + "=" + strconv.FormatInt(amount(name, &q), 10) + ",")
	}
	b.WriteString("|")
	for _, k := range slices.Sorted(maps.Keys(g.Labels)) {
		b.WriteString(k + "=" + g.Labels[k] + ",")
	}
	b.WriteString("|")
	for _, t := range g.Taints {
		b.WriteString(t.Key + "=" + t.Value + ":" + string(t.Effect) + ",")
	}
	return b.String()
}
