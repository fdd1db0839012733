package applied

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla-io/flotilla/api/wellknown"
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

func TestDigest(t *testing.T) {
	cm := func(annotations map[string]any, data map[string]any) *unstructured.Unstructured {
		u := obj("v1", "ConfigMap", map[string]any{"data": data})
		if annotations != nil {
			u.Object["metadata"].(map[string]any)["annotations"] = annotations
		}
		return u
	}
	base := Digest(cm(map[string]any{"a": "1"}, map[string]any{"k": "v", "l": "w"}))
	if base == "" {
		t.Fatal("no digest")
	}
	withOwn := cm(map[string]any{"a": "1", wellknown.AppliedDigestAnnotation: "old"}, map[string]any{"l": "w", "k": "v"})
	if got := Digest(withOwn); got != base {
		t.Errorf("the digest annotation and the order of keys changed the digest: %s, want %s", got, base)
	}
	if withOwn.GetAnnotations()[wellknown.AppliedDigestAnnotation] != "old" {
		t.Error("Digest changed its argument")
	}
	if got := Digest(cm(map[string]any{"a": "1"}, map[string]any{"k": "v", "l": "x"})); got == base {
		t.Error("a value changed and the digest did not")
	}
	if got := Digest(cm(nil, map[string]any{"k": "v", "l": "w"})); got == base {
		t.Error("an annotation removed and the digest did not change")
	}
}

func TestOwnedDigestIgnoresKeyOrder(t *testing.T) {
	parse := func(s string) any {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	a := OwnedDigest("apps/v1", parse(`{"f:spec":{"f:replicas":{},"f:template":{}},"f:metadata":{"f:labels":{}}}`))
	b := OwnedDigest("apps/v1", parse(`{"f:metadata":{"f:labels":{}},"f:spec":{"f:template":{},"f:replicas":{}}}`))
	if a != b || a == "" {
		t.Errorf("%q and %q: the same fields", a, b)
	}
	if c := OwnedDigest("apps/v1beta1", parse(`{"f:metadata":{"f:labels":{}},"f:spec":{"f:template":{},"f:replicas":{}}}`)); c == a {
		t.Error("another apiVersion, the same digest")
	}
}

func TestUnchangedCached(t *testing.T) {
	// desired as the execution controller applies it: with its digest annotation.
	desiredOf := func(data map[string]any) *unstructured.Unstructured {
		u := obj("v1", "ConfigMap", map[string]any{"data": data})
		u.SetAnnotations(map[string]string{"flotilla.io/host-id": "h"})
		u.SetAnnotations(map[string]string{"flotilla.io/host-id": "h", wellknown.AppliedDigestAnnotation: Digest(u)})
		return u
	}
	desired := desiredOf(map[string]any{"a": "1"})
	// cached is the member cache's copy after the apply of applied: its annotations.
	cached := func(applied *unstructured.Unstructured, data map[string]any) *unstructured.Unstructured {
		u := obj("v1", "ConfigMap", map[string]any{"data": data})
		u.SetAnnotations(applied.GetAnnotations())
		return u
	}
	parse := func(s string) any {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	ownedAsApplied := OwnedDigest("v1", parse(`{"f:data":{"f:a":{}},"f:metadata":{"f:annotations":{"f:flotilla.io/host-id":{},"f:`+wellknown.AppliedDigestAnnotation+`":{}}}}`))
	withStatus := desired.DeepCopy()
	withStatus.Object["status"] = map[string]any{"x": "y"}
	cases := []struct {
		name            string
		cached, desired *unstructured.Unstructured
		owned           string
		want            bool
	}{
		{"as applied", cached(desired, map[string]any{"a": "1"}), desired, ownedAsApplied, true},
		{"someone else's fields beside", cached(desired, map[string]any{"a": "1", "b": "2"}), desired, ownedAsApplied, true},
		{"desired changed since the apply", cached(desired, map[string]any{"a": "1"}), desiredOf(map[string]any{"a": "2"}), ownedAsApplied, false},
		{"a field taken by someone else", cached(desired, map[string]any{"a": "2"}), desired,
			OwnedDigest("v1", parse(`{"f:data":{},"f:metadata":{"f:annotations":{"f:flotilla.io/host-id":{},"f:`+wellknown.AppliedDigestAnnotation+`":{}}}}`)), false},
		{"no apply of ours", cached(desired, map[string]any{"a": "1"}), desired, "", false},
		{"applied in another version", cached(desired, map[string]any{"a": "1"}), desired,
			OwnedDigest("v2", parse(`{"f:data":{"f:a":{}},"f:metadata":{"f:annotations":{"f:flotilla.io/host-id":{},"f:`+wellknown.AppliedDigestAnnotation+`":{}}}}`)), false},
		{"no digest on the object", obj("v1", "ConfigMap", map[string]any{"data": map[string]any{"a": "1"}}), desired, ownedAsApplied, false},
		{"a desired status", cached(withStatus, map[string]any{"a": "1"}), withStatus, ownedAsApplied, false},
		{"another kind", obj("v1", "Secret", nil), desired, ownedAsApplied, false},
		{"nothing cached", nil, desired, ownedAsApplied, false},
	}
	for _, c := range cases {
		if got := UnchangedCached(c.cached, c.owned, c.desired); got != c.want {
			t.Errorf("%s: UnchangedCached = %v, want %v", c.name, got, c.want)
		}
	}
}
