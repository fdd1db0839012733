package customization_test

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/controllers/customization"
	store "github.com/flotilla-io/flotilla/internal/customization"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

var cloneSet = schema.GroupVersionKind{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "CloneSet"}

// The store Setup makes has the built-ins in use unless NoBuiltins (--builtin-interpreters=false).
func TestNewStoreBuiltins(t *testing.T) {
	ctx := context.Background()
	on := customization.NewStore(ctx, customization.SetupOptions{}, nil)
	if _, ok := on.Lookup(cloneSet); !ok {
		t.Error("built-ins on: CloneSet has no customization")
	}
	off := customization.NewStore(ctx, customization.SetupOptions{NoBuiltins: true}, nil)
	if _, ok := off.Lookup(cloneSet); ok {
		t.Error("built-ins off: CloneSet has a customization")
	}
	// Off, a CloneSet is read by the conventions; on, by the built-in.
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"replicas": int64(2)}}}
	obj.SetGroupVersionKind(cloneSet)
	if (interpreter.Interpreter{Customizations: off}).HasReplicas(obj) {
		t.Error("built-ins off: a CloneSet has replicas")
	}
	if !(interpreter.Interpreter{Customizations: on}).HasReplicas(obj) {
		t.Error("built-ins on: a CloneSet has no replicas")
	}
}

// A built-in's script that fails is logged: it has no object, and the failure is never
// written to a customization of the same name.
func TestBuiltinFailureIsNotWritten(t *testing.T) {
	ctx := context.Background()
	r := ric("flotilla-builtin-kruise-cloneset", `function InterpretHealth(obj) return true end`)
	r.Generation = 1
	c := fake.NewClientBuilder().WithScheme(flotillascheme.New()).WithObjects(r).WithStatusSubresource(r).Build()
	rec := customization.New(c, events.NewFakeRecorder(100), nil)
	rec.Store = customization.NewStore(ctx, customization.SetupOptions{}, rec.Failed)
	req := ctrl.Request{NamespacedName: types.NamespacedName{Name: r.Name}}
	if _, err := rec.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	rec.Failed(store.Failure{Customization: r.Name, Builtin: true, Operation: interpreter.OperationInterpretHealth,
		Object: "apps.kruise.io/v1alpha1/CloneSet ns/web", Err: errors.New("boom")})
	if _, err := rec.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	got := &configv1alpha1.ResourceInterpreterCustomization{}
	if err := c.Get(ctx, client.ObjectKey{Name: r.Name}, got); err != nil {
		t.Fatal(err)
	}
	if h := meta.FindStatusCondition(got.Status.Conditions, configv1alpha1.ConditionScriptsHealthy); h == nil || h.Status != "True" {
		t.Errorf("ScriptsHealthy of the user's customization = %v; a built-in's failure was written to it", h)
	}
	// The same failure of the user's customization is.
	rec.Failed(store.Failure{Customization: r.Name, Operation: interpreter.OperationInterpretHealth,
		Object: "apps.kruise.io/v1alpha1/CloneSet ns/web", Err: errors.New("boom")})
	if _, err := rec.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	_ = c.Get(ctx, client.ObjectKey{Name: r.Name}, got)
	if h := meta.FindStatusCondition(got.Status.Conditions, configv1alpha1.ConditionScriptsHealthy); h == nil || h.Status != "False" {
		t.Errorf("ScriptsHealthy after the user's script failed = %v; want False", h)
	}
}
