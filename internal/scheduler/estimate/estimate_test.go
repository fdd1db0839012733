package estimate

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

func list(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func group(count int32, free corev1.ResourceList) clusterv1alpha1.NodeGroup {
	return clusterv1alpha1.NodeGroup{Count: count, Free: free}
}

func TestReplicas(t *testing.T) {
	gpu := group(2, list("cpu", "16", "memory", "64Gi", "nvidia.com/gpu", "4", "pods", "110"))
	gpu.Labels = map[string]string{"accelerator": "a100"}
	tainted := group(3, list("cpu", "8", "memory", "32Gi", "pods", "110"))
	tainted.Taints = []corev1.Taint{{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}}
	preferNo := group(1, list("cpu", "8", "pods", "110"))
	preferNo.Taints = []corev1.Taint{{Key: "x", Effect: corev1.TaintEffectPreferNoSchedule}}
	small := group(20, list("cpu", "1", "memory", "4Gi", "pods", "110"))
	large := group(2, list("cpu", "16", "memory", "64Gi", "pods", "110"))

	tests := []struct {
		name   string
		groups []clusterv1alpha1.NodeGroup
		rr     *workv1alpha2.ReplicaRequirements
		held   []Held
		want   int64
	}{
		{name: "no groups", want: 0},
		{name: "20 free CPUs on 1-CPU nodes hold no 6-CPU replica", groups: []clusterv1alpha1.NodeGroup{small},
			rr: &workv1alpha2.ReplicaRequirements{ResourceRequest: list("cpu", "6")}, want: 0},
		{name: "large nodes hold two each", groups: []clusterv1alpha1.NodeGroup{small, large},
			rr: &workv1alpha2.ReplicaRequirements{ResourceRequest: list("cpu", "6")}, want: 4},
		{name: "1-CPU replicas use both", groups: []clusterv1alpha1.NodeGroup{small, large},
			rr: &workv1alpha2.ReplicaRequirements{ResourceRequest: list("cpu", "1")}, want: 20 + 32},
		{name: "millicores", groups: []clusterv1alpha1.NodeGroup{small},
			rr: &workv1alpha2.ReplicaRequirements{ResourceRequest: list("cpu", "300m")}, want: 60},
		{name: "memory bounds", groups: []clusterv1alpha1.NodeGroup{large},
			rr: &workv1alpha2.ReplicaRequirements{ResourceRequest: list("cpu", "1", "memory", "30Gi")}, want: 4},
		{name: "pod slots bound", groups: []clusterv1alpha1.NodeGroup{group(1, list("cpu", "100", "pods", "3"))},
			rr: &workv1alpha2.ReplicaRequirements{ResourceRequest: list("cpu", "1")}, want: 3},
		{name: "no requests: pod slots", groups: []clusterv1alpha1.NodeGroup{small}, want: 20 * 110},
		{name: "no requests, no slots: unlimited", groups: []clusterv1alpha1.NodeGroup{group(1, list("cpu", "1"))}, want: Unlimited},
		{name: "GPU only on GPU nodes", groups: []clusterv1alpha1.NodeGroup{small, large, gpu},
			rr: &workv1alpha2.ReplicaRequirements{ResourceRequest: list("cpu", "1", "nvidia.com/gpu", "1")}, want: 8},
		{name: "GPU nowhere", groups: []clusterv1alpha1.NodeGroup{small, large},
			rr: &workv1alpha2.ReplicaRequirements{ResourceRequest: list("nvidia.com/gpu", "1")}, want: 0},
		{name: "node selector", groups: []clusterv1alpha1.NodeGroup{large, gpu},
			rr: &workv1alpha2.ReplicaRequirements{ResourceRequest: list("cpu", "8"),
				NodeClaim: &workv1alpha2.NodeClaim{NodeSelector: map[string]string{"accelerator": "a100"}}}, want: 4},
		{name: "required node affinity", groups: []clusterv1alpha1.NodeGroup{large, gpu},
			rr: &workv1alpha2.ReplicaRequirements{ResourceRequest: list("cpu", "8"),
				NodeClaim: &workv1alpha2.NodeClaim{HardNodeAffinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "accelerator", Operator: corev1.NodeSelectorOpDoesNotExist}}}}}}}, want: 4},
		{name: "untolerated taint", groups: []clusterv1alpha1.NodeGroup{tainted, preferNo},
			rr: &workv1alpha2.ReplicaRequirements{ResourceRequest: list("cpu", "4")}, want: 2},
		{name: "tolerated taint", groups: []clusterv1alpha1.NodeGroup{tainted},
			rr: &workv1alpha2.ReplicaRequirements{ResourceRequest: list("cpu", "4"),
				NodeClaim: &workv1alpha2.NodeClaim{Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}}}, want: 6},
		{name: "held replicas take the room first", groups: []clusterv1alpha1.NodeGroup{large},
			rr:   &workv1alpha2.ReplicaRequirements{ResourceRequest: list("cpu", "6")},
			held: []Held{{Replicas: 3, Request: list("cpu", "6")}}, want: 1},
		{name: "held replicas that fit nowhere take nothing", groups: []clusterv1alpha1.NodeGroup{large},
			rr:   &workv1alpha2.ReplicaRequirements{ResourceRequest: list("cpu", "6")},
			held: []Held{{Replicas: 2, Request: list("cpu", "32")}}, want: 4},
		{name: "held replicas go to the binding's nodes first", groups: []clusterv1alpha1.NodeGroup{large, gpu},
			rr:   &workv1alpha2.ReplicaRequirements{ResourceRequest: list("nvidia.com/gpu", "2")},
			held: []Held{{Replicas: 2, Request: list("cpu", "16")}}, want: 4},
		{name: "held pod slots", groups: []clusterv1alpha1.NodeGroup{group(2, list("pods", "3"))},
			held: []Held{{Replicas: 4}}, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := New(tt.rr).Replicas(tt.groups, tt.held); got != tt.want {
				t.Errorf("Replicas() = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestReplicasBeyondExpandedNodes(t *testing.T) {
	groups := []clusterv1alpha1.NodeGroup{group(MaxExpandedNodes+10, list("cpu", "2"))}
	e := New(&workv1alpha2.ReplicaRequirements{ResourceRequest: list("cpu", "1")})
	if got, want := e.Replicas(groups, []Held{{Replicas: 1, Request: list("cpu", "1")}}), int64(2*(MaxExpandedNodes+10)-1); got != want {
		t.Errorf("Replicas() = %d, want %d", got, want)
	}
}

func FuzzReplicas(f *testing.F) {
	f.Add("6", "2", int32(3), "16", int32(1), "1")
	f.Add("-1", "0", int32(-5), "1e30", int32(1<<30), "999999999999999")
	f.Fuzz(func(t *testing.T, req, slots string, count int32, cpu string, heldN int32, heldCPU string) {
		q := func(s string) (resource.Quantity, bool) {
			v, err := resource.ParseQuantity(s)
			return v, err == nil
		}
		r, ok1 := q(req)
		s, ok2 := q(slots)
		c, ok3 := q(cpu)
		h, ok4 := q(heldCPU)
		if !ok1 || !ok2 || !ok3 || !ok4 {
			return
		}
		groups := []clusterv1alpha1.NodeGroup{{Count: count % 10000, Free: corev1.ResourceList{"cpu": c, "pods": s}}}
		e := New(&workv1alpha2.ReplicaRequirements{ResourceRequest: corev1.ResourceList{"cpu": r}})
		plain := e.Replicas(groups, nil)
		after := e.Replicas(groups, []Held{{Replicas: heldN % 10000, Request: corev1.ResourceList{"cpu": h}}})
		if plain < 0 || plain > Unlimited || after < 0 || after > plain {
			t.Fatalf("Replicas() = %d, after held = %d", plain, after)
		}
	})
}

func TestPending(t *testing.T) {
	if _, ok := Pending(nil); ok {
		t.Error("Pending(nil) reports Pods")
	}
	if _, ok := Pending(&clusterv1alpha1.ResourceSummary{Allocating: list("cpu", "0", "pods", "0")}); ok {
		t.Error("no Pod waiting: Pending reports Pods")
	}
	h, ok := Pending(&clusterv1alpha1.ResourceSummary{Allocating: list("cpu", "2500m", "memory", "3Gi", "nvidia.com/gpu", "2", "pods", "2")})
	if !ok || h.Replicas != 2 {
		t.Fatalf("Pending() = %+v, %v; want 2 replicas", h, ok)
	}
	for name, want := range map[corev1.ResourceName]string{"cpu": "1250m", "memory": "1536Mi", "nvidia.com/gpu": "1"} {
		if got := h.Request[name]; got.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("Pending() requests %s %s each, want %s", name, got.String(), want)
		}
	}
	if _, ok := h.Request[corev1.ResourcePods]; ok {
		t.Error(`Pending() requests "pods"`)
	}
}

// takeN places identical replicas as placing them first fit one at a time would.
func TestTakeNIsFirstFit(t *testing.T) {
	oneByOne := func(nodes [][]int64, need []int64, n int64) int64 {
		for ; n > 0; n-- {
			placed := false
			for _, node := range nodes {
				if node[0] >= need[0] && node[1] >= need[1] {
					node[0] -= need[0]
					node[1] -= need[1]
					placed = true
					break
				}
			}
			if !placed {
				break
			}
		}
		return n
	}
	for _, n := range []int64{0, 1, 3, 7, 50} {
		a := [][]int64{{8000, 110}, {2000, 110}, {7900, 3}, {500, 110}}
		b := [][]int64{{8000, 110}, {2000, 110}, {7900, 3}, {500, 110}}
		need := []int64{2000, 1}
		if got, want := takeN(a, need, n), oneByOne(b, need, n); got != want {
			t.Errorf("takeN(%d) left %d unplaced, one by one %d", n, got, want)
		}
		for i := range a {
			if a[i][0] != b[i][0] || a[i][1] != b[i][1] {
				t.Errorf("takeN(%d): node %d has %v free, one by one %v", n, i, a[i], b[i])
			}
		}
	}
}
