package applied

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func obj(apiVersion, kind string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": "x", "namespace": "ns"}}}
	for k, v := range fields {
		u.Object[k] = v
	}
	return u
}

func withManager(u *unstructured.Unstructured, manager, apiVersion string, op metav1.ManagedFieldsOperationType, fields string) *unstructured.Unstructured {
	mf := append(u.GetManagedFields(), metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: apiVersion,
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}})
	u.SetManagedFields(mf)
	return u
}

// binding is a ValidatingAdmissionPolicyBinding whose spec.matchResources (an atomic map) is
// matchResources.
func binding(matchResources map[string]any) *unstructured.Unstructured {
	u := obj("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding", map[string]any{"spec": map[string]any{"matchResources": matchResources}})
	unstructured.RemoveNestedField(u.Object, "metadata", "namespace")
	return u
}

func TestUnchanged(t *testing.T) {
	data := func(kv ...string) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	desired := obj("v1", "ConfigMap", map[string]any{"data": data("a", "1")})
	owned := `{"f:data":{"f:a":{}}}`
	widget := obj("example.com/v1", "Widget", map[string]any{"spec": map[string]any{"size": int64(3), "tags": []any{"x"}}})
	cases := []struct {
		name          string
		live, desired *unstructured.Unstructured
		want          bool
	}{
		{"as applied", withManager(obj("v1", "ConfigMap", map[string]any{"data": data("a", "1")}), "flotilla", "v1", metav1.ManagedFieldsOperationApply, owned), desired, true},
		{"someone else's fields beside", withManager(withManager(obj("v1", "ConfigMap", map[string]any{"data": data("a", "1", "b", "2")}),
			"flotilla", "v1", metav1.ManagedFieldsOperationApply, owned), "kubectl", "v1", metav1.ManagedFieldsOperationUpdate, `{"f:data":{"f:b":{}}}`), desired, true},
		{"a field taken by someone else's update", withManager(withManager(obj("v1", "ConfigMap", map[string]any{"data": data("a", "2")}),
			"flotilla", "v1", metav1.ManagedFieldsOperationApply, `{"f:data":{}}`), "kubectl", "v1", metav1.ManagedFieldsOperationUpdate, `{"f:data":{"f:a":{}}}`), desired, false},
		{"a field removed", withManager(obj("v1", "ConfigMap", nil), "flotilla", "v1", metav1.ManagedFieldsOperationApply, `{}`), desired, false},
		{"a field no longer desired", withManager(obj("v1", "ConfigMap", map[string]any{"data": data("a", "1", "b", "2")}),
			"flotilla", "v1", metav1.ManagedFieldsOperationApply, `{"f:data":{"f:a":{},"f:b":{}}}`), desired, false},
		{"no apply entry", withManager(obj("v1", "ConfigMap", map[string]any{"data": data("a", "1")}), "flotilla", "v1", metav1.ManagedFieldsOperationUpdate, owned), desired, false},
		{"another manager's apply", withManager(obj("v1", "ConfigMap", map[string]any{"data": data("a", "1")}), "other", "v1", metav1.ManagedFieldsOperationApply, owned), desired, false},
		{"applied in another version", withManager(obj("example.com/v1", "Widget", widget.Object["spec"].(map[string]any)), "flotilla", "example.com/v2", metav1.ManagedFieldsOperationApply, `{}`), widget, false},
		{"a custom resource as applied", withManager(obj("example.com/v1", "Widget", map[string]any{"spec": map[string]any{"size": int64(3), "tags": []any{"x"}}, "status": map[string]any{"ok": true}}),
			"flotilla", "example.com/v1", metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:size":{},"f:tags":{}}}`), widget, true},
		{"a custom resource's list changed", withManager(obj("example.com/v1", "Widget", map[string]any{"spec": map[string]any{"size": int64(3), "tags": []any{"y"}}}),
			"flotilla", "example.com/v1", metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:size":{},"f:tags":{}}}`), widget, false},
		{"a field owned whole holding the apiserver's defaults too", withManager(binding(map[string]any{"matchPolicy": "Equivalent", "objectSelector": map[string]any{},
			"namespaceSelector": map[string]any{"matchLabels": map[string]any{"a": "b"}}}), "flotilla", "admissionregistration.k8s.io/v1", metav1.ManagedFieldsOperationApply,
			`{"f:spec":{"f:matchResources":{}}}`), binding(map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"a": "b"}}}), true},
		{"a field owned whole holding something else", withManager(binding(map[string]any{"matchPolicy": "Equivalent",
			"namespaceSelector": map[string]any{"matchLabels": map[string]any{"a": "c"}}}), "flotilla", "admissionregistration.k8s.io/v1", metav1.ManagedFieldsOperationApply,
			`{"f:spec":{"f:matchResources":{}}}`), binding(map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"a": "b"}}}), false},
		{"nothing live", nil, desired, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Unchanged(c.live, c.desired, "flotilla"); got != c.want {
				t.Errorf("Unchanged = %v, want %v", got, c.want)
			}
		})
	}
}
