package notacted

import (
	"reflect"
	"testing"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

func paths(fs []Field) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Path)
	}
	return out
}

func TestPropagation(t *testing.T) {
	if got := Propagation(&policyv1alpha1.PropagationSpec{}); len(got) != 0 {
		t.Errorf("an empty spec: %v", got)
	}
	s := &policyv1alpha1.PropagationSpec{
		// All acted on: no mention.
		ActivationPreference: policyv1alpha1.LazyActivation,
		SchedulePriority:     &policyv1alpha1.SchedulePriority{},
		Placement: policyv1alpha1.Placement{
			WorkloadAffinity: &policyv1alpha1.WorkloadAffinity{AntiAffinity: &policyv1alpha1.WorkloadAffinityTerm{GroupByLabelKey: "app"}},
			ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{
				{AffinityName: "a"},
				{AffinityName: "b", OverflowAffinities: []policyv1alpha1.OverflowAffinityTerm{{AffinityName: "c"}}},
			},
		},
	}
	if got := paths(Propagation(s)); len(got) != 0 {
		t.Errorf("Propagation = %v, want none: workloadAffinity and overflowAffinities are acted on", got)
	}
}

func TestCluster(t *testing.T) {
	s := &clusterv1alpha1.ClusterSpec{ProxyURL: "http://proxy:3128", SecretRef: &clusterv1alpha1.LocalSecretReference{Name: "m"}}
	if got := Cluster(s); len(got) != 0 {
		t.Errorf("fields acted on reported: %v", got)
	}
	s.ImpersonatorSecretRef = &clusterv1alpha1.LocalSecretReference{Name: "m-imp"}
	s.ProxyHeader = map[string]string{"X-Tenant": "a"}
	want := []string{"spec.impersonatorSecretRef", "spec.proxyHeader"}
	if got := paths(Cluster(s)); !reflect.DeepEqual(got, want) {
		t.Errorf("Cluster = %v, want %v", got, want)
	}
}
