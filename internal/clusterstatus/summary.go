package clusterstatus

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

const (
	// PageSize is how many objects one LIST page asks for.
	PageSize = 500
	// NonTerminalPods is the field selector of the Pods that hold or wait for resources:
	// Succeeded and Failed Pods hold none.
	NonTerminalPods = "status.phase!=" + string(corev1.PodSucceeded) + ",status.phase!=" + string(corev1.PodFailed)
)

// Listers list one page of a member's Nodes and of its Pods in all namespaces. A member's
// typed clientset fits: Listers{Nodes: cs.CoreV1().Nodes().List, Pods: cs.CoreV1().Pods("").List}.
type Listers struct {
	Nodes func(context.Context, metav1.ListOptions) (*corev1.NodeList, error)
	Pods  func(context.Context, metav1.ListOptions) (*corev1.PodList, error)
}

// Summarize walks a member's Nodes and non-terminal Pods page by page (PageSize objects a
// page) and returns:
//
//   - the number of Nodes and of Ready Nodes;
//   - allocatable: the sum of every Node's allocatable resources;
//   - allocated: the sum of the requests of the Pods bound to a Node, plus one "pods" each;
//   - allocating: the same for the Pods still waiting for a Node (Pending, no nodeName);
//   - with models, how many Nodes fall in each grade (see Grade);
//   - the workloads with Pods the member's scheduler found unschedulable, with how many and
//     since when (UnschedulableWorkloads).
//
// Requests are the effective requests the scheduler uses (init containers, sidecars, pod
// overhead and pod-level resources included). Sums are added page by page and each page is
// dropped before the next is asked for, so memory does not grow with the number of Pods:
// only the totals are kept and, when models are given, a few numbers per Node.
//
// A continue token that expired (410 Gone, the member compacted its history mid-walk) makes
// that walk start over once from the beginning, with its sums reset.
func Summarize(ctx context.Context, l Listers, models []clusterv1alpha1.ResourceModel) (*clusterv1alpha1.NodeSummary, *clusterv1alpha1.ResourceSummary, error) {
	s := newSummer(models)
	err := paginate(ctx, "", s.resetNodes, func(ctx context.Context, opts metav1.ListOptions) (string, error) {
		list, err := l.Nodes(ctx, opts)
		if err != nil {
			return "", err
		}
		for i := range list.Items {
			s.addNode(&list.Items[i])
		}
		return list.Continue, nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("list nodes: %w", err)
	}
	err = paginate(ctx, NonTerminalPods, s.resetPods, func(ctx context.Context, opts metav1.ListOptions) (string, error) {
		list, err := l.Pods(ctx, opts)
		if err != nil {
			return "", err
		}
		for i := range list.Items {
			s.addPod(&list.Items[i])
		}
		return list.Continue, nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("list pods: %w", err)
	}
	return s.nodeSummary(), s.resourceSummary(), nil
}

// paginate asks for page after page until the continue token runs out. page lists one page
// and returns its continue token. An expired continue token calls restart and starts over,
// once.
func paginate(ctx context.Context, fieldSelector string, restart func(), page func(context.Context, metav1.ListOptions) (string, error)) error {
	opts := metav1.ListOptions{Limit: PageSize, FieldSelector: fieldSelector}
	restarted := false
	for {
		next, err := page(ctx, opts)
		if err != nil && apierrors.IsResourceExpired(err) && opts.Continue != "" && !restarted {
			restarted = true
			restart()
			opts.Continue = ""
			continue
		}
		if err != nil {
			return err
		}
		if next == "" {
			return nil
		}
		opts.Continue = next
	}
}

// summer holds the running totals of one Summarize.
type summer struct {
	total, ready int32
	allocatable  totals
	allocated    totals
	allocating   totals
	podCount     struct{ allocated, allocating int64 }
	// unschedulable counts the Pods the member's scheduler could not place, per workload.
	unschedulable unschedulable

	// grading is nil without models.
	grading *grading
	// nodes are the Nodes by name, for the node groups.
	nodes map[string]*nodeFree
	reuse corev1.ResourceList
}

func newSummer(models []clusterv1alpha1.ResourceModel) *summer {
	s := &summer{allocatable: totals{}, allocated: totals{}, allocating: totals{}, reuse: corev1.ResourceList{}, nodes: map[string]*nodeFree{},
		unschedulable: unschedulable{}}
	if len(models) > 0 {
		s.grading = newGrading(models)
	}
	return s
}

func (s *summer) resetNodes() {
	s.total, s.ready, s.allocatable = 0, 0, totals{}
	s.nodes = map[string]*nodeFree{}
	if s.grading != nil {
		s.grading.resetNodes()
	}
}

func (s *summer) resetPods() {
	s.allocated, s.allocating = totals{}, totals{}
	s.podCount.allocated, s.podCount.allocating = 0, 0
	s.unschedulable = unschedulable{}
	for _, n := range s.nodes {
		clear(n.used)
	}
	if s.grading != nil {
		s.grading.resetRequests()
	}
}

func (s *summer) addNode(n *corev1.Node) {
	s.total++
	if nodeReady(n) {
		s.ready++
	}
	s.allocatable.add(n.Status.Allocatable)
	s.nodes[n.Name] = newNodeFree(n)
	if s.grading != nil {
		s.grading.addNode(n.Name, n.Status.Allocatable)
	}
}

func (s *summer) addPod(p *corev1.Pod) {
	switch {
	case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
		// The field selector leaves these out; a lister that ignores it must not count them.
	case p.Spec.NodeName != "":
		s.addRequests(p, s.allocated, p.Spec.NodeName)
		s.podCount.allocated++
		if n := s.nodes[p.Spec.NodeName]; n != nil {
			n.request(onePod)
		}
	case p.Status.Phase == corev1.PodPending || p.Status.Phase == "":
		s.addRequests(p, s.allocating, "")
		s.podCount.allocating++
		s.unschedulable.add(p)
	}
}

// addRequests adds the Pod's effective requests to t and, when it is bound and Nodes are
// graded, to its Node's. In the common case (no init containers, overhead or pod-level
// resources) those are its containers' requests, added as they are without building a new
// list; otherwise they are what the scheduler computes.
func (s *summer) addRequests(p *corev1.Pod, t totals, nodeName string) {
	add := func(l corev1.ResourceList) {
		t.add(l)
		if nodeName == "" {
			return
		}
		if s.grading != nil {
			s.grading.addRequests(nodeName, l)
		}
		if n := s.nodes[nodeName]; n != nil {
			n.request(l)
		}
	}
	if len(p.Spec.InitContainers) == 0 && p.Spec.Overhead == nil && p.Spec.Resources == nil {
		for i := range p.Spec.Containers {
			add(p.Spec.Containers[i].Resources.Requests)
		}
		return
	}
	add(resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{Reuse: s.reuse}))
}

func (s *summer) nodeSummary() *clusterv1alpha1.NodeSummary {
	return &clusterv1alpha1.NodeSummary{TotalNum: s.total, ReadyNum: s.ready}
}

func (s *summer) resourceSummary() *clusterv1alpha1.ResourceSummary {
	rs := &clusterv1alpha1.ResourceSummary{
		Allocatable: s.allocatable.list(),
		Allocated:   s.allocated.list(),
		Allocating:  s.allocating.list(),
	}
	setPods(&rs.Allocated, s.podCount.allocated)
	setPods(&rs.Allocating, s.podCount.allocating)
	if s.grading != nil {
		rs.AllocatableModelings = s.grading.modelings()
	}
	nodes := make([]*nodeFree, 0, len(s.nodes))
	for _, n := range s.nodes {
		nodes = append(nodes, n)
	}
	rs.NodeGroups = groupNodes(nodes)
	rs.UnschedulableWorkloads = s.unschedulable.list()
	return rs
}

// setPods records a pod count as the "pods" resource, as the scheduler reads it: each Pod
// takes one of a Node's allocatable pods.
func setPods(l *corev1.ResourceList, n int64) {
	if n == 0 {
		return
	}
	if *l == nil {
		*l = corev1.ResourceList{}
	}
	(*l)[corev1.ResourcePods] = *resource.NewQuantity(n, resource.DecimalSI)
}

// onePod is what a bound Pod takes of its Node's "pods".
var onePod = corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(1, resource.DecimalSI)}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// totals sums resource lists.
type totals map[corev1.ResourceName]*resource.Quantity

func (t totals) add(l corev1.ResourceList) {
	for name, q := range l {
		if sum, ok := t[name]; ok {
			sum.Add(q)
			continue
		}
		c := q.DeepCopy()
		t[name] = &c
	}
}

// list returns the totals as a ResourceList, nil when there are none.
func (t totals) list() corev1.ResourceList {
	if len(t) == 0 {
		return nil
	}
	out := make(corev1.ResourceList, len(t))
	for name, q := range t {
		out[name] = *q
	}
	return out
}
