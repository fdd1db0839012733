package interpreter

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// crdKind is a CustomResourceDefinition, propagated so that its custom resources can follow.
var crdKind = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}

// crdHealth: a CustomResourceDefinition is healthy once the member serves its kind, that is
// once its Established condition is True. Until then (names not accepted yet, or in conflict
// with another CRD's) its custom resources cannot be applied, so it is unhealthy. The generic
// conditions rule would call it healthy at once: it has neither Ready nor Available.
func crdHealth(obj *unstructured.Unstructured) (workv1alpha1.ResourceHealth, error) {
	if _, _, err := nestedSlice(obj.Object, "status", "conditions"); err != nil {
		return "", err
	}
	_, established := conditionTrue(status(obj), "Established")
	return healthyIf(established), nil
}
