package cluster

import "time"

// RefreshStatus has the member's status, the APIs it serves among it, collected again at
// once rather than after StatusInterval: the execution controller calls it when a CRD it
// applied to the member is Established, so that the scheduler can place the custom resources
// of the new kind there without waiting. A collection already running is followed by another.
func (r *Reconciler) RefreshStatus(name string) {
	st := r.state(name)
	st.mu.Lock()
	st.collectedAt = time.Time{}
	st.mu.Unlock()
	if r.collections != nil {
		r.wake(name)
	}
}
