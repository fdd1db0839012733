package clusteraffinity

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

func cluster(name, provider, region string, zones []string, lbls map[string]string) *clusterv1alpha1.Cluster {
	return &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls},
		Spec:       clusterv1alpha1.ClusterSpec{Provider: provider, Region: region, Zones: zones},
	}
}

func TestMatches(t *testing.T) {
	aws := cluster("m1", "aws", "us-east-1", []string{"us-east-1a", "us-east-1b"}, map[string]string{"gpu": "true"})
	gcp := cluster("m2", "gcp", "europe-west1", nil, nil)
	gcp.Spec.Zone = "europe-west1-b"
	fs := func(key string, op corev1.NodeSelectorOperator, vals ...string) *policyv1alpha1.FieldSelector {
		return &policyv1alpha1.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: vals}}}
	}
	tests := []struct {
		name string
		aff  *policyv1alpha1.ClusterAffinity
		c    *clusterv1alpha1.Cluster
		want bool
	}{
		{"nil matches all", nil, aws, true},
		{"empty matches all", &policyv1alpha1.ClusterAffinity{}, gcp, true},
		{"named", &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m1"}}, aws, true},
		{"not named", &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m1"}}, gcp, false},
		{"excluded wins over named", &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m1"}, Exclude: []string{"m1"}}, aws, false},
		{"label", &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"gpu": "true"}}}, aws, true},
		{"label miss", &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"gpu": "true"}}}, gcp, false},
		{"provider in", &policyv1alpha1.ClusterAffinity{FieldSelector: fs("provider", corev1.NodeSelectorOpIn, "aws")}, aws, true},
		{"provider notin", &policyv1alpha1.ClusterAffinity{FieldSelector: fs("provider", corev1.NodeSelectorOpNotIn, "aws")}, aws, false},
		{"zone in any of zones", &policyv1alpha1.ClusterAffinity{FieldSelector: fs("zone", corev1.NodeSelectorOpIn, "us-east-1b")}, aws, true},
		{"deprecated zone", &policyv1alpha1.ClusterAffinity{FieldSelector: fs("zone", corev1.NodeSelectorOpIn, "europe-west1-b")}, gcp, true},
		{"region notin on cluster without region", &policyv1alpha1.ClusterAffinity{FieldSelector: fs("region", corev1.NodeSelectorOpNotIn, "x")}, cluster("m3", "", "", nil, nil), true},
		{"all constraints AND", &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m1", "m2"}, FieldSelector: fs("provider", corev1.NodeSelectorOpIn, "gcp")}, aws, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Matches(tt.aff, tt.c)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Matches() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	for name, a := range map[string]*policyv1alpha1.ClusterAffinity{
		"bad field key": {FieldSelector: &policyv1alpha1.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "name", Operator: corev1.NodeSelectorOpIn}}}},
		"bad field op":  {FieldSelector: &policyv1alpha1.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpExists}}}},
		"bad label op":  {LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}},
	} {
		if _, err := Compile(a); err == nil {
			t.Errorf("%s: Compile() returned no error", name)
		}
	}
}

// FuzzCompile feeds arbitrary selector input to Compile and Matches: it must never panic.
func FuzzCompile(f *testing.F) {
	f.Add("provider", "In", "aws", "gpu", "Exists", "m1")
	f.Add("zone", "NotIn", "", "a/b", "In", "")
	f.Fuzz(func(t *testing.T, fkey, fop, fval, lkey, lop, name string) {
		a := &policyv1alpha1.ClusterAffinity{
			ClusterNames:  []string{name},
			FieldSelector: &policyv1alpha1.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: fkey, Operator: corev1.NodeSelectorOperator(fop), Values: []string{fval}}}},
			LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: lkey, Operator: metav1.LabelSelectorOperator(lop), Values: []string{fval}}}},
		}
		m, err := Compile(a)
		if err != nil {
			return
		}
		m.Matches(cluster(name, fval, fval, []string{fval}, map[string]string{}))
	})
}
