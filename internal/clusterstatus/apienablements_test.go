package clusterstatus

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

func TestAPIEnablements(t *testing.T) {
	lists := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", Kind: "Pod"}, {Name: "pods/status", Kind: "Pod"}, {Name: "configmaps", Kind: "ConfigMap"},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", Kind: "Deployment"}, {Name: "deployments/scale", Kind: "Scale"},
		}},
		nil,
	}
	previous := []clusterv1alpha1.APIEnablement{
		{GroupVersion: "metrics.k8s.io/v1beta1", Resources: []clusterv1alpha1.APIResource{{Name: "pods", Kind: "PodMetrics"}}},
		{GroupVersion: "gone.example.com/v1", Resources: []clusterv1alpha1.APIResource{{Name: "things", Kind: "Thing"}}},
	}
	got := APIEnablements(lists, map[string]bool{"metrics.k8s.io/v1beta1": true}, previous)
	want := []clusterv1alpha1.APIEnablement{
		{GroupVersion: "apps/v1", Resources: []clusterv1alpha1.APIResource{{Name: "deployments", Kind: "Deployment"}}},
		{GroupVersion: "metrics.k8s.io/v1beta1", Resources: []clusterv1alpha1.APIResource{{Name: "pods", Kind: "PodMetrics"}}},
		{GroupVersion: "v1", Resources: []clusterv1alpha1.APIResource{{Name: "configmaps", Kind: "ConfigMap"}, {Name: "pods", Kind: "Pod"}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("apiEnablements (-want +got):\n%s", diff)
	}
}
