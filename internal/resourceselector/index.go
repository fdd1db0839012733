package resourceselector

import (
	"slices"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// AllKey is the index key of an override policy without selectors: it selects every template
// in its scope.
const AllKey = "*"

// IndexKeys returns the keys under which a policy with these selectors is indexed, so that the
// policies that may select a template are found through the template's CandidateKeys instead
// of by matching every policy against it: "apiVersion|kind|name" for a selector by name,
// "apiVersion|kind|" for any other. A policy without selectors gets AllKey when
// emptySelectsAll (override policies) and no key otherwise (a propagation policy without
// selectors selects nothing).
func IndexKeys(sels []policyv1alpha1.ResourceSelector, emptySelectsAll bool) []string {
	if len(sels) == 0 {
		if emptySelectsAll {
			return []string{AllKey}
		}
		return nil
	}
	out := make([]string, 0, len(sels))
	for _, sel := range sels {
		k := key(sel.APIVersion, sel.Kind, sel.Name)
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// CandidateKeys returns the index keys (see IndexKeys) of the policies that may select a
// template. Every policy that selects it is under one of them; a policy under them may still
// not select it (its namespace or labelSelector do not match), which Match decides.
func CandidateKeys(apiVersion, kind, name string) []string {
	return []string{key(apiVersion, kind, name), key(apiVersion, kind, ""), AllKey}
}

func key(apiVersion, kind, name string) string { return apiVersion + "|" + kind + "|" + name }
