package interpreter_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// fixed is a customization that has some operations and answers them with its replicas.
type fixed struct {
	ops      map[interpreter.Operation]bool
	replicas int32
	rev      string
}

func (f fixed) Has(op interpreter.Operation) bool { return f.ops[op] }
func (f fixed) Revision() string                  { return f.rev }
func (f fixed) GetReplicas(*unstructured.Unstructured) (int32, *workv1alpha2.ReplicaRequirements, error) {
	return f.replicas, nil, nil
}
func (f fixed) ReviseReplica(o *unstructured.Unstructured, _ int64) (*unstructured.Unstructured, error) {
	return o, nil
}
func (f fixed) Retain(d, _ *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return d, nil
}
func (f fixed) ReflectStatus(*unstructured.Unstructured) (*runtime.RawExtension, error) {
	return nil, nil
}
func (f fixed) AggregateStatus(*unstructured.Unstructured, []workv1alpha2.AggregatedStatusItem) (map[string]any, error) {
	return nil, nil
}
func (f fixed) InterpretHealth(*unstructured.Unstructured) (bool, error) { return f.replicas > 1, nil }
func (f fixed) GetDependencies(*unstructured.Unstructured) ([]configv1alpha1.DependentObjectReference, error) {
	return nil, nil
}
func (f fixed) GetComponents(*unstructured.Unstructured) ([]workv1alpha2.Component, error) {
	return nil, nil
}

type source map[schema.GroupVersionKind]interpreter.Customization

func (s source) Lookup(gvk schema.GroupVersionKind) (interpreter.Customization, bool) {
	c, ok := s[gvk]
	return c, ok
}

func TestLayersPrecedence(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "workload.example.io", Version: "v1alpha1", Kind: "Workload"}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	declared := fixed{ops: map[interpreter.Operation]bool{interpreter.OperationGetReplicas: true}, replicas: 1, rev: "d"}
	webhook := fixed{ops: map[interpreter.Operation]bool{interpreter.OperationGetReplicas: true, interpreter.OperationInterpretHealth: true}, replicas: 2, rev: "w"}
	builtin := fixed{ops: map[interpreter.Operation]bool{interpreter.OperationGetReplicas: true, interpreter.OperationInterpretHealth: true, interpreter.OperationRetain: true}, replicas: 3, rev: "d"}
	for _, tc := range []struct {
		name     string
		layers   interpreter.Layers
		replicas int32
		healthy  bool
		rev      string
	}{
		{"customization wins over the webhook", interpreter.Layers{source{gvk: declared}, source{gvk: webhook}, source{gvk: builtin}}, 1, true, "d+w"},
		{"webhook wins over the built-in", interpreter.Layers{source{}, source{gvk: webhook}, source{gvk: builtin}}, 2, true, "w+d"},
		{"built-in alone", interpreter.Layers{source{}, source{}, source{gvk: builtin}}, 3, true, "d"},
		{"nil layers are skipped", interpreter.Layers{nil, source{gvk: webhook}, nil}, 2, true, "w"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i := interpreter.Interpreter{Customizations: tc.layers}
			n, _, err := i.GetReplicas(obj)
			if err != nil || n != tc.replicas {
				t.Fatalf("GetReplicas = %d, %v; want %d", n, err, tc.replicas)
			}
			if got := i.Revision(gvk); got != tc.rev {
				t.Fatalf("revision %q, want %q", got, tc.rev)
			}
		})
	}
	i := interpreter.Interpreter{Customizations: interpreter.Layers{source{}, source{}}}
	if i.Customized(gvk, interpreter.OperationGetReplicas) || i.Revision(gvk) != "" {
		t.Fatal("empty layers customize")
	}
}
