package rollout

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func deploy(image string, replicas int64, labels map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "labels": labels},
		"spec": map[string]any{"replicas": replicas, "template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "c", "image": image}}}}},
	}}
}

func TestRevision(t *testing.T) {
	base := Revision(deploy("nginx:1", 3, nil))
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		same bool
	}{
		{"replicas only: same revision", deploy("nginx:1", 9, nil), true},
		{"labels only: same revision", deploy("nginx:1", 3, map[string]any{"a": "b"}), true},
		{"image: new revision", deploy("nginx:2", 3, nil), false},
	}
	for _, tt := range tests {
		if got := Revision(tt.obj) == base; got != tt.same {
			t.Errorf("%s: same = %v", tt.name, got)
		}
	}
}

func TestCompose(t *testing.T) {
	stable := Body(deploy("nginx:1", 3, nil))
	cur := deploy("nginx:2", 7, map[string]any{"team": "a"})
	got := Compose(cur, stable)
	want := deploy("nginx:1", 7, map[string]any{"team": "a"})
	if d := cmp.Diff(want.Object, got.Object); d != "" {
		t.Error(d)
	}
	if Revision(got) != RevisionOfBody(stable) {
		t.Error("a composed template is of the stable revision")
	}
	WithMaxUnavailable(got, 2)
	if v, _, _ := unstructured.NestedInt64(got.Object, "spec", "strategy", "rollingUpdate", "maxUnavailable"); v != 2 {
		t.Errorf("maxUnavailable = %d", v)
	}
	if Revision(cur) == RevisionOfBody(stable) {
		t.Error("the current template is not")
	}
}
