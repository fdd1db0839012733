package interpreter

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

// Operation names one customizable interpretation, as a ResourceInterpreterCustomization's
// customizations field names it.
type Operation string

// The operations a customization may take over.
const (
	OperationRetain              Operation = "retention"
	OperationGetReplicas         Operation = "replicaResource"
	OperationReviseReplica       Operation = "replicaRevision"
	OperationReflectStatus       Operation = "statusReflection"
	OperationAggregateStatus     Operation = "statusAggregation"
	OperationInterpretHealth     Operation = "healthInterpretation"
	OperationInterpretDependency Operation = "dependencyInterpretation"
	OperationGetComponents       Operation = "componentResource"
)

// Operations lists every operation, in the order of the API's fields, but for
// componentResource, added later, which is last.
var Operations = []Operation{OperationRetain, OperationGetReplicas, OperationReviseReplica, OperationReflectStatus,
	OperationAggregateStatus, OperationInterpretHealth, OperationInterpretDependency, OperationGetComponents}

// Customization is the customized interpretation of one kind. Only the operations Has
// reports are called; the interpreter's built-in rules serve the others. Implementations
// must be safe for concurrent use, stop a script that runs over its budget, and return an
// error (never panic) when a script fails or returns something of the wrong shape.
type Customization interface {
	// Has reports whether the customization takes over op.
	Has(op Operation) bool
	// Revision changes whenever the customization's scripts change, so that results
	// computed with an older revision can be told apart.
	Revision() string

	GetReplicas(obj *unstructured.Unstructured) (int32, *workv1alpha2.ReplicaRequirements, error)
	ReviseReplica(obj *unstructured.Unstructured, replicas int64) (*unstructured.Unstructured, error)
	Retain(desired, observed *unstructured.Unstructured) (*unstructured.Unstructured, error)
	ReflectStatus(observed *unstructured.Unstructured) (*runtime.RawExtension, error)
	// AggregateStatus returns the template's whole new status.
	AggregateStatus(template *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem) (map[string]any, error)
	InterpretHealth(observed *unstructured.Unstructured) (bool, error)
	GetDependencies(obj *unstructured.Unstructured) ([]configv1alpha1.DependentObjectReference, error)
	// GetComponents returns the components of a workload made of several pod templates,
	// checked: names non-empty, unique and at most 32 characters, at most 32 components.
	GetComponents(obj *unstructured.Unstructured) ([]workv1alpha2.Component, error)
}

// Customizations finds the customization of a kind, if any.
type Customizations interface {
	// Lookup returns the customization of gvk (exact apiVersion and kind), or false.
	Lookup(gvk schema.GroupVersionKind) (Customization, bool)
}

// custom returns obj's customization when it takes over op.
func (i Interpreter) custom(obj *unstructured.Unstructured, op Operation) (Customization, bool) {
	if i.Customizations == nil || obj == nil {
		return nil, false
	}
	c, ok := i.Customizations.Lookup(obj.GroupVersionKind())
	if !ok || !c.Has(op) {
		return nil, false
	}
	return c, true
}

// Revision is the revision of gvk's customization, "" when it has none.
func (i Interpreter) Revision(gvk schema.GroupVersionKind) string {
	if i.Customizations == nil {
		return ""
	}
	c, ok := i.Customizations.Lookup(gvk)
	if !ok {
		return ""
	}
	return c.Revision()
}

// Customized reports whether a customization takes over op for gvk.
func (i Interpreter) Customized(gvk schema.GroupVersionKind, op Operation) bool {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	_, ok := i.custom(u, op)
	return ok
}

// ReadsMemberObjects reports whether a customization interprets member objects of gvk
// (retention, status reflection or health), and so may read fields the member caches trim
// (internal/member's Options.Whole).
func (i Interpreter) ReadsMemberObjects(gvk schema.GroupVersionKind) bool {
	for _, op := range []Operation{OperationRetain, OperationReflectStatus, OperationInterpretHealth} {
		if i.Customized(gvk, op) {
			return true
		}
	}
	return false
}
