package migrate

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla-io/flotilla/api/wellknown"
)

func karmadaTemplate() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{
			"namespace": "shop", "name": "web", "uid": "k-uid", "resourceVersion": "7", "generation": int64(3),
			"creationTimestamp": "2026-01-01T00:00:00Z", "managedFields": []any{map[string]any{"manager": "kubectl"}},
			"finalizers": []any{"x"}, "ownerReferences": []any{map[string]any{"name": "o"}},
			"labels": map[string]any{"app": "web", wellknown.PropagationPolicyPermanentIDLabel: "id",
				wellknown.RetainReplicasLabel: "true"},
			"annotations": map[string]any{wellknown.PropagationPolicyNameAnnotation: "pp", wellknown.PropagationPolicyNamespaceAnnotation: "shop",
				wellknown.ClusterPropagationPolicyNameAnnotation: "cpp", "team": "a"},
		},
		"spec":   map[string]any{"replicas": int64(2)},
		"status": map[string]any{"readyReplicas": int64(2)},
	}}
}

func TestTemplate(t *testing.T) {
	in := karmadaTemplate()
	got := Template(in)
	if in.GetUID() != "k-uid" || in.GetLabels()[wellknown.PropagationPolicyPermanentIDLabel] == "" {
		t.Fatal("Template changed its input")
	}
	if got.GetUID() != "" || got.GetResourceVersion() != "" || got.GetGeneration() != 0 || len(got.GetManagedFields()) != 0 ||
		len(got.GetFinalizers()) != 0 || len(got.GetOwnerReferences()) != 0 || got.GetCreationTimestamp() != (metav1.Time{}) {
		t.Errorf("server fields kept: %v", got.Object["metadata"])
	}
	if _, ok := got.Object["status"]; ok {
		t.Error("status kept")
	}
	wantLabels := map[string]string{"app": "web", wellknown.RetainReplicasLabel: "true"}
	if l := got.GetLabels(); len(l) != len(wantLabels) || l["app"] != "web" || l[wellknown.RetainReplicasLabel] != "true" {
		t.Errorf("labels %v, want %v (the claim's gone, the user's kept)", l, wantLabels)
	}
	a := got.GetAnnotations()
	if len(a) != 2 || a["team"] != "a" || a[wellknown.AdoptKarmadaUIDAnnotation] != "k-uid" {
		t.Errorf("annotations %v", a)
	}
	if n, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas"); n != 2 {
		t.Errorf("spec changed: %v", got.Object["spec"])
	}
}

func TestCopyWithoutLabels(t *testing.T) {
	in := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c", "labels": map[string]any{wellknown.ClusterPropagationPolicyPermanentIDLabel: "x"}}}}
	if got := Copy(in); got.GetLabels() != nil || got.GetAnnotations() != nil {
		t.Errorf("labels %v annotations %v, want none", got.GetLabels(), got.GetAnnotations())
	}
}

func TestSame(t *testing.T) {
	want := Template(karmadaTemplate())
	host := want.DeepCopy()
	host.SetUID("host-uid")
	host.SetLabels(map[string]string{"app": "web", wellknown.RetainReplicasLabel: "true", "added-by-host": "x"})
	host.Object["status"] = map[string]any{"replicas": int64(1)}
	if !Same(host, want) {
		t.Error("what the host added (uid, labels, status) makes no difference")
	}
	edited := host.DeepCopy()
	_ = unstructured.SetNestedField(edited.Object, int64(3), "spec", "replicas")
	if Same(edited, want) {
		t.Error("a different spec is not the same")
	}
	relabelled := host.DeepCopy()
	relabelled.SetLabels(map[string]string{"app": "api"})
	if Same(relabelled, want) {
		t.Error("a label of the copy with another value is not the same")
	}
	extra := host.DeepCopy()
	extra.Object["data"] = map[string]any{"k": "v"}
	if Same(extra, want) {
		t.Error("content the copy does not have is not the same")
	}
}
