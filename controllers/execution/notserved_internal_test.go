package execution

import (
	"context"
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A member's refusal to create a custom resource because its CRD is terminating says the
// kind is going, whatever the CRD and discovery say a moment later (the CRD may be gone and
// discovery still list the group): the Work waits for the CRD, it does not report missing
// rights. The member is not asked: nil here.
func TestKindServedTakesTheTerminatingRefusal(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "e2e.flotilla.test", Version: "v1", Kind: "Gadget"}
	refused := fmt.Errorf("apply Gadget e2e-crd/two: %w", apierrors.NewForbidden(schema.GroupResource{Group: gvk.Group, Resource: "gadgets"}, "two",
		errors.New("create not allowed while custom resource definition is terminating")))
	served, err := kindServed(context.Background(), nil, gvk, refused)
	if err != nil || served {
		t.Fatalf("kindServed = %v, %v; want false, nil", served, err)
	}
}
