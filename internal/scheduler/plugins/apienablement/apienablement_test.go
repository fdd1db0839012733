package apienablement

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

func TestFilter(t *testing.T) {
	full := st.NewCluster("full")
	unreported := st.NewCluster("unreported", st.NoAPIs())
	crd := st.NewCluster("crd", func(c *clusterv1alpha1.Cluster) {
		c.Status.APIEnablements = append(c.Status.APIEnablements, clusterv1alpha1.APIEnablement{
			GroupVersion: "example.io/v1", Resources: []clusterv1alpha1.APIResource{{Name: "widgets", Kind: "Widget"}},
		})
	})
	tests := []struct {
		name     string
		resource workv1alpha2.ObjectReference
		want     map[string]string
	}{
		{"built-in kind", workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment"},
			map[string]string{"full": "", "unreported": ReasonAPIsNotReported, "crd": ""}},
		{"core group", workv1alpha2.ObjectReference{APIVersion: "v1", Kind: "ConfigMap"},
			map[string]string{"full": "", "unreported": ReasonAPIsNotReported, "crd": ""}},
		{"custom resource", workv1alpha2.ObjectReference{APIVersion: "example.io/v1", Kind: "Widget"},
			map[string]string{"full": "did not serve example.io/v1, Kind=Widget", "unreported": ReasonAPIsNotReported, "crd": ""}},
		{"served group, other kind", workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "StatefulSet"},
			map[string]string{"full": "did not serve apps/v1, Kind=StatefulSet", "unreported": ReasonAPIsNotReported, "crd": "did not serve apps/v1, Kind=StatefulSet"}},
		{"no kind: nothing to check", workv1alpha2.ObjectReference{},
			map[string]string{"full": "", "unreported": "", "crd": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := st.Reasons(New(), st.State(&workv1alpha2.ResourceBindingSpec{Resource: tt.resource}), full, unreported, crd)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("reasons mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
