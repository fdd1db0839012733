package fhpa

import (
	"fmt"
	"slices"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	autoscalingv1alpha1 "github.com/flotilla-io/flotilla/api/autoscaling/v1alpha1"
)

// Input is what one run of a FederatedHPA observed.
type Input struct {
	Spec autoscalingv1alpha1.FederatedHPASpec
	// Current is the fleet's replicas now: the binding's.
	Current int32
	// Pods are the target's pods in every member that runs it, with their metrics.
	Pods []Pod
	// Unavailable are the members whose pods or metrics could not be read, with why.
	Unavailable map[string]string
	// Previous is the status last written.
	Previous autoscalingv2.HorizontalPodAutoscalerStatus
	// Generation of the FederatedHPA.
	Generation int64
	// Bounds override the spec's minReplicas and maxReplicas when Note is set
	// (EffectiveBounds: CronFederatedHPAs targeting the FederatedHPA).
	Bounds Bounds
}

// Event is an event to record on the FederatedHPA.
type Event struct {
	Type, Reason, Message string
}

// Decision is a run's outcome: the status to write (its desiredReplicas is what the binding
// takes) and the events to record.
type Decision struct {
	Status autoscalingv2.HorizontalPodAutoscalerStatus
	Events []Event
	// Rescaled says the desired replicas differ from the current ones.
	Rescaled bool
}

// Decide runs the HorizontalPodAutoscaler algorithm for one FederatedHPA at now, updating
// st (the run's memory).
func Decide(in Input, st *State, now time.Time) Decision {
	minR := ptr.Deref(in.Spec.MinReplicas, 1)
	maxR := in.Spec.MaxReplicas
	if in.Bounds.Note != "" {
		minR, maxR = in.Bounds.Min, in.Bounds.Max
	}
	d := Decision{Status: autoscalingv2.HorizontalPodAutoscalerStatus{
		ObservedGeneration: ptr.To(in.Generation), CurrentReplicas: in.Current, DesiredReplicas: in.Current,
		LastScaleTime: in.Previous.LastScaleTime, CurrentMetrics: in.Previous.CurrentMetrics,
	}}
	conds := map[autoscalingv2.HorizontalPodAutoscalerConditionType]autoscalingv2.HorizontalPodAutoscalerCondition{}
	set := func(t autoscalingv2.HorizontalPodAutoscalerConditionType, s corev1.ConditionStatus, reason, msg string) {
		conds[t] = autoscalingv2.HorizontalPodAutoscalerCondition{Type: t, Status: s, Reason: reason, Message: msg}
	}
	metrics := in.Spec.Metrics
	if len(metrics) == 0 {
		metrics = DefaultMetrics()
	}
	unsupported := Supported(metrics)
	if unsupported != "" {
		d.Events = append(d.Events, Event{corev1.EventTypeWarning, ReasonInvalidMetricSource, unsupported})
	}
	desired := in.Current
	var rescaleReason string
	switch {
	case in.Current == 0 && minR != 0:
		set(autoscalingv2.ScalingActive, corev1.ConditionFalse, ReasonScalingDisabled, "scaling is disabled since the replica count of the target is zero")
		set(autoscalingv2.AbleToScale, corev1.ConditionTrue, ReasonSucceededRescale, "the FederatedHPA controller was able to read the target")
	case in.Current > maxR:
		desired, rescaleReason = maxR, "Current number of replicas above Spec.MaxReplicas"
		set(autoscalingv2.AbleToScale, corev1.ConditionTrue, ReasonSucceededRescale, "the FederatedHPA controller was able to update the target scale to "+fmt.Sprint(desired))
	case in.Current < minR:
		desired, rescaleReason = minR, "Current number of replicas below Spec.MinReplicas"
		set(autoscalingv2.AbleToScale, corev1.ConditionTrue, ReasonSucceededRescale, "the FederatedHPA controller was able to update the target scale to "+fmt.Sprint(desired))
	case len(in.Unavailable) > 0:
		// A member whose pods or metrics cannot be read leaves the replicas as they are: the
		// sum would miss its pods, and missing data must never scale down.
		names := make([]string, 0, len(in.Unavailable))
		for n := range in.Unavailable {
			names = append(names, n)
		}
		slices.Sort(names)
		var parts []string
		for _, n := range names {
			parts = append(parts, fmt.Sprintf("cluster %s: %s", n, in.Unavailable[n]))
		}
		msg := "the FederatedHPA was unable to compute the replica count: metrics unavailable from " + strings.Join(parts, "; ") + "; keeping the current replicas"
		set(autoscalingv2.ScalingActive, corev1.ConditionFalse, ReasonFailedGetResource, msg)
		set(autoscalingv2.AbleToScale, corev1.ConditionTrue, ReasonSucceededRescale, "the FederatedHPA controller was able to read the target")
		d.Events = append(d.Events, Event{corev1.EventTypeWarning, ReasonFailedGetResource, msg})
	default:
		up, down := Behavior(in.Spec.Behavior)
		rec, results, err := Recommend(metrics, in.Current, in.Pods, TolerancesOf(up, down), now)
		var statuses []autoscalingv2.MetricStatus
		for _, r := range results {
			if r.Err == nil {
				statuses = append(statuses, r.Status)
			}
		}
		d.Status.CurrentMetrics = statuses
		if err != nil {
			reason := ReasonFailedGetResource
			if unsupported != "" && len(statuses) == 0 {
				reason = ReasonInvalidMetricSource
			}
			msg := "the FederatedHPA was unable to compute the replica count: " + err.Error()
			set(autoscalingv2.ScalingActive, corev1.ConditionFalse, reason, msg)
			set(autoscalingv2.AbleToScale, corev1.ConditionTrue, ReasonSucceededRescale, "the FederatedHPA controller was able to read the target")
			d.Events = append(d.Events, Event{corev1.EventTypeWarning, ReasonFailedComputeReplicas, msg})
			break
		}
		msg := "the FederatedHPA was able to successfully calculate a replica count from " + names(metrics, results)
		if unsupported != "" {
			msg += "; not acted on: " + unsupported
		}
		if in.Bounds.Note != "" {
			msg += "; bounds: " + in.Bounds.Note
		}
		set(autoscalingv2.ScalingActive, corev1.ConditionTrue, ReasonValidMetricFound, msg)
		o := Normalize(st, up, down, minR, maxR, in.Current, rec, now)
		desired = o.Replicas
		set(autoscalingv2.AbleToScale, corev1.ConditionTrue, o.AbleReason, o.AbleMessage)
		limited := corev1.ConditionFalse
		if o.Limited {
			limited = corev1.ConditionTrue
		}
		set(autoscalingv2.ScalingLimited, limited, o.LimitedReason, o.LimitMessage)
		if desired > in.Current {
			rescaleReason = aboveTarget(metrics, results)
		} else {
			rescaleReason = "All metrics below target"
		}
		if desired != in.Current {
			st.Scaled(up, down, in.Current, desired, now)
		}
	}
	d.Status.DesiredReplicas = desired
	if desired != in.Current {
		d.Rescaled = true
		d.Status.LastScaleTime = &metav1.Time{Time: now}
		d.Events = append(d.Events, Event{corev1.EventTypeNormal, "SuccessfulRescale", fmt.Sprintf("New size: %d; reason: %s", desired, rescaleReason)})
	}
	for _, t := range []autoscalingv2.HorizontalPodAutoscalerConditionType{autoscalingv2.AbleToScale, autoscalingv2.ScalingActive, autoscalingv2.ScalingLimited} {
		c, ok := conds[t]
		if !ok {
			// Keep what the last run said.
			for _, p := range in.Previous.Conditions {
				if p.Type == t {
					d.Status.Conditions = append(d.Status.Conditions, p)
				}
			}
			continue
		}
		c.LastTransitionTime = metav1.Time{Time: now}
		for _, p := range in.Previous.Conditions {
			if p.Type == t && p.Status == c.Status {
				c.LastTransitionTime = p.LastTransitionTime
			}
		}
		d.Status.Conditions = append(d.Status.Conditions, c)
	}
	return d
}

