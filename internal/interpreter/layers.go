package interpreter

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

// Layers are sources of customizations in order of precedence: for each operation of a kind,
// the first layer whose customization of the kind has the operation serves it. Flotilla's
// order is Karmada's: ResourceInterpreterCustomizations, then interpreter webhooks, then the
// built-in customizations of third-party kinds (then the interpreter's own rules).
type Layers []Customizations

var _ Customizations = Layers(nil)

// Lookup returns the layered customization of gvk.
func (l Layers) Lookup(gvk schema.GroupVersionKind) (Customization, bool) {
	var found layered
	for _, c := range l {
		if c == nil {
			continue
		}
		if k, ok := c.Lookup(gvk); ok {
			found = append(found, k)
		}
	}
	switch len(found) {
	case 0:
		return nil, false
	case 1:
		return found[0], true
	}
	return found, true
}

// layered is the customizations of one kind, by precedence.
type layered []Customization

func (l layered) serving(op Operation) Customization {
	for _, c := range l {
		if c.Has(op) {
			return c
		}
	}
	return nil
}

func (l layered) Has(op Operation) bool { return l.serving(op) != nil }

// Revision joins the layers' revisions, each once, so that it changes when any does.
func (l layered) Revision() string {
	out := ""
	for i, c := range l {
		r := c.Revision()
		dup := false
		for _, p := range l[:i] {
			if p.Revision() == r {
				dup = true
				break
			}
		}
		if r == "" || dup {
			continue
		}
		if out != "" {
			out += "+"
		}
		out += r
	}
	return out
}

// first returns the layer serving op, or the first layer (whose method then says the
// operation is not customized).
func (l layered) first(op Operation) Customization {
	if c := l.serving(op); c != nil {
		return c
	}
	return l[0]
}

func (l layered) GetReplicas(obj *unstructured.Unstructured) (int32, *workv1alpha2.ReplicaRequirements, error) {
	return l.first(OperationGetReplicas).GetReplicas(obj)
}

func (l layered) ReviseReplica(obj *unstructured.Unstructured, replicas int64) (*unstructured.Unstructured, error) {
	return l.first(OperationReviseReplica).ReviseReplica(obj, replicas)
}

func (l layered) Retain(desired, observed *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return l.first(OperationRetain).Retain(desired, observed)
}

func (l layered) ReflectStatus(observed *unstructured.Unstructured) (*runtime.RawExtension, error) {
	return l.first(OperationReflectStatus).ReflectStatus(observed)
}

func (l layered) AggregateStatus(template *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem) (map[string]any, error) {
	return l.first(OperationAggregateStatus).AggregateStatus(template, items)
}

func (l layered) InterpretHealth(observed *unstructured.Unstructured) (bool, error) {
	return l.first(OperationInterpretHealth).InterpretHealth(observed)
}

func (l layered) GetDependencies(obj *unstructured.Unstructured) ([]configv1alpha1.DependentObjectReference, error) {
	return l.first(OperationInterpretDependency).GetDependencies(obj)
}

func (l layered) GetComponents(obj *unstructured.Unstructured) ([]workv1alpha2.Component, error) {
	return l.first(OperationGetComponents).GetComponents(obj)
}
