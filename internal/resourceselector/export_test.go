package resourceselector

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// Matches is Match as a yes or no, for table tests.
func Matches(sel policyv1alpha1.ResourceSelector, obj *unstructured.Unstructured) (bool, error) {
	p, err := Match(sel, obj)
	return p != NoMatch, err
}