func names(metrics []autoscalingv2.MetricSpec, results []MetricResult) string {
	var out []string
	for i, r := range results {
		if r.Err == nil {
			out = append(out, MetricSpecName(metrics[i])+" "+kindOf(metrics[i]))
		}
	}
	return strings.Join(out, ", ")
}

func kindOf(m autoscalingv2.MetricSpec) string {
	t := m.Resource
	if t == nil && m.ContainerResource != nil {
		if m.ContainerResource.Target.Type == autoscalingv2.UtilizationMetricType {
			return "utilization (percentage of request)"
		}
		return "average value"
	}
	if t != nil && t.Target.Type == autoscalingv2.UtilizationMetricType {
		return "utilization (percentage of request)"
	}
	return "average value"
}

// aboveTarget names the metric that asked for the most replicas.
func aboveTarget(metrics []autoscalingv2.MetricSpec, results []MetricResult) string {
	best, at := int32(-1), -1
	for i, r := range results {
		if r.Err == nil && r.Rec.Replicas > best {
			best, at = r.Rec.Replicas, i
		}
	}
	if at < 0 {
		return "above target"
	}
	return MetricSpecName(metrics[at]) + " " + kindOf(metrics[at]) + " above target"
}

// Active is the FederatedHPA whose desired replicas a template's binding takes.
type Active struct {
	Name     string
	Replicas int32
}

// Select returns, of the FederatedHPAs of a namespace, the one that scales the template (gk,
// name), nil when none has decided yet: a FederatedHPA with no desiredReplicas (not computed
// yet, or scaling disabled by a template at 0 replicas) has no say. Two on one template:
// the first by name (Kubernetes refuses to run two HPAs on one target).
func Select(items []autoscalingv1alpha1.FederatedHPA, gk schema.GroupKind, name string) *Active {
	var best *Active
	for i := range items {
		h := &items[i]
		gv, err := schema.ParseGroupVersion(h.Spec.ScaleTargetRef.APIVersion)
		if err != nil || gv.WithKind(h.Spec.ScaleTargetRef.Kind).GroupKind() != gk || h.Spec.ScaleTargetRef.Name != name || h.DeletionTimestamp != nil {
			continue
		}
		if h.Status.DesiredReplicas <= 0 {
			continue
		}
		if best == nil || h.Name < best.Name {
			best = &Active{Name: h.Name, Replicas: h.Status.DesiredReplicas}
		}
	}
	return best
}

// Applies reports whether the FederatedHPA's replicas apply to a template asking for
// templateReplicas: always, unless the template asks for 0 (which disables autoscaling, as
// for a HorizontalPodAutoscaler).
func (a *Active) Applies(templateReplicas int32) bool { return a != nil && templateReplicas > 0 }

// Marker describes a, for the binding's annotation; "" for nil.
func (a *Active) Marker() string {
	if a == nil {
		return ""
	}
	return fmt.Sprintf("FederatedHPA %s: %d replicas", a.Name, a.Replicas)
}
