// Package rebalance is the pure logic of the WorkloadRebalancer controller: which workloads
// of a rebalancer still need their reschedule triggered, whether it has finished, and when a
// finished one expires.
package rebalance

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-io/flotilla/api/apps/v1alpha1"
)

// Plan compares a rebalancer's spec.workloads with its status.observedWorkloads. It returns
// the results to keep (those of workloads still in the spec, in spec order) and the workloads
// of the spec that have no result yet (each once, in spec order). A workload is triggered
// once: a result, Successful or Failed, is never recomputed; a workload removed from the spec
// loses its result, so adding it back triggers it again.
func Plan(workloads []appsv1alpha1.Workload, observed []appsv1alpha1.ObservedWorkload) (kept []appsv1alpha1.ObservedWorkload, pending []appsv1alpha1.Workload) {
	results := make(map[appsv1alpha1.Workload]appsv1alpha1.ObservedWorkload, len(observed))
	for _, o := range observed {
		if o.Result != "" {
			results[o.Workload] = o
		}
	}
	seen := make(map[appsv1alpha1.Workload]bool, len(workloads))
	for _, w := range workloads {
		if seen[w] {
			continue
		}
		seen[w] = true
		if o, ok := results[w]; ok {
			kept = append(kept, o)
		} else {
			pending = append(pending, w)
		}
	}
	return kept, pending
}

// Finished reports whether every workload of the spec has a result in observed.
func Finished(workloads []appsv1alpha1.Workload, observed []appsv1alpha1.ObservedWorkload) bool {
	_, pending := Plan(workloads, observed)
	return len(pending) == 0
}

// Expiry returns when a finished rebalancer is to be deleted: finishTime plus
// ttlSecondsAfterFinished. It returns false when the rebalancer has not finished or has no
// TTL (it is kept). A negative TTL, which the CRD rejects, counts as 0.
func Expiry(finish *metav1.Time, ttlSeconds *int32) (time.Time, bool) {
	if finish == nil || ttlSeconds == nil {
		return time.Time{}, false
	}
	return finish.Add(time.Duration(max(*ttlSeconds, 0)) * time.Second), true
}

// TriggerTime returns the time to write into a binding's spec.rescheduleTriggeredAt for a
// rebalancer created at created, or false when the binding already carries that trigger or a
// later one (a newer rebalancer's): a trigger never moves back in time.
func TriggerTime(created metav1.Time, current *metav1.Time) (metav1.Time, bool) {
	if current != nil && !current.Before(&created) {
		return metav1.Time{}, false
	}
	return created, true
}
