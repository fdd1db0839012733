package clusterstatus

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// semantic compares quantities by value, not by representation.
var semantic = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

func TestSummarize(t *testing.T) {
	withInit := pod("init", "n1", corev1.PodRunning, list("cpu", "100m", "memory", "100Mi"))
	withInit.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: list("cpu", "2", "memory", "10Mi")}}}
	withOverhead := pod("overhead", "n2", corev1.PodRunning, list("cpu", "1"))
	withOverhead.Spec.Overhead = list("cpu", "250m", "memory", "64Mi")
	podLevel := pod("pod-level", "n1", corev1.PodRunning, list("cpu", "100m"))
	podLevel.Spec.Resources = &corev1.ResourceRequirements{Requests: list("cpu", "1", "memory", "1Gi")}

	tests := []struct {
		name      string
		nodes     []corev1.Node
		pods      []corev1.Pod
		models    []clusterv1alpha1.ResourceModel
		wantNodes clusterv1alpha1.NodeSummary
		wantRes   clusterv1alpha1.ResourceSummary
	}{{
		name: "empty member",
	}, {
		name: "nodes only",
		nodes: []corev1.Node{
			node("n1", true, list("cpu", "4", "memory", "8Gi", "pods", "110")),
			node("n2", false, list("cpu", "2", "memory", "4Gi", "pods", "110", "nvidia.com/gpu", "1")),
		},
		wantNodes: clusterv1alpha1.NodeSummary{TotalNum: 2, ReadyNum: 1},
		wantRes: clusterv1alpha1.ResourceSummary{
			Allocatable: list("cpu", "6", "memory", "12Gi", "pods", "220", "nvidia.com/gpu", "1"),
			// The node that is not Ready is no group's.
			NodeGroups: []clusterv1alpha1.NodeGroup{{Count: 1, Free: list("cpu", "4", "memory", "8Gi", "pods", "110")}},
		},
	}, {
		name:  "bound pods are allocated, pending unbound pods are allocating, terminal pods count for nothing",
		nodes: []corev1.Node{node("n1", true, list("cpu", "4", "memory", "8Gi"))},
		pods: []corev1.Pod{
			pod("a", "n1", corev1.PodRunning, list("cpu", "500m", "memory", "1Gi"), list("cpu", "250m")),
			pod("b", "n1", corev1.PodPending, list("cpu", "1")),
			pod("c", "", corev1.PodPending, list("cpu", "2", "memory", "2Gi")),
			pod("done", "n1", corev1.PodSucceeded, list("cpu", "3")),
			pod("failed", "n1", corev1.PodFailed, list("cpu", "3")),
			pod("best-effort", "n1", corev1.PodRunning),
		},
		wantNodes: clusterv1alpha1.NodeSummary{TotalNum: 1, ReadyNum: 1},
		wantRes: clusterv1alpha1.ResourceSummary{
			Allocatable: list("cpu", "4", "memory", "8Gi"),
			Allocated:   list("cpu", "1750m", "memory", "1Gi", "pods", "3"),
			Allocating:  list("cpu", "2", "memory", "2Gi", "pods", "1"),
			NodeGroups:  []clusterv1alpha1.NodeGroup{{Count: 1, Free: list("cpu", "2200m", "memory", "7Gi")}},
		},
	}, {
		name:      "effective requests: the larger of init and app containers, plus overhead; pod-level requests win",
		nodes:     []corev1.Node{node("n1", true, list("cpu", "8")), node("n2", true, list("cpu", "8"))},
		pods:      []corev1.Pod{withInit, withOverhead, podLevel},
		wantNodes: clusterv1alpha1.NodeSummary{TotalNum: 2, ReadyNum: 2},
		wantRes: clusterv1alpha1.ResourceSummary{
			Allocatable: list("cpu", "16"),
			Allocated:   list("cpu", "4250m", "memory", "1188Mi", "pods", "3"),
			// n1: 8 - 2 (init) - 1 (pod-level); n2: 8 - 1.25, rounded down to 100m.
			NodeGroups: []clusterv1alpha1.NodeGroup{{Count: 1, Free: list("cpu", "5")}, {Count: 1, Free: list("cpu", "6700m")}},
		},
	}, {
		name: "models grade nodes by what they have free",
		nodes: []corev1.Node{
			node("small", true, list("cpu", "2", "memory", "4Gi")),
			node("big", true, list("cpu", "16", "memory", "64Gi")),
			node("big-but-busy", true, list("cpu", "16", "memory", "64Gi")),
		},
		pods:      []corev1.Pod{pod("hog", "big-but-busy", corev1.PodRunning, list("cpu", "15"))},
		models:    models(),
		wantNodes: clusterv1alpha1.NodeSummary{TotalNum: 3, ReadyNum: 3},
		wantRes: clusterv1alpha1.ResourceSummary{
			Allocatable:          list("cpu", "34", "memory", "132Gi"),
			Allocated:            list("cpu", "15", "pods", "1"),
			AllocatableModelings: []clusterv1alpha1.AllocatableModeling{{Grade: 0, Count: 2}, {Grade: 1, Count: 0}, {Grade: 2, Count: 1}},
			NodeGroups: []clusterv1alpha1.NodeGroup{
				{Count: 1, Free: list("cpu", "1", "memory", "64Gi")},
				{Count: 1, Free: list("cpu", "16", "memory", "64Gi")},
				{Count: 1, Free: list("cpu", "2", "memory", "4Gi")},
			},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes, pods := &pager[corev1.Node]{items: tt.nodes}, &pager[corev1.Pod]{items: tt.pods}
			ns, rs, err := Summarize(context.Background(), listers(nodes, pods), tt.models)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantNodes, *ns); diff != "" {
				t.Errorf("node summary (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantRes, *rs, semantic); diff != "" {
				t.Errorf("resource summary (-want +got):\n%s", diff)
			}
		})
	}
}

