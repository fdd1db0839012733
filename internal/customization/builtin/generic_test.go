package builtin

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/customization"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// TestSparseObjects: every operation of every built-in runs without error on an object with
// an empty spec and no status, and aggregates nil, no items and items without status: what
// a template looks like before any controller saw it.
func TestSparseObjects(t *testing.T) {
	rics, err := Customizations()
	if err != nil {
		t.Fatal(err)
	}
	s := store(t)
	for _, ric := range rics {
		t.Run(ric.Name, func(t *testing.T) {
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": ric.Spec.Target.APIVersion, "kind": ric.Spec.Target.Kind,
				"metadata": map[string]any{"name": "x", "namespace": "ns", "generation": int64(1)},
				"spec":     map[string]any{},
			}}
			c, ok := s.Lookup(obj.GroupVersionKind())
			if !ok {
				t.Fatal("not in use")
			}
			if c.Has(interpreter.OperationGetReplicas) {
				if n, _, err := c.GetReplicas(obj); err != nil || n < 0 {
					t.Errorf("GetReplicas = %d, %v", n, err)
				}
			}
			if c.Has(interpreter.OperationReviseReplica) {
				if _, err := c.ReviseReplica(obj.DeepCopy(), 3); err != nil {
					t.Errorf("ReviseReplica: %v", err)
				}
			}
			if c.Has(interpreter.OperationRetain) {
				if _, err := c.Retain(obj.DeepCopy(), obj.DeepCopy()); err != nil {
					t.Errorf("Retain: %v", err)
				}
			}
			if c.Has(interpreter.OperationReflectStatus) {
				if raw, err := c.ReflectStatus(obj); err != nil || raw != nil {
					t.Errorf("ReflectStatus without status = %v, %v; want nothing", raw, err)
				}
			}
			if c.Has(interpreter.OperationInterpretHealth) {
				if _, err := c.InterpretHealth(obj); err != nil {
					t.Errorf("InterpretHealth: %v", err)
				}
			}
			if c.Has(interpreter.OperationInterpretDependency) {
				if _, err := c.GetDependencies(obj); err != nil {
					t.Errorf("GetDependencies: %v", err)
				}
			}
			if c.Has(interpreter.OperationAggregateStatus) {
				for name, list := range map[string][]workv1alpha2.AggregatedStatusItem{
					"nil":            nil,
					"empty":          {},
					"without status": {{ClusterName: "m1"}, {ClusterName: "m2", Status: &runtime.RawExtension{Raw: []byte(`{}`)}}},
				} {
					if _, err := c.AggregateStatus(obj.DeepCopy(), list); err != nil {
						t.Errorf("AggregateStatus(%s): %v", name, err)
					}
				}
			}
		})
	}
}

