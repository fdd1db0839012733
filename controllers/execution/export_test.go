package execution

import "strings"

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
