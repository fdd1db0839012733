// Package ledger remembers the placements the scheduler made that the members have not
// reported yet, so that the capacity they will take is not offered to the next binding: two
// bindings scheduled in the same second would otherwise both see the same free room (Karmada
// guards against this overcommit in its scheduler-estimator). It is pure apart from a mutex:
// the clock is passed in.
//
// A placement is held from the moment it is made until the cluster reports it, or until the
// TTL runs out, whichever comes first. "Reported" is judged from the number of pods the
// cluster's status counts (allocated plus allocating "pods" of status.resourceSummary): a
// placement made when the cluster counted P pods is reported once the cluster counts P plus
// its replicas plus those of the placements held there before it. Pods deleted meanwhile
// only delay that; the TTL bounds the delay.
package ledger

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-io/flotilla/internal/scheduler/estimate"
)

// DefaultTTL is how long a placement is held at most.
const DefaultTTL = 2 * time.Minute

// Unreported is the pod count of a cluster that reports none: its placements are held until
// the TTL runs out.
const Unreported int64 = -1

// Ledger holds placements by cluster. The zero value is not usable; use New.
type Ledger struct {
	ttl time.Duration
	// cycle serializes the scheduling cycles that read the ledger and then add to it.
	cycle sync.Mutex

	mu        sync.Mutex
	byCluster map[string][]entry // in the order they were made
}

type entry struct {
	binding  string
	replicas int32
	request  corev1.ResourceList
	at       time.Time
	// until is the pod count at which the cluster reports the placement, or Unreported.
	until int64
}

// New returns an empty ledger whose placements are held at most ttl (DefaultTTL when ttl is
// not positive).
func New(ttl time.Duration) *Ledger {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &Ledger{ttl: ttl, byCluster: map[string][]entry{}}
}

// Lock starts a scheduling cycle that reads the held placements and then holds its own:
// cycles are serialized so that two do not both count the same room. The ledger's other
// methods may be called while it is locked.
func (l *Ledger) Lock() { l.cycle.Lock() }

// Unlock ends the cycle started by Lock.
func (l *Ledger) Unlock() { l.cycle.Unlock() }

// TTL returns how long a placement is held at most.
func (l *Ledger) TTL() time.Duration { return l.ttl }

// Hold records that binding placed replicas more replicas, each requesting request, on
// cluster at now, when the cluster counted pods pods (Unreported when it counts none).
// Nothing is held for a placement that adds no replicas.
func (l *Ledger) Hold(now time.Time, binding, cluster string, replicas int32, request corev1.ResourceList, pods int64) {
	if replicas <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	until := Unreported
	if pods != Unreported {
		until = pods + int64(replicas)
		for _, e := range l.byCluster[cluster] {
			until += int64(e.replicas)
		}
	}
	l.byCluster[cluster] = append(l.byCluster[cluster], entry{binding: binding, replicas: replicas, request: request, at: now, until: until})
}

// Forget drops what a binding holds: it is gone, or its placement was replaced.
func (l *Ledger) Forget(binding string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c, entries := range l.byCluster {
		kept := entries[:0]
		for _, e := range entries {
			if e.binding != binding {
				kept = append(kept, e)
			}
		}
		l.set(c, kept)
	}
}

// Release drops what a binding holds on one cluster: it now has fewer replicas there.
func (l *Ledger) Release(binding, cluster string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	entries := l.byCluster[cluster]
	kept := entries[:0]
	for _, e := range entries {
		if e.binding != binding {
			kept = append(kept, e)
		}
	}
	l.set(cluster, kept)
}

// Held returns, by cluster, the placements still held at now, after releasing those the
// clusters report (pods: each cluster's pod count, Unreported or absent when it counts none)
// and those older than the TTL.
func (l *Ledger) Held(now time.Time, pods map[string]int64) map[string][]estimate.Held {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out map[string][]estimate.Held
	for c, entries := range l.byCluster {
		reported, ok := pods[c]
		if !ok {
			reported = Unreported
		}
		kept := entries[:0]
		for _, e := range entries {
			expired := now.Sub(e.at) >= l.ttl
			if expired || reported != Unreported && e.until != Unreported && reported >= e.until {
				continue
			}
			kept = append(kept, e)
		}
		l.set(c, kept)
		for _, e := range kept {
			if out == nil {
				out = map[string][]estimate.Held{}
			}
			out[c] = append(out[c], estimate.Held{Replicas: e.replicas, Request: e.request})
		}
	}
	return out
}

// Len returns how many placements are held, released or not; for metrics and tests.
func (l *Ledger) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, entries := range l.byCluster {
		n += len(entries)
	}
	return n
}

func (l *Ledger) set(cluster string, entries []entry) {
	if len(entries) == 0 {
		delete(l.byCluster, cluster)
		return
	}
	l.byCluster[cluster] = entries
}
