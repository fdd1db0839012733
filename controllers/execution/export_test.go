package execution

import (
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// RemembersMember is how many entries the reconciler keeps of a member: its namespaces seen,
// the API groups added to its credential.
func (r *Reconciler) RemembersMember(cluster string) int {
	n := 0
	if v, ok := r.namespaces.Load(cluster); ok {
		v.(*knownNamespaces).names.Range(func(any, any) bool { n++; return true })
	}
	for _, k := range r.grantedGroups.Keys() {
		if strings.HasPrefix(k, cluster+"/") {
			n++
		}
	}
	return n
}

// ForgetApplied forgets every apply and Applied condition written, as a restart does.
func (r *Reconciler) ForgetApplied() {
	r.applied.Clear()
	r.written.Clear()
}

// CacheSyncWait is how long a read of the member cache waits for the cache to sync a kind.
const CacheSyncWait = cacheSyncWait

// RemembersApply reports whether the reconciler remembers the Work's member object as applied
// (after an apply, or a check that found it unchanged).
func (r *Reconciler) RemembersApply(uid types.UID) bool {
	_, ok := r.applied.Load(uid)
	return ok
}

// CheckWaits reports whether the Work's check waits for the cluster's member cache to sync a
// kind.
func (r *Reconciler) CheckWaits(cluster string, work types.NamespacedName) bool {
	r.checks.mu.Lock()
	defer r.checks.mu.Unlock()
	for k, kc := range r.checks.kinds {
		if _, ok := kc.works[work]; ok && k.cluster == cluster {
			return true
		}
	}
	return false
}
