package customization_test

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/customization"
	store "github.com/flotilla-io/flotilla/internal/customization"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// The Pull agent's controller (ReadOnly) puts customizations in and out of use as the
// manager's does, and never writes: no status, no events (its Recorder is nil: an event would
// panic), whatever its scripts do.
func TestReadOnly(t *testing.T) {
	ctx := context.Background()
	r := ric("widgets", `function InterpretHealth(obj) return obj.status.state == "up" end`)
	r.Spec.Customizations.StatusReflection = &configv1alpha1.StatusReflection{LuaScript: `function ReflectStatus(obj) return {state = obj.status.state} end`}
	r.Generation = 1
	writes := 0
	c := fake.NewClientBuilder().WithScheme(flotillascheme.New()).WithObjects(r).WithStatusSubresource(r).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
				writes++
				return nil
			},
			SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
				writes++
				return nil
			},
		}).Build()
	var changed []schema.GroupKind
	rec := customization.New(c, nil, func(gk schema.GroupKind) { changed = append(changed, gk) })
	rec.ReadOnly = true
	st := store.NewStore(store.Options{OnFailure: rec.Failed})
	rec.Store = st
	interp := interpreter.Interpreter{Customizations: st}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Name: "widgets"}}

	if _, err := rec.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"state": "down"}}}
	obj.SetGroupVersionKind(widget)
	obj.SetNamespace("ns")
	obj.SetName("w")
	if h := interp.Health(obj); h != workv1alpha1.ResourceUnhealthy {
		t.Errorf("health with the script: %s, want Unhealthy", h)
	}
	if st, err := interp.ReflectStatus(obj); err != nil || st == nil || string(st.Raw) != `{"state":"down"}` {
		t.Errorf("reflected status with the script: %v, %v", st, err)
	}
	if !interp.ReadsMemberObjects(widget) || interp.ReadsMemberObjects(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}) {
		t.Error("ReadsMemberObjects: want the customized kind only")
	}
	// A script failing at run time is logged, not written.
	for range 3 {
		rec.Failed(store.Failure{Customization: "widgets", Operation: interpreter.OperationInterpretHealth, Object: "example.io/v1/Widget ns/w", Err: errors.New("boom")})
	}
	if _, err := rec.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}

	if err := c.Delete(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := rec.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Lookup(widget); ok {
		t.Error("a deleted customization is still in use")
	}
	if writes != 0 {
		t.Errorf("%d status writes, want none", writes)
	}
	if len(changed) != 2 || changed[0] != widget.GroupKind() || changed[1] != widget.GroupKind() {
		t.Errorf("Changed calls: %v, want the kind on load and on delete", changed)
	}
}
