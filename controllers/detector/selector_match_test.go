package detector

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/resourceselector"
)

// TestSelectorMatcherAgreesWithResourceSelector checks that the detector's metadata-only
// matcher selects exactly the templates resourceselector.Match selects, for every pairing of
// a set of selectors and templates.
func TestSelectorMatcherAgreesWithResourceSelector(t *testing.T) {
	deploy := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	sels := []policyv1alpha1.ResourceSelector{
		{APIVersion: "apps/v1", Kind: "Deployment"},
		{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Namespace: "b"},
		{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"x": "nope"}}},
		{APIVersion: "apps/v1", Kind: "Deployment", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "front"}}},
		{APIVersion: "apps/v1", Kind: "Deployment", LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"front"}}}}},
		{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "a"},
		{APIVersion: "apps/v1beta1", Kind: "Deployment"},
		{APIVersion: "v1", Kind: "ConfigMap"},
		{APIVersion: "v1", Kind: "Deployment"},
	}
	type tmpl struct {
		gvk       schema.GroupVersionKind
		namespace string
		name      string
		labels    map[string]string
	}
	tmpls := []tmpl{
		{deploy, "a", "web", map[string]string{"tier": "front"}},
		{deploy, "b", "web", nil},
		{deploy, "a", "api", map[string]string{"tier": "back"}},
		{deploy, "", "cluster", nil},
		{cm, "a", "web", map[string]string{"tier": "front"}},
	}
	for i, sel := range sels {
		for j, tp := range tmpls {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(tp.gvk)
			u.SetNamespace(tp.namespace)
			u.SetName(tp.name)
			u.SetLabels(tp.labels)
			precision, err := resourceselector.Match(sel, u)
			if err != nil {
				t.Fatal(err)
			}
			want := precision != resourceselector.NoMatch
			m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: tp.namespace, Name: tp.name, Labels: tp.labels}}
			match := selectorMatcher(sel, tp.gvk)
			got := match != nil && match(m)
			if got != want {
				t.Errorf("selector %d %+v, template %d %+v: got %v, want %v", i, sel, j, tp, got, want)
			}
		}
	}
}

func TestSelectorMatcherInvalidLabelSelectorMatchesAll(t *testing.T) {
	sel := policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "ConfigMap", LabelSelector: &metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}}
	match := selectorMatcher(sel, schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
	if match == nil || !match(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "x"}}) {
		t.Fatal("an invalid labelSelector must select (the reconcile reports the error)")
	}
}

func TestSelectedKinds(t *testing.T) {
	spec := &policyv1alpha1.PropagationSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{
		{APIVersion: "apps/v1", Kind: "Deployment", Name: "a"},
		{APIVersion: "v1", Kind: "Service"},
		{APIVersion: "apps/v1", Kind: "Deployment", Name: "b"},
		{APIVersion: "a/b/c", Kind: "Broken"},
		{APIVersion: "v1"},
	}}
	got := fmt.Sprint(selectedKinds(spec))
	want := fmt.Sprint([]schema.GroupVersionKind{{Group: "apps", Version: "v1", Kind: "Deployment"}, {Version: "v1", Kind: "Service"}})
	if got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}
