package fhpa

import (
	"fmt"
	"time"

	"k8s.io/utils/ptr"

	autoscalingv1alpha1 "github.com/flotilla-io/flotilla/api/autoscaling/v1alpha1"
)

// Bounds are a FederatedHPA's effective minReplicas and maxReplicas.
type Bounds struct {
	Min, Max int32
	// Note says where bounds other than the spec's come from; "" when they are the spec's.
	Note string
}

// EffectiveBounds returns the bounds of FederatedHPA name: its spec's, with the
// minReplicas and maxReplicas set by the latest successful executions of CronFederatedHPAs
// targeting it (each of min and max from the newest execution that set it, as Karmada's
// CronFederatedHPA writes them into the FederatedHPA's spec). Flotilla never writes the
// user's FederatedHPA: the executions recorded in the CronFederatedHPAs' status are read
// instead. A min above the max is lowered to it.
func EffectiveBounds(spec autoscalingv1alpha1.FederatedHPASpec, name string, crons []autoscalingv1alpha1.CronFederatedHPA) Bounds {
	b := Bounds{Min: ptr.Deref(spec.MinReplicas, 1), Max: spec.MaxReplicas}
	type set struct {
		at     time.Time
		v      int32
		source string
	}
	var minSet, maxSet *set
	for i := range crons {
		c := &crons[i]
		ref := c.Spec.ScaleTargetRef
		if ref.Kind != "FederatedHPA" || ref.Name != name || c.DeletionTimestamp != nil {
			continue
		}
		for _, h := range c.Status.ExecutionHistories {
			if len(h.SuccessfulExecutions) == 0 || h.SuccessfulExecutions[0].ExecutionTime == nil {
				continue
			}
			e := h.SuccessfulExecutions[0]
			src := fmt.Sprintf("CronFederatedHPA %s rule %s at %s", c.Name, h.RuleName, e.ExecutionTime.UTC().Format(time.RFC3339))
			if e.AppliedMinReplicas != nil && (minSet == nil || e.ExecutionTime.After(minSet.at)) {
				minSet = &set{e.ExecutionTime.Time, *e.AppliedMinReplicas, src}
			}
			if e.AppliedMaxReplicas != nil && (maxSet == nil || e.ExecutionTime.After(maxSet.at)) {
				maxSet = &set{e.ExecutionTime.Time, *e.AppliedMaxReplicas, src}
			}
		}
	}
	if minSet == nil && maxSet == nil {
		return b
	}
	if minSet != nil {
		b.Min = minSet.v
		b.Note = fmt.Sprintf("minReplicas %d from %s", b.Min, minSet.source)
	}
	if maxSet != nil {
		b.Max = maxSet.v
		if b.Note != "" {
			b.Note += ", "
		}
		b.Note += fmt.Sprintf("maxReplicas %d from %s", b.Max, maxSet.source)
	}
	if b.Min > b.Max {
		b.Min = b.Max
		b.Note += fmt.Sprintf(" (minReplicas lowered to maxReplicas %d)", b.Max)
	}
	return b
}
