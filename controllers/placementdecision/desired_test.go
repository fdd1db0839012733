package placementdecision

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	inventoryv1alpha1 "github.com/flotilla-io/flotilla/api/clusterinventory/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

func rb(ns, name string, clusters ...workv1alpha2.TargetCluster) *workv1alpha2.ResourceBinding {
	return &workv1alpha2.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)},
		Spec:       workv1alpha2.ResourceBindingSpec{Replicas: 6, Clusters: clusters},
	}
}

func targets(n int) []workv1alpha2.TargetCluster {
	out := make([]workv1alpha2.TargetCluster, n)
	for i := range out {
		// Out of order on purpose: the slices list clusters sorted.
		out[i] = workv1alpha2.TargetCluster{Name: fmt.Sprintf("m%03d", n-1-i)}
	}
	return out
}

func names(d *inventoryv1alpha1.PlacementDecision) []string {
	var out []string
	for _, c := range d.Decisions {
		out = append(out, c.ClusterProfileRef.Name)
	}
	return out
}

func TestDesiredSlicing(t *testing.T) {
	for _, tc := range []struct {
		clusters int
		sizes    []int
	}{
		{0, []int{0}}, {1, []int{1}}, {100, []int{100}}, {101, []int{100, 1}}, {250, []int{100, 100, 50}},
	} {
		t.Run(fmt.Sprint(tc.clusters), func(t *testing.T) {
			got := Desired(Input{Binding: rb("apps", "web-deployment", targets(tc.clusters)...), ProfileNamespace: "inv"})
			var sizes []int
			var all []string
			key := DecisionKey("apps", "web-deployment")
			for i, d := range got {
				sizes = append(sizes, len(d.Decisions))
				all = append(all, names(d)...)
				if d.Name != fmt.Sprintf("web-deployment-%d", i) || d.Namespace != "apps" {
					t.Errorf("slice %d is %s/%s", i, d.Namespace, d.Name)
				}
				if d.Labels[inventoryv1alpha1.DecisionKeyLabel] != key || d.Labels[inventoryv1alpha1.DecisionIndexLabel] != fmt.Sprint(i) ||
					d.Labels[wellknown.InventoryManagedByLabel] != wellknown.InventoryManagedBy {
					t.Errorf("slice %d labels %v", i, d.Labels)
				}
				if d.Annotations[BindingAnnotation] != "ResourceBinding/apps/web-deployment" {
					t.Errorf("slice %d annotations %v", i, d.Annotations)
				}
				if len(d.OwnerReferences) != 1 || d.OwnerReferences[0].Kind != "ResourceBinding" || d.OwnerReferences[0].UID != "uid-web-deployment" {
					t.Errorf("slice %d owners %v", i, d.OwnerReferences)
				}
				if d.SchedulerName != wellknown.DefaultSchedulerName {
					t.Errorf("scheduler %q", d.SchedulerName)
				}
				if d.Decisions == nil {
					t.Errorf("slice %d: decisions is nil (the schema requires the field)", i)
				}
			}
			if diff := cmp.Diff(tc.sizes, sizes); diff != "" {
				t.Errorf("slice sizes (-want +got):\n%s", diff)
			}
			for i := 1; i < len(all); i++ {
				if all[i-1] >= all[i] {
					t.Fatalf("clusters not in order across slices at %d: %s, %s", i, all[i-1], all[i])
				}
			}
			if len(all) != tc.clusters {
				t.Errorf("%d clusters listed, want %d", len(all), tc.clusters)
			}
		})
	}
}

func TestDesiredReferencesAndReasons(t *testing.T) {
	b := rb("apps", "web", workv1alpha2.TargetCluster{Name: "b", Replicas: 4}, workv1alpha2.TargetCluster{Name: "a"})
	b.Spec.SchedulerName = "my-scheduler"
	got := Desired(Input{Binding: b, ProfileNamespace: "inv"})
	want := []inventoryv1alpha1.ClusterDecision{
		{ClusterProfileRef: inventoryv1alpha1.ClusterProfileReference{Name: "a", Namespace: "inv"}, Reason: "scheduled"},
		{ClusterProfileRef: inventoryv1alpha1.ClusterProfileReference{Name: "b", Namespace: "inv"}, Reason: "scheduled with 4 of 6 replicas"},
	}
	if diff := cmp.Diff(want, got[0].Decisions); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
	if got[0].SchedulerName != "my-scheduler" {
		t.Errorf("scheduler %q", got[0].SchedulerName)
	}
}

func TestDesiredClusterResourceBinding(t *testing.T) {
	crb := &workv1alpha2.ClusterResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "ns-namespace", UID: "u"},
		Spec:       workv1alpha2.ResourceBindingSpec{Clusters: []workv1alpha2.TargetCluster{{Name: "m1"}}},
	}
	got := Desired(Input{Binding: crb, ProfileNamespace: "inv"})
	if len(got) != 1 || got[0].Namespace != "inv" || got[0].Name != "crb-ns-namespace-0" {
		t.Fatalf("slices %s/%s", got[0].Namespace, got[0].Name)
	}
	if got[0].Annotations[BindingAnnotation] != "ClusterResourceBinding/ns-namespace" || got[0].OwnerReferences[0].Kind != "ClusterResourceBinding" {
		t.Errorf("annotations %v owners %v", got[0].Annotations, got[0].OwnerReferences)
	}
	if k := DecisionKey("", "ns-namespace"); got[0].Labels[inventoryv1alpha1.DecisionKeyLabel] != k || !strings.HasPrefix(k, "crb-") {
		t.Errorf("key %q", got[0].Labels[inventoryv1alpha1.DecisionKeyLabel])
	}
}

func TestNamesAndKeysFit(t *testing.T) {
	long := strings.Repeat("x", 253)
	ns, base := Location("apps", long, "inv")
	if ns != "apps" || len(SliceName(base, 999999)) > 253 {
		t.Errorf("slice name of a 253-character binding is %d characters", len(SliceName(base, 999999)))
	}
	_, other := Location("apps", long[:252]+"y", "inv")
	if base == other {
		t.Errorf("two long names share the base %s", base)
	}
	for _, k := range []string{DecisionKey("apps", long), DecisionKey("", long)} {
		if len(k) > 63 {
			t.Errorf("decision key %q is longer than a label value may be", k)
		}
	}
	if DecisionKey("a", "b-c") == DecisionKey("a-b", "c") || DecisionKey("apps", "x") == DecisionKey("", "x") {
		t.Error("decision keys collide")
	}
}
