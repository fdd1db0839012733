package metapatch

import (
	"maps"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func obj(labels, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace("ns")
	u.SetName("cfg")
	u.SetResourceVersion("7")
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	return u
}

// apply patches o with Patch and returns the result, or nil when Patch saw nothing to do.
func apply(t *testing.T, k Keys, o *unstructured.Unstructured, labels, annotations map[string]string, lock bool) (*unstructured.Unstructured, []byte) {
	t.Helper()
	patch, ok := k.Patch(o, labels, annotations, lock)
	if !ok {
		return nil, nil
	}
	raw, err := o.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	out, err := jsonpatch.MergePatch(raw, patch)
	if err != nil {
		t.Fatalf("patch %s: %v", patch, err)
	}
	got := &unstructured.Unstructured{}
	if err := got.UnmarshalJSON(out); err != nil {
		t.Fatal(err)
	}
	return got, patch
}

func TestPatch(t *testing.T) {
	k := Keys{Labels: []string{"a", "b", "c"}, Annotations: []string{"x", "y"}}
	o := obj(map[string]string{"a": "1", "b": "2", "user": "u"}, map[string]string{"x": "1", "note": "n"})

	got, patch := apply(t, k, o, map[string]string{"a": "1", "b": "3", "c": "4"}, map[string]string{"y": "5"}, false)
	if got == nil {
		t.Fatal("a change must give a patch")
	}
	if want := map[string]string{"a": "1", "b": "3", "c": "4", "user": "u"}; !maps.Equal(got.GetLabels(), want) {
		t.Errorf("labels = %v, want %v", got.GetLabels(), want)
	}
	if want := map[string]string{"y": "5", "note": "n"}; !maps.Equal(got.GetAnnotations(), want) {
		t.Errorf("annotations = %v, want %v (x removed, keys outside Keys kept)", got.GetAnnotations(), want)
	}
	if string(patch) != `{"metadata":{"annotations":{"x":null,"y":"5"},"labels":{"b":"3","c":"4"}}}` {
		t.Errorf("patch %s: only what differs, no resourceVersion without lock", patch)
	}

	if p, ok := k.Patch(o, map[string]string{"a": "1", "b": "2"}, map[string]string{"x": "1"}, true); ok {
		t.Errorf("nothing differs, got patch %s", p)
	}
	if p, ok := k.Patch(obj(nil, nil), map[string]string{"a": ""}, nil, false); !ok || string(p) != `{"metadata":{"labels":{"a":""}}}` {
		t.Errorf("a missing key wanted empty must be set, got %s %t", p, ok)
	}

	got, patch = apply(t, k, o, nil, nil, true)
	if want := map[string]string{"user": "u"}; !maps.Equal(got.GetLabels(), want) {
		t.Errorf("removing all: labels = %v, want %v", got.GetLabels(), want)
	}
	if string(patch) != `{"metadata":{"annotations":{"x":null},"labels":{"a":null,"b":null},"resourceVersion":"7"}}` {
		t.Errorf("patch %s: with lock it holds on the resourceVersion read", patch)
	}
}
