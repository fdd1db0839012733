package resourceselector

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

func deployment(ns, name string, lbls map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apps/v1")
	u.SetKind("Deployment")
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(lbls)
	return u
}

func labelSel(k, v string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
}

func TestMatch(t *testing.T) {
	nginx := deployment("default", "nginx", map[string]string{"app": "nginx"})
	tests := []struct {
		name string
		sel  policyv1alpha1.ResourceSelector
		want Precision
	}{
		{"kind only", policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment"}, MatchAll},
		{"other apiVersion", policyv1alpha1.ResourceSelector{APIVersion: "apps/v1beta1", Kind: "Deployment"}, NoMatch},
		{"other kind", policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "StatefulSet"}, NoMatch},
		{"namespace", policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default"}, MatchAll},
		{"other namespace", policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "prod"}, NoMatch},
		{"name", policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", Name: "nginx"}, MatchName},
		{"other name", policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", Name: "redis"}, NoMatch},
		{"labels", policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", LabelSelector: labelSel("app", "nginx")}, MatchLabelSelector},
		{"labels miss", policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", LabelSelector: labelSel("app", "redis")}, NoMatch},
		{"empty labelSelector selects all", policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", LabelSelector: &metav1.LabelSelector{}}, MatchLabelSelector},
		{"name set: labelSelector ignored", policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", Name: "nginx", LabelSelector: labelSel("app", "redis")}, MatchName},
		{"name set: invalid labelSelector ignored", policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", Name: "nginx", LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}}, MatchName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Match(tt.sel, nginx)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Match() = %v, want %v", got, tt.want)
			}
			ok, err := Matches(tt.sel, nginx)
			if err != nil {
				t.Fatal(err)
			}
			if ok != (tt.want != NoMatch) {
				t.Errorf("Matches() = %v, want %v", ok, tt.want != NoMatch)
			}
		})
	}
}

func TestMatchInvalidLabelSelector(t *testing.T) {
	sel := policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment",
		LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}}
	if _, err := Matches(sel, deployment("default", "nginx", nil)); err == nil {
		t.Fatal("Matches() returned no error for an invalid labelSelector")
	}
}

func TestBestMatch(t *testing.T) {
	nginx := deployment("default", "nginx", map[string]string{"app": "nginx"})
	kind := policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment"}
	byLabel := policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", LabelSelector: labelSel("app", "nginx")}
	byName := policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", Name: "nginx"}
	other := policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "Service"}
	tests := []struct {
		name string
		sels []policyv1alpha1.ResourceSelector
		want Precision
	}{
		{"none selects nothing", nil, NoMatch},
		{"no selector matches", []policyv1alpha1.ResourceSelector{other}, NoMatch},
		{"highest wins", []policyv1alpha1.ResourceSelector{kind, byName, byLabel}, MatchName},
		{"label over kind", []policyv1alpha1.ResourceSelector{other, kind, byLabel}, MatchLabelSelector},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := BestMatch(tt.sels, nginx)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("BestMatch() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestBestMatchErrorNamesSelector(t *testing.T) {
	bad := policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment",
		LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}}
	_, err := BestMatch([]policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "Service"}, bad}, deployment("default", "nginx", nil))
	if err == nil || !strings.HasPrefix(err.Error(), "resourceSelectors[1]: ") {
		t.Fatalf("BestMatch() error = %v, want one naming resourceSelectors[1]", err)
	}
}
