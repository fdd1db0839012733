package customization

import (
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

var gvkApp = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "App"}

// scripts are a customization's scripts by operation.
type scripts map[interpreter.Operation]string

// newRIC makes a customization of example.com/v1 App.
func newRIC(name string, s scripts) *configv1alpha1.ResourceInterpreterCustomization {
	return newRICFor(name, "example.com/v1", "App", s)
}

func newRICFor(name, apiVersion, kind string, s scripts) *configv1alpha1.ResourceInterpreterCustomization {
	r := configv1alpha1.CustomizationRules{}
	for op, src := range s {
		switch op {
		case interpreter.OperationRetain:
			r.Retention = &configv1alpha1.LocalValueRetention{LuaScript: src}
		case interpreter.OperationGetReplicas:
			r.ReplicaResource = &configv1alpha1.ReplicaResourceRequirement{LuaScript: src}
		case interpreter.OperationReviseReplica:
			r.ReplicaRevision = &configv1alpha1.ReplicaRevision{LuaScript: src}
		case interpreter.OperationReflectStatus:
			r.StatusReflection = &configv1alpha1.StatusReflection{LuaScript: src}
		case interpreter.OperationAggregateStatus:
			r.StatusAggregation = &configv1alpha1.StatusAggregation{LuaScript: src}
		case interpreter.OperationInterpretHealth:
			r.HealthInterpretation = &configv1alpha1.HealthInterpretation{LuaScript: src}
		case interpreter.OperationInterpretDependency:
			r.DependencyInterpretation = &configv1alpha1.DependencyInterpretation{LuaScript: src}
		case interpreter.OperationGetComponents:
			r.ComponentResource = &configv1alpha1.ComponentResourceRequirement{LuaScript: src}
		default:
			panic("newRICFor: unknown operation " + string(op))
		}
	}
	return &configv1alpha1.ResourceInterpreterCustomization{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: configv1alpha1.ResourceInterpreterCustomizationSpec{
			Target:         configv1alpha1.CustomizationTarget{APIVersion: apiVersion, Kind: kind},
			Customizations: r,
		},
	}
}

// app is an example.com/v1 App in namespace ns, named web, with the given spec and status.
func app(spec, status map[string]any) *unstructured.Unstructured {
	o := map[string]any{
		"apiVersion": "example.com/v1",
		"kind":       "App",
		"metadata":   map[string]any{"name": "web", "namespace": "ns", "generation": int64(2)},
	}
	if spec != nil {
		o["spec"] = spec
	}
	if status != nil {
		o["status"] = status
	}
	return &unstructured.Unstructured{Object: o}
}

// failures records what OnFailure gets.
type failures struct {
	mu  sync.Mutex
	got []Failure
}

func (f *failures) record(x Failure) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, x)
}

func (f *failures) list() []Failure {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Failure(nil), f.got...)
}

// customized applies one customization of App with the given scripts and returns it as
// Lookup gives it.
func customized(t testing.TB, o Options, s scripts) interpreter.Customization {
	t.Helper()
	store := NewStore(o)
	if err := store.Apply(newRIC("test", s)); err != nil {
		t.Fatal(err)
	}
	c, ok := store.Lookup(gvkApp)
	if !ok {
		t.Fatal("Lookup found nothing")
	}
	return c
}

// health is a customization with one InterpretHealth script.
func health(t testing.TB, o Options, src string) interpreter.Customization {
	t.Helper()
	return customized(t, o, scripts{interpreter.OperationInterpretHealth: src})
}

// wantErr checks that err is not nil and says every one of wants.
func wantErr(t testing.TB, err error, wants ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one saying %q", wants)
	}
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("error %q does not say %q", err, w)
		}
	}
}
