// Package systemnamespace says, once, which namespaces Flotilla never propagates from, whatever
// their labels say: Kubernetes' own (kube-*, a prefix Kubernetes reserves), Flotilla's
// (flotilla-system), Karmada's (karmada-system, karmada-cluster) and the execution namespaces
// (karmada-es-*). The detector never takes templates from them, and the host hold never
// holds them: a Pod in kube-system must not be denied because someone labelled it.
//
// Is is the rule in Go; CEL renders the same rule as a CEL expression, for the admission
// policies that must apply it in the apiserver. Both are built from the same lists.
package systemnamespace

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/flotilla-io/flotilla/api/wellknown"
)

// rule is one kind of namespace that is never propagated from, and why.
type rule struct {
	// name is the namespace's name, or prefix the start of it.
	name, prefix string
	why          string
}

var rules = []rule{
	{prefix: "kube-", why: "namespaces named kube-* are Kubernetes' own"},
	{prefix: wellknown.ExecutionNamespacePrefix, why: "namespaces named " + wellknown.ExecutionNamespacePrefix + "* hold member clusters' Works"},
	{name: wellknown.SystemNamespace, why: wellknown.SystemNamespace + " is where Flotilla itself runs"},
	{name: "karmada-system", why: "karmada-system is Karmada's control plane namespace"},
	{name: "karmada-cluster", why: "karmada-cluster is Karmada's namespace for member clusters"},
}

// Is reports whether Flotilla never propagates from the namespace.
func Is(ns string) bool { return Why(ns) != "" }

// Why says why Flotilla never propagates from the namespace, or "" when it may.
func Why(ns string) string {
	for _, r := range rules {
		if (r.prefix != "" && strings.HasPrefix(ns, r.prefix)) || (r.name != "" && ns == r.name) {
			return r.why
		}
	}
	return ""
}

// CEL returns a CEL expression that is true when the string expression ns names a namespace
// Flotilla never propagates from, as Is says.
func CEL(ns string) string {
	var terms, names []string
	for _, r := range rules {
		if r.prefix != "" {
			terms = append(terms, fmt.Sprintf("%s.startsWith(%s)", ns, strconv.Quote(r.prefix)))
		} else {
			names = append(names, strconv.Quote(r.name))
		}
	}
	terms = append(terms, fmt.Sprintf("%s in [%s]", ns, strings.Join(names, ", ")))
	return "(" + strings.Join(terms, " || ") + ")"
}