// models are three grades of CPU and memory: [0,4) [4,8) [8,inf) cores, [0,16) [16,32)
// [32,inf) Gi.
func models() []clusterv1alpha1.ResourceModel {
	rng := func(name, min, max string) clusterv1alpha1.ResourceModelRange {
		return clusterv1alpha1.ResourceModelRange{Name: corev1.ResourceName(name), Min: resource.MustParse(min), Max: resource.MustParse(max)}
	}
	return []clusterv1alpha1.ResourceModel{
		{Grade: 2, Ranges: []clusterv1alpha1.ResourceModelRange{rng("cpu", "8", "1024"), rng("memory", "32Gi", "1Pi")}},
		{Grade: 0, Ranges: []clusterv1alpha1.ResourceModelRange{rng("cpu", "0", "4"), rng("memory", "0", "16Gi")}},
		{Grade: 1, Ranges: []clusterv1alpha1.ResourceModelRange{rng("cpu", "4", "8"), rng("memory", "16Gi", "32Gi")}},
	}
}

func TestSummarizePages(t *testing.T) {
	const nNodes, nPods = 1234, 2*PageSize + 7
	nodes := &pager[corev1.Node]{}
	for i := range nNodes {
		nodes.items = append(nodes.items, node(fmt.Sprintf("n%d", i), i%2 == 0, list("cpu", "1", "memory", "1Gi")))
	}
	pods := &pager[corev1.Pod]{}
	for i := range nPods {
		pods.items = append(pods.items, pod(fmt.Sprintf("p%d", i), "n0", corev1.PodRunning, list("cpu", "10m")))
	}
	ns, rs, err := Summarize(context.Background(), listers(nodes, pods), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := nodes.calls, 3; got != want {
		t.Errorf("node pages: got %d, want %d", got, want)
	}
	if got, want := pods.calls, 3; got != want {
		t.Errorf("pod pages: got %d, want %d", got, want)
	}
	if nodes.maxLimit != PageSize || pods.maxLimit != PageSize {
		t.Errorf("page limits: nodes %d, pods %d, want %d", nodes.maxLimit, pods.maxLimit, PageSize)
	}
	if ns.TotalNum != nNodes || ns.ReadyNum != nNodes/2 {
		t.Errorf("node summary %+v", ns)
	}
	if cpu := rs.Allocated[corev1.ResourceCPU]; cpu.MilliValue() != 10*nPods {
		t.Errorf("allocated cpu %s, want %dm", cpu.String(), 10*nPods)
	}
}

func TestSummarizeRestartsOnExpiredContinue(t *testing.T) {
	nodes := &pager[corev1.Node]{expireAt: 2}
	for i := range PageSize + 1 {
		nodes.items = append(nodes.items, node(fmt.Sprintf("n%d", i), true, list("cpu", "1")))
	}
	pods := &pager[corev1.Pod]{}
	ns, rs, err := Summarize(context.Background(), listers(nodes, pods), nil)
	if err != nil {
		t.Fatal(err)
	}
	if ns.TotalNum != PageSize+1 {
		t.Errorf("nodes counted twice or lost after a restart: %d", ns.TotalNum)
	}
	if !equality.Semantic.DeepEqual(rs.Allocatable, list("cpu", fmt.Sprint(PageSize+1))) {
		t.Errorf("allocatable %v", rs.Allocatable)
	}

	// A second expiry is an error, not an endless walk.
	nodes = &pager[corev1.Node]{items: nodes.items, expireAt: 2}
	fail := listers(nodes, pods)
	calls := 0
	inner := fail.Nodes
	fail.Nodes = func(ctx context.Context, opts metav1.ListOptions) (*corev1.NodeList, error) {
		calls++
		if calls > 1 && opts.Continue != "" {
			nodes.expireAt = nodes.calls + 1
		}
		return inner(ctx, opts)
	}
	if _, _, err := Summarize(context.Background(), fail, nil); err == nil {
		t.Error("want an error after the continue token expired twice")
	}
}

func TestSummarizeError(t *testing.T) {
	boom := errors.New("boom")
	l := Listers{
		Nodes: func(context.Context, metav1.ListOptions) (*corev1.NodeList, error) { return nil, boom },
	}
	if _, _, err := Summarize(context.Background(), l, nil); !errors.Is(err, boom) {
		t.Errorf("got %v, want %v", err, boom)
	}
}
