package clusteraffinity

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
	"github.com/flotilla-io/flotilla/pkg/scheduler/framework"
)

func TestFilter(t *testing.T) {
	m1 := st.NewCluster("m1", st.Provider("aws"), st.Region("us-east-1"), st.Label("env", "prod"))
	m2 := st.NewCluster("m2", st.Provider("gcp"), st.Region("europe-west1"), st.Label("env", "dev"))
	m3 := st.NewCluster("m3", st.Provider("aws"), st.Region("eu-west-1"), st.Zones("eu-west-1a"))
	field := func(key string, op corev1.NodeSelectorOperator, v ...string) *policyv1alpha1.FieldSelector {
		return &policyv1alpha1.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: v}}}
	}
	tests := []struct {
		name     string
		affinity *policyv1alpha1.ClusterAffinity
		want     map[string]string
	}{
		{"no affinity matches all", nil, map[string]string{"m1": "", "m2": "", "m3": ""}},
		{"clusterNames", &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m1", "m3"}},
			map[string]string{"m1": "", "m2": ReasonNotMatched, "m3": ""}},
		{"exclude", &policyv1alpha1.ClusterAffinity{Exclude: []string{"m1"}},
			map[string]string{"m1": ReasonNotMatched, "m2": "", "m3": ""}},
		{"labelSelector", &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}},
			map[string]string{"m1": "", "m2": ReasonNotMatched, "m3": ReasonNotMatched}},
		{"fieldSelector provider", &policyv1alpha1.ClusterAffinity{FieldSelector: field("provider", corev1.NodeSelectorOpIn, "aws")},
			map[string]string{"m1": "", "m2": ReasonNotMatched, "m3": ""}},
		{"fieldSelector region NotIn", &policyv1alpha1.ClusterAffinity{FieldSelector: field("region", corev1.NodeSelectorOpNotIn, "us-east-1")},
			map[string]string{"m1": ReasonNotMatched, "m2": "", "m3": ""}},
		{"fieldSelector zone", &policyv1alpha1.ClusterAffinity{FieldSelector: field("zone", corev1.NodeSelectorOpIn, "eu-west-1a")},
			map[string]string{"m1": ReasonNotMatched, "m2": ReasonNotMatched, "m3": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := st.State(st.Deployment(1))
			state.Affinity = tt.affinity
			got, err := st.Reasons(New(), state, m1, m2, m3)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("reasons mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInvalidAffinity(t *testing.T) {
	state := st.State(st.Deployment(1)).WithAffinity("primary", &policyv1alpha1.ClusterAffinity{
		FieldSelector: &policyv1alpha1.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "color", Operator: corev1.NodeSelectorOpIn}}},
	})
	_, err := New().NewFilter(state)
	if !errors.Is(err, framework.ErrInvalidPlacement) {
		t.Fatalf("NewFilter() error = %v, want ErrInvalidPlacement", err)
	}
	if want := "invalid placement: clusterAffinities[primary]: fieldSelector.matchExpressions[0].key \"color\": must be one of provider, region, zone"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

func TestTiers(t *testing.T) {
	idc := st.NewCluster("idc", st.Label("site", "idc"))
	aws := st.NewCluster("aws", st.Provider("aws"), st.Label("site", "idc"))
	gcp := st.NewCluster("gcp", st.Provider("gcp"))
	other := st.NewCluster("other", st.Provider("azure"))
	g := &policyv1alpha1.ClusterAffinityTerm{AffinityName: "on-prem",
		ClusterAffinity: policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"site": "idc"}}},
		OverflowAffinities: []policyv1alpha1.OverflowAffinityTerm{
			{AffinityName: "aws", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"aws"}}},
			{AffinityName: "gcp", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"gcp", "idc"}}},
		}}
	state := st.State(st.Deployment(1)).WithGroup(g)

	got, err := st.Reasons(New(), state, idc, aws, gcp, other)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"idc": "", "aws": "", "gcp": "", "other": ReasonNotMatched}, got); diff != "" {
		t.Errorf("a cluster of any tier passes (-want +got):\n%s", diff)
	}
	tierOf, err := TierOf(state)
	if err != nil {
		t.Fatal(err)
	}
	tiers := map[string]int{}
	for _, c := range []*clusterv1alpha1.Cluster{idc, aws, gcp, other} {
		tiers[c.Name] = tierOf(c)
	}
	// aws matches the preferred group's selector too: the first tier it matches wins.
	if diff := cmp.Diff(map[string]int{"idc": 0, "aws": 0, "gcp": 2, "other": -1}, tiers); diff != "" {
		t.Errorf("tiers (-want +got):\n%s", diff)
	}

	bad := g.DeepCopy()
	bad.OverflowAffinities[1].LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"bad key!": "x"}}
	_, err = TierOf(st.State(st.Deployment(1)).WithGroup(bad))
	if !errors.Is(err, framework.ErrInvalidPlacement) || !strings.Contains(err.Error(), "clusterAffinities[on-prem].overflowAffinities[gcp]") {
		t.Errorf("invalid overflow selector: %v, want ErrInvalidPlacement naming the overflow group", err)
	}
}
