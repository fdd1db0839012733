package resourceselector

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

func TestIndexKeys(t *testing.T) {
	byName := policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", Name: "nginx"}
	byLabel := policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", LabelSelector: labelSel("app", "nginx")}
	kindOnly := policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default"}
	tests := []struct {
		name     string
		sels     []policyv1alpha1.ResourceSelector
		emptyAll bool
		want     []string
	}{
		{"by name", []policyv1alpha1.ResourceSelector{byName}, false, []string{"apps/v1|Deployment|nginx"}},
		{"label and kind: one key each, duplicates once",
			[]policyv1alpha1.ResourceSelector{byLabel, kindOnly, byLabel}, false, []string{"apps/v1|Deployment|", "v1|ConfigMap|"}},
		{"no selectors, propagation policy: selects nothing", nil, false, nil},
		{"no selectors, override policy: selects everything", nil, true, []string{AllKey}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IndexKeys(tt.sels, tt.emptyAll); !slices.Equal(got, tt.want) {
				t.Errorf("IndexKeys = %q, want %q", got, tt.want)
			}
		})
	}
}

// FuzzIndexKeys checks the index never hides a policy: whenever the selectors select a
// template, one of the policy's keys is among the template's candidate keys.
func FuzzIndexKeys(f *testing.F) {
	f.Add("apps/v1", "Deployment", "nginx", "", "default", "apps/v1", "Deployment", "nginx", "default", "app", "nginx", false)
	f.Add("apps/v1", "Deployment", "", "default", "", "apps/v1", "Deployment", "web", "default", "app", "web", true)
	f.Add("v1", "ConfigMap", "", "", "app", "v1", "ConfigMap", "cm", "prod", "app", "x", false)
	f.Add("", "", "", "", "", "apps/v1", "Deployment", "web", "default", "", "", true)
	f.Fuzz(func(t *testing.T, selAPIVersion, selKind, selName, selNamespace, selLabel,
		apiVersion, kind, name, namespace, labelKey, labelValue string, emptySelectsAll bool) {
		var sels []policyv1alpha1.ResourceSelector
		if selAPIVersion != "" || selKind != "" {
			sel := policyv1alpha1.ResourceSelector{APIVersion: selAPIVersion, Kind: selKind, Name: selName, Namespace: selNamespace}
			if selLabel != "" {
				sel.LabelSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: selLabel, Operator: metav1.LabelSelectorOpExists}}}
			}
			sels = append(sels, sel)
		}
		tmpl := deployment(namespace, name, map[string]string{labelKey: labelValue})
		tmpl.SetAPIVersion(apiVersion)
		tmpl.SetKind(kind)
		selected := len(sels) == 0 && emptySelectsAll
		if len(sels) > 0 {
			p, err := BestMatch(sels, tmpl)
			// A selector that cannot be read stays a candidate, so that it is reported.
			selected = err != nil || p != NoMatch
		}
		keys := IndexKeys(sels, emptySelectsAll)
		candidate := slices.ContainsFunc(CandidateKeys(apiVersion, kind, name), func(k string) bool { return slices.Contains(keys, k) })
		if selected && !candidate {
			t.Fatalf("selectors %+v select %s %s %s/%s, but keys %q miss candidates %q", sels, apiVersion, kind, namespace, name,
				keys, CandidateKeys(apiVersion, kind, name))
		}
	})
}
