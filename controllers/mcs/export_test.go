package mcs

import "k8s.io/apimachinery/pkg/types"

// Remembers tells what the reconciler keeps of a service: whether it has a plan, and how
// many members' write results.
func (r *Reconciler) Remembers(key types.NamespacedName) (plan bool, results int) {
	_, plan = r.plans.Load(key)
	for _, k := range r.results.Keys() {
		if k.key == key {
			results++
		}
	}
	return plan, results
}

// RemembersMember is how many entries the reconciler keeps of a member: write results, that
// its CRDs are in place, namespaces it has.
func (r *Reconciler) RemembersMember(cluster string) int {
	n := 0
	for _, k := range r.results.Keys() {
		if k.cluster == cluster {
			n++
		}
	}
	if _, ok := r.crds.Load(cluster); ok {
		n++
	}
	for _, k := range r.namespaces.Keys() {
		if k.cluster == cluster {
			n++
		}
	}
	return n
}
