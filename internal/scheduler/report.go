package scheduler

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

// DescribeClusters renders clusters as "member1 (1), member2 (1)" (a multi-component
// workload's as "member1 (web 1, db 1)"), or "no cluster".
func DescribeClusters(tcs []workv1alpha2.TargetCluster) string {
	if len(tcs) == 0 {
		return "no cluster"
	}
	var b strings.Builder
	for i, tc := range tcs {
		if i > 0 {
			b.WriteString(", ")
		}
		if len(tc.Components) == 0 {
			fmt.Fprintf(&b, "%s (%d)", tc.Name, tc.Replicas)
			continue
		}
		parts := make([]string, len(tc.Components))
		for j, cr := range tc.Components {
			parts[j] = fmt.Sprintf("%s %d", cr.Name, cr.Replicas)
		}
		fmt.Fprintf(&b, "%s (%s)", tc.Name, strings.Join(parts, ", "))
	}
	return b.String()
}

// ScheduledCondition is the Scheduled condition of a binding placed on clusters, for its
// generation (its LastTransitionTime is left to the writer).
func ScheduledCondition(clusters []workv1alpha2.TargetCluster, generation int64) metav1.Condition {
	return metav1.Condition{Type: wellknown.ConditionScheduled, Status: metav1.ConditionTrue, Reason: wellknown.ReasonBindingScheduled,
		Message: "Binding has been scheduled to " + DescribeClusters(clusters), ObservedGeneration: generation}
}

// FirstPlacementUnreported reports whether a binding is as it was created placed (the
// scheduler's first placement made before the create, PlaceNew) and no status says so yet:
// generation 1, clusters and the applied-placement annotation set, no Scheduled condition and
// no schedulerObservedGeneration. The scheduler does not write that status on its own at
// once: the binding-status controller's first write carries it (one status write per binding
// instead of two), and the scheduler writes it only if that has not happened within a grace
// period (a Work that stays in flight).
func FirstPlacementUnreported(generation int64, annotations map[string]string, spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus) bool {
	if generation != 1 || spec == nil || spec.Placement == nil || len(spec.Clusters) == 0 {
		return false
	}
	if _, ok := annotations[wellknown.AppliedPlacementAnnotation]; !ok {
		return false
	}
	return status == nil || (status.SchedulerObservedGeneration == 0 && meta.FindStatusCondition(status.Conditions, wellknown.ConditionScheduled) == nil)
}
