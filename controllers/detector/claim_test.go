package detector

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/policymatch"
)

// The claim is read from the template's binding: Karmada's claim labels and annotations.
func TestClaimOf(t *testing.T) {
	tmpl := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	tmpl.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	rb := func(apiVersion string, labels, annotations map[string]string) *workv1alpha2.ResourceBinding {
		return &workv1alpha2.ResourceBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-deployment", Labels: labels, Annotations: annotations},
			Spec:       workv1alpha2.ResourceBindingSpec{Resource: workv1alpha2.ObjectReference{APIVersion: apiVersion, Kind: "Deployment", Namespace: "shop", Name: "web"}},
		}
	}
	pp := map[string]string{wellknown.PropagationPolicyPermanentIDLabel: "pp-id"}
	ppNames := map[string]string{wellknown.PropagationPolicyNamespaceAnnotation: "shop", wellknown.PropagationPolicyNameAnnotation: "web"}
	for _, tc := range []struct {
		name string
		rb   *workv1alpha2.ResourceBinding
		want policymatch.Claim
	}{
		{"no binding", nil, policymatch.Claim{}},
		{"a PropagationPolicy's claim", rb("apps/v1", pp, ppNames), policymatch.Claim{Namespace: "shop", Name: "web", PermanentID: "pp-id"}},
		{"a ClusterPropagationPolicy's claim", rb("apps/v1", map[string]string{wellknown.ClusterPropagationPolicyPermanentIDLabel: "cpp-id"},
			map[string]string{wellknown.ClusterPropagationPolicyNameAnnotation: "all"}), policymatch.Claim{Cluster: true, Name: "all", PermanentID: "cpp-id"}},
		{"an earlier Flotilla's binding: the id alone", rb("apps/v1", pp, nil), policymatch.Claim{Namespace: "shop", PermanentID: "pp-id"}},
		{"a dependency's binding claims nothing", rb("apps/v1", nil, nil), policymatch.Claim{}},
		{"the binding of another group's Deployment claims nothing for this one", rb("example.com/v1", pp, ppNames), policymatch.Claim{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rb client.Object // no binding: a nil interface, not a nil *ResourceBinding
			if tc.rb != nil {
				rb = tc.rb
			}
			if got := claimOf(rb, tmpl); got != tc.want {
				t.Errorf("claimOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}
