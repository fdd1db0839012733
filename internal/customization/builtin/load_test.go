package builtin

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	"testing"
)

// TestEveryBuiltinCompiles: every embedded customization parses strictly and compiles.
func TestEveryBuiltinCompiles(t *testing.T) {
	rics, err := Customizations()
	if err != nil {
		t.Fatal(err)
	}
	if len(rics) == 0 {
		t.Fatal("no built-ins")
	}
	s := store(t)
	seen := map[string]bool{}
	for _, ric := range rics {
		gvk := ric.Spec.Target.APIVersion + " " + ric.Spec.Target.Kind
		if seen[gvk] || seen[ric.Name] {
			t.Errorf("%s (%s) is built in twice", gvk, ric.Name)
		}
		seen[gvk], seen[ric.Name] = true, true
		if _, ok := s.Lookup(schemaOf(ric)); !ok {
			t.Errorf("%s is not in use", gvk)
		}
	}
}

func schemaOf(ric *configv1alpha1.ResourceInterpreterCustomization) schema.GroupVersionKind {
	return schema.FromAPIVersionAndKind(ric.Spec.Target.APIVersion, ric.Spec.Target.Kind)
}
