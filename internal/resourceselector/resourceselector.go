// Package resourceselector decides whether a resource template matches a policy's
// ResourceSelector, and how precisely. Propagation and override policies share it: the
// precision is the implicit priority that orders policies of equal explicit priority.
package resourceselector

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// Precision says how precisely a selector matched a template. Values are ordered: a greater
// Precision is a more precise match.
type Precision int

// Precisions, from no match to the most precise.
const (
	// NoMatch: the selector does not select the template.
	NoMatch Precision = iota
	// MatchAll: the selector matched by apiVersion and kind (and namespace) only, or the policy
	// has no selectors at all.
	MatchAll
	// MatchLabelSelector: the selector matched by its labelSelector.
	MatchLabelSelector
	// MatchName: the selector matched by name.
	MatchName
)

// String returns the name of the precision, for logs and test output.
func (p Precision) String() string {
	switch p {
	case NoMatch:
		return "NoMatch"
	case MatchAll:
		return "MatchAll"
	case MatchLabelSelector:
		return "MatchLabelSelector"
	case MatchName:
		return "MatchName"
	}
	return fmt.Sprintf("Precision(%d)", int(p))
}

// Match returns how precisely the selector selects the template; NoMatch when it does not.
// The error reports an invalid labelSelector.
func Match(sel policyv1alpha1.ResourceSelector, obj *unstructured.Unstructured) (Precision, error) {
	if sel.APIVersion != obj.GetAPIVersion() || sel.Kind != obj.GetKind() {
		return NoMatch, nil
	}
	if sel.Namespace != "" && sel.Namespace != obj.GetNamespace() {
		return NoMatch, nil
	}
	switch {
	case sel.Name != "":
		if sel.Name != obj.GetName() {
			return NoMatch, nil
		}
		return MatchName, nil
	case sel.LabelSelector != nil:
		s, err := metav1.LabelSelectorAsSelector(sel.LabelSelector)
		if err != nil {
			return NoMatch, fmt.Errorf("labelSelector: %w", err)
		}
		if !s.Matches(labels.Set(obj.GetLabels())) {
			return NoMatch, nil
		}
		return MatchLabelSelector, nil
	}
	return MatchAll, nil
}

// BestMatch returns the highest Precision among the selectors that select the template, and
// NoMatch when none does. An empty list selects nothing: callers for which no selectors means
// "every template" (override policies) check for that themselves. The error names the index
// of the first invalid selector.
func BestMatch(sels []policyv1alpha1.ResourceSelector, obj *unstructured.Unstructured) (Precision, error) {
	best := NoMatch
	for i, sel := range sels {
		p, err := Match(sel, obj)
		if err != nil {
			return NoMatch, fmt.Errorf("resourceSelectors[%d]: %w", i, err)
		}
		best = max(best, p)
	}
	return best, nil
}
