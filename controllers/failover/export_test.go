package failover

import "k8s.io/apimachinery/pkg/types"

// Remembers tells what the reconciler keeps of a binding: how many events it told once, and
// on how many clusters it counts down an unhealthy workload.
func (r *Reconciler) Remembers(key types.NamespacedName) (told, unhealthy int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.remembered[key]; m != nil {
		return len(m.told), len(m.unhealthySince)
	}
	return 0, 0
}