// TestUserCustomizationOverridesBuiltin: per operation, a user's customization of a built-in
// kind wins whatever its name; the operations it does not script stay the built-in's, and
// removing it brings the built-in back.
func TestUserCustomizationOverridesBuiltin(t *testing.T) {
	s := store(t)
	cs := object(t, cloneSetYAML)
	user := &configv1alpha1.ResourceInterpreterCustomization{Spec: configv1alpha1.ResourceInterpreterCustomizationSpec{
		Target: configv1alpha1.CustomizationTarget{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet"},
		Customizations: configv1alpha1.CustomizationRules{
			HealthInterpretation: &configv1alpha1.HealthInterpretation{LuaScript: `function InterpretHealth(obj) return false end`},
			ReplicaResource:      &configv1alpha1.ReplicaResourceRequirement{LuaScript: `function GetReplicas(obj) return 42 end`},
		},
	}}
	// Named to sort after the built-in's name: precedence is not by name.
	user.Name = "zzz-mine"
	if err := s.Apply(user); err != nil {
		t.Fatal(err)
	}
	c, _ := s.Lookup(cs.GroupVersionKind())
	if h, err := c.InterpretHealth(cs); err != nil || h {
		t.Errorf("InterpretHealth = %v, %v; want the user's false", h, err)
	}
	if n, _, err := c.GetReplicas(cs); err != nil || n != 42 {
		t.Errorf("GetReplicas = %v, %v; want the user's 42", n, err)
	}
	if revised, err := c.ReviseReplica(cs.DeepCopy(), 2); err != nil || revised.Object["spec"].(map[string]any)["replicas"] != int64(2) {
		t.Errorf("ReviseReplica, not the user's: %v", err)
	}
	// Through the interpreter as the controllers use it.
	in := interpreter.Interpreter{Customizations: s}
	if h := in.Health(cs); h != "Unhealthy" {
		t.Errorf("interpreter Health = %s; want the user's Unhealthy", h)
	}
	s.Remove(user.Name)
	c, _ = s.Lookup(cs.GroupVersionKind())
	if h, err := c.InterpretHealth(cs); err != nil || !h {
		t.Errorf("InterpretHealth after the user's went = %v, %v; want the built-in's true", h, err)
	}
	if h := in.Health(cs); h != "Healthy" {
		t.Errorf("interpreter Health = %s; want the built-in's Healthy", h)
	}
}

// TestAlsoFor: a built-in is in use for the further apiVersions its annotation names.
func TestAlsoFor(t *testing.T) {
	s := store(t)
	for _, gvk := range []string{"source.toolkit.fluxcd.io/v1beta2 OCIRepository", "source.toolkit.fluxcd.io/v1 OCIRepository",
		"apps.kruise.io/v1alpha1 StatefulSet", "apps.kruise.io/v1beta1 StatefulSet", "kubeflow.org/v1 MPIJob", "kubeflow.org/v2beta1 MPIJob"} {
		f := strings.Fields(gvk)
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion(f[0])
		obj.SetKind(f[1])
		if _, ok := s.Lookup(obj.GroupVersionKind()); !ok {
			t.Errorf("%s has no built-in", gvk)
		}
	}
}

// TestParseErrors: a file that is not what this package holds is refused with an error that
// says why, never a panic.
func TestParseErrors(t *testing.T) {
	head := "apiVersion: config.karmada.io/v1alpha1\nkind: ResourceInterpreterCustomization\n"
	target := "spec:\n  target: {apiVersion: example.com/v1, kind: App}\n  customizations:\n    healthInterpretation:\n      luaScript: 'function InterpretHealth(o) return true end'\n"
	for _, c := range []struct{ name, doc, want string }{
		{"not YAML", "{", "document 1"},
		{"another kind", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: flotilla-builtin-x}\n", "not a ResourceInterpreterCustomization"},
		{"an unknown field", head + "metadata: {name: flotilla-builtin-x}\n" + target + "  extra: 1\n", "unknown field"},
		{"a foreign name", head + "metadata: {name: mine}\n" + target, "does not start with flotilla-builtin-"},
		{"no target", head + "metadata: {name: flotilla-builtin-x}\nspec: {}\n", "no target"},
		{"a bad also-for", head + "metadata: {name: flotilla-builtin-x, annotations: {builtin.flotilla.io/also-for: 'a/b/c'}}\n" + target, "bad apiVersion"},
		{"the second document", head + "metadata: {name: flotilla-builtin-x}\n" + target + "---\nkind: Foo\n", "document 2"},
	} {
		if _, err := Parse([]byte(c.doc)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v; want one saying %q", c.name, err, c.want)
		}
	}
	rics, err := Parse([]byte("# only a comment\n---\n" + head + "metadata: {name: flotilla-builtin-x, annotations: {builtin.flotilla.io/also-for: 'example.com/v2'}}\n" + target))
	if err != nil || len(rics) != 2 || rics[1].Name != "flotilla-builtin-x-v2" || rics[1].Spec.Target.APIVersion != "example.com/v2" {
		t.Errorf("Parse with also-for = %v, %v", rics, err)
	}
	if err := Load(nil); err == nil {
		t.Error("Load(nil) succeeded")
	}
	// A store refuses a built-in that does not compile, naming it.
	bad := rics[0].DeepCopy()
	bad.Spec.Customizations.HealthInterpretation.LuaScript = "function InterpretHealth(o) return end end"
	if err := customization.NewStore(customization.Options{}).ApplyBuiltin(bad); err == nil || !strings.Contains(err.Error(), "flotilla-builtin-x") {
		t.Errorf("ApplyBuiltin of a broken script: %v", err)
	}
}

// TestRetainReplicasLabel: no built-in of a kind with replicas scripts Retain, so the
// label resourcetemplate.karmada.io/retain-replicas keeps a member's spec.replicas (an HPA's)
// for them as for any kind.
func TestRetainReplicasLabel(t *testing.T) {
	in := interpreter.Interpreter{Customizations: store(t)}
	for _, text := range []string{cloneSetYAML, advancedStatefulSetYAML, unitedDeploymentYAML, rolloutYAML} {
		desired := object(t, text)
		if !in.HasReplicas(desired) {
			t.Fatalf("%s has no replicas", desired.GetKind())
		}
		desired.SetLabels(map[string]string{"resourcetemplate.karmada.io/retain-replicas": "true"})
		observed := with(desired, "spec.replicas", int64(9))
		out, err := in.Retain(desired, observed)
		if err != nil {
			t.Fatal(err)
		}
		if n, _, _ := unstructured.NestedInt64(out.Object, "spec", "replicas"); n != 9 {
			t.Errorf("%s: retained replicas %d, want the member's 9", desired.GetKind(), n)
		}
	}
}
