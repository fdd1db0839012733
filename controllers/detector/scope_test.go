package detector

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestSkippedObject(t *testing.T) {
	ns := schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	for _, tc := range []struct {
		gvk  schema.GroupVersionKind
		name string
		want bool
	}{
		{ns, "team-a", false},
		{ns, "default", false},
		{ns, "kube-system", true},
		{ns, "kube-public", true},
		{ns, "flotilla-system", true},
		{ns, "karmada-es-member1", true},
		{ns, "karmada-system", true},
		{schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "kube-root-ca.crt", true},
		{schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "kube-system", false},
		{schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}, "default", true},
		{schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Namespace"}, "kube-system", false},
	} {
		if got := skippedObject(tc.gvk, tc.name); got != tc.want {
			t.Errorf("skippedObject(%s, %q) = %v, want %v", tc.gvk.Kind, tc.name, got, tc.want)
		}
	}
}
