package clusterstatus

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

func TestGroupNodes(t *testing.T) {
	labelled := func(n corev1.Node, kv ...string) corev1.Node {
		n.Labels = map[string]string{corev1.LabelHostname: n.Name, "id": n.Name}
		for i := 0; i < len(kv); i += 2 {
			n.Labels[kv[i]] = kv[i+1]
		}
		return n
	}
	cordoned := node("cordoned", true, list("cpu", "8"))
	cordoned.Spec.Unschedulable = true
	tainted := node("t1", true, list("cpu", "8"))
	now := metav1.Now()
	tainted.Spec.Taints = []corev1.Taint{
		{Key: "b", Effect: corev1.TaintEffectNoExecute, TimeAdded: &now},
		{Key: "a", Effect: corev1.TaintEffectNoSchedule},
		{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule},
	}

	tests := []struct {
		name  string
		nodes []corev1.Node
		want  []clusterv1alpha1.NodeGroup
	}{
		{name: "none"},
		{name: "equal nodes share a group; labels naming one node are left out",
			nodes: []corev1.Node{
				labelled(node("n1", true, list("cpu", "8", "nvidia.com/gpu", "2")), "zone", "a"),
				labelled(node("n2", true, list("cpu", "8050m", "nvidia.com/gpu", "2")), "zone", "a"),
				labelled(node("n3", true, list("cpu", "8", "nvidia.com/gpu", "2")), "zone", "b"),
			},
			want: []clusterv1alpha1.NodeGroup{
				{Count: 2, Free: list("cpu", "8", "nvidia.com/gpu", "2"), Labels: map[string]string{"zone": "a"}},
				{Count: 1, Free: list("cpu", "8", "nvidia.com/gpu", "2"), Labels: map[string]string{"zone": "b"}},
			}},
		{name: "not Ready and cordoned nodes are left out",
			nodes: []corev1.Node{node("down", false, list("cpu", "8")), cordoned}},
		{name: "only NoSchedule and NoExecute taints, sorted, without time",
			nodes: []corev1.Node{tainted},
			want: []clusterv1alpha1.NodeGroup{{Count: 1, Free: list("cpu", "8"), Taints: []corev1.Taint{
				{Key: "a", Effect: corev1.TaintEffectNoSchedule}, {Key: "b", Effect: corev1.TaintEffectNoExecute}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var nodes []*nodeFree
			for i := range tt.nodes {
				nodes = append(nodes, newNodeFree(&tt.nodes[i]))
			}
			if diff := cmp.Diff(tt.want, groupNodes(nodes), semantic); diff != "" {
				t.Errorf("groupNodes() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGroupNodesCoarsens(t *testing.T) {
	// 200 nodes with 200 different free CPUs: rounding coarsens until at most MaxNodeGroups,
	// always down.
	var nodes []*nodeFree
	for i := range 200 {
		n := node("n"+strconv.Itoa(i), true, list("cpu", strconv.Itoa(1000+i*37)+"m", "pods", "110"))
		nodes = append(nodes, newNodeFree(&n))
	}
	groups := groupNodes(nodes)
	if len(groups) > MaxNodeGroups {
		t.Fatalf("%d groups, want at most %d", len(groups), MaxNodeGroups)
	}
	var count int32
	var cpu int64
	for _, g := range groups {
		count += g.Count
		cpu += g.Free.Cpu().MilliValue() * int64(g.Count)
		if g.Free.Pods().Value() != 110 {
			t.Errorf("pods rounded: %v", g.Free)
		}
	}
	var exact int64
	for i := range 200 {
		exact += int64(1000 + i*37)
	}
	if count != 200 || cpu > exact || cpu < exact*3/4 {
		t.Errorf("%d nodes with %dm free, want 200 with at most %dm and not much less", count, cpu, exact)
	}

	// Labels unique per node cannot be coarsened: the biggest groups are kept.
	nodes = nil
	for i := range 100 {
		n := node("n"+strconv.Itoa(i), true, list("cpu", "1"))
		n.Labels = map[string]string{"serial": strconv.Itoa(i % 80)}
		nodes = append(nodes, newNodeFree(&n))
	}
	groups = groupNodes(nodes)
	if len(groups) != MaxNodeGroups {
		t.Fatalf("%d groups, want %d", len(groups), MaxNodeGroups)
	}
	twos := 0
	for _, g := range groups {
		if g.Count == 2 {
			twos++
		}
	}
	if twos != 20 {
		t.Errorf("%d groups of 2 nodes kept, want all 20", twos)
	}
}
