package scheduler

import "k8s.io/apimachinery/pkg/types"

// Remembers tells what the reconciler keeps of a binding: its failed attempts (the backoff)
// and whether it has a status memo.
func (r *Reconciler) Remembers(key types.NamespacedName) (failures int, observed bool) {
	_, observed = r.observed.Load(key)
	failures, _ = r.failures.Load(key)
	return failures, observed
}
