package fhpa

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/utils/ptr"
)

// Condition reasons, as the HorizontalPodAutoscaler controller's.
const (
	ReasonSucceededRescale       = "SucceededRescale"
	ReasonReadyForNewScale       = "ReadyForNewScale"
	ReasonScaleUpStabilized      = "ScaleUpStabilized"
	ReasonScaleDownStabilized    = "ScaleDownStabilized"
	ReasonValidMetricFound       = "ValidMetricFound"
	ReasonFailedGetResource      = "FailedGetResourceMetric"
	ReasonInvalidMetricSource    = "InvalidMetricSourceType"
	ReasonScalingDisabled        = "ScalingDisabled"
	ReasonDesiredWithinRange     = "DesiredWithinRange"
	ReasonTooFewReplicas         = "TooFewReplicas"
	ReasonTooManyReplicas        = "TooManyReplicas"
	ReasonScaleUpLimit           = "ScaleUpLimit"
	ReasonScaleDownLimit         = "ScaleDownLimit"
	ReasonFailedGetScale         = "FailedGetScale"
	ReasonFailedComputeReplicas  = "FailedComputeMetricsReplicas"
	ReasonMemberMetricsUnavailab = "MemberMetricsUnavailable"
)

// Behavior returns b with Kubernetes' defaults filled in: scale up by at most 4 pods or 100%
// per 15 s (the larger), no stabilization; scale down by up to 100% per 15 s after a 300 s
// stabilization window.
func Behavior(b *autoscalingv2.HorizontalPodAutoscalerBehavior) (up, down autoscalingv2.HPAScalingRules) {
	up = autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0), SelectPolicy: ptr.To(autoscalingv2.MaxChangePolicySelect),
		Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15}, {Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}}
	down = autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](300), SelectPolicy: ptr.To(autoscalingv2.MaxChangePolicySelect),
		Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}}
	if b == nil {
		return up, down
	}
	merge := func(d *autoscalingv2.HPAScalingRules, r *autoscalingv2.HPAScalingRules) {
		if r == nil {
			return
		}
		if r.StabilizationWindowSeconds != nil {
			d.StabilizationWindowSeconds = r.StabilizationWindowSeconds
		}
		if r.SelectPolicy != nil {
			d.SelectPolicy = r.SelectPolicy
		}
		if len(r.Policies) > 0 {
			d.Policies = r.Policies
		}
		d.Tolerance = r.Tolerance
	}
	merge(&up, b.ScaleUp)
	merge(&down, b.ScaleDown)
	return up, down
}

// TolerancesOf are the tolerances of the behavior's rules, DefaultTolerance when not set.
func TolerancesOf(up, down autoscalingv2.HPAScalingRules) Tolerances {
	t := Tolerances{Up: DefaultTolerance, Down: DefaultTolerance}
	if up.Tolerance != nil {
		t.Up = up.Tolerance.AsApproximateFloat64()
	}
	if down.Tolerance != nil {
		t.Down = down.Tolerance.AsApproximateFloat64()
	}
	return t
}

// MetricResult is one metric's outcome: its recommendation and status, or why it has none.
type MetricResult struct {
	Status autoscalingv2.MetricStatus
	Rec    Recommendation
	Err    error
}

// Recommend computes every metric's recommendation and the largest; err when no metric
// could be read, or when one could not and the others ask for fewer replicas than current
// (a metric that cannot be read never causes a scale down).
func Recommend(metrics []autoscalingv2.MetricSpec, current int32, pods []Pod, tol Tolerances, now time.Time) (int32, []MetricResult, error) {
	if len(metrics) == 0 {
		metrics = DefaultMetrics()
	}
	results := make([]MetricResult, 0, len(metrics))
	var best int32
	have := false
	var errs []string
	for _, m := range metrics {
		rec, err := Replicas(m, current, pods, tol, now)
		r := MetricResult{Rec: rec, Err: err}
		if err != nil {
			errs = append(errs, err.Error())
		} else {
			r.Status = status(m, rec)
			if !have || rec.Replicas > best {
				best, have = rec.Replicas, true
			}
		}
		results = append(results, r)
	}
	if !have || (len(errs) > 0 && best < current) {
		return 0, results, fmt.Errorf("invalid metrics (%d invalid out of %d), first error is: %s", len(errs), len(metrics), errs[0])
	}
	return best, results, nil
}

// status is a metric's status as a HorizontalPodAutoscaler reports it.
func status(m autoscalingv2.MetricSpec, rec Recommendation) autoscalingv2.MetricStatus {
	cur := autoscalingv2.MetricValueStatus{AverageUtilization: rec.Utilization, AverageValue: ptr.To(rec.AverageValue)}
	if m.Type == autoscalingv2.ContainerResourceMetricSourceType {
		return autoscalingv2.MetricStatus{Type: m.Type, ContainerResource: &autoscalingv2.ContainerResourceMetricStatus{
			Name: m.ContainerResource.Name, Container: m.ContainerResource.Container, Current: cur}}
	}
	return autoscalingv2.MetricStatus{Type: m.Type, Resource: &autoscalingv2.ResourceMetricStatus{Name: m.Resource.Name, Current: cur}}
}

// Supported reports the metrics Flotilla does not act on, as one message, "" when all are.
func Supported(metrics []autoscalingv2.MetricSpec) string {
	var bad []string
	for i, m := range metrics {
		if _, err := targetOf(m); errors.Is(err, ErrNotSupported) {
			bad = append(bad, fmt.Sprintf("spec.metrics[%d] (type %s)", i, m.Type))
		}
	}
	if len(bad) == 0 {
		return ""
	}
	return strings.Join(bad, ", ") + ": only Resource and ContainerResource metrics are supported; the other metrics are not acted on"
}

// Timestamped is a recommendation or a scale event at a time.
type Timestamped struct {
	At       time.Time
	Replicas int32
}

// State is what a FederatedHPA's normalization remembers between runs (kept in memory, as
// the HorizontalPodAutoscaler controller keeps it): past recommendations and scale events.
type State struct {
	Recommendations []Timestamped
	ScaleUps        []Timestamped // replicas added
	ScaleDowns      []Timestamped // replicas removed
}

// Outcome is a normalized recommendation and the conditions it sets.
type Outcome struct {
	Replicas int32
	// AbleToScale's reason and message, and ScalingLimited's.
	AbleReason, AbleMessage     string
	Limited                     bool
	LimitedReason, LimitMessage string
}

// Normalize applies the stabilization windows and the scale policies to the metrics'
// recommendation, then the bounds, and records the recommendation in state. now is the time
// of this run.
func Normalize(st *State, up, down autoscalingv2.HPAScalingRules, minR, maxR, current, recommended int32, now time.Time) Outcome {
	var o Outcome
	// Stabilization: the lowest recommendation of the scale-up window and the highest of the
	// scale-down window bound the change.
	upRec, downRec := recommended, recommended
	upCut := now.Add(-time.Duration(ptr.Deref(up.StabilizationWindowSeconds, 0)) * time.Second)
	downCut := now.Add(-time.Duration(ptr.Deref(down.StabilizationWindowSeconds, 0)) * time.Second)
	for _, r := range st.Recommendations {
		if r.At.After(upCut) {
			upRec = min(upRec, r.Replicas)
		}
		if r.At.After(downCut) {
			downRec = max(downRec, r.Replicas)
		}
	}
	stabilized := current
	if stabilized < upRec {
		stabilized = upRec
	}
	if stabilized > downRec {
		stabilized = downRec
	}
	longest := max(ptr.Deref(up.StabilizationWindowSeconds, 0), ptr.Deref(down.StabilizationWindowSeconds, 0))
	st.Recommendations = append(keep(st.Recommendations, now.Add(-time.Duration(longest)*time.Second)), Timestamped{At: now, Replicas: recommended})
	switch {
	case stabilized == recommended:
		o.AbleReason, o.AbleMessage = ReasonReadyForNewScale, "recommended size matches current size"
	case recommended > stabilized:
		o.AbleReason, o.AbleMessage = ReasonScaleUpStabilized, "recent recommendations were lower than current one, applying the lowest recent recommendation"
	default:
		o.AbleReason, o.AbleMessage = ReasonScaleDownStabilized, "recent recommendations were higher than current one, applying the highest recent recommendation"
	}
	// Rate limits and bounds.
	o.Replicas, o.LimitedReason, o.LimitMessage = rate(st, up, down, minR, maxR, current, stabilized, now)
	o.Limited = o.Replicas != stabilized
	return o
}

// rate limits the change by the policies and clamps to the bounds.
func rate(st *State, up, down autoscalingv2.HPAScalingRules, minR, maxR, current, desired int32, now time.Time) (int32, string, string) {
	if desired > current {
		limit := scaleUpLimit(st, up, current, now)
		if limit < current {
			limit = current
		}
		allowed, reason, msg := maxR, ReasonTooManyReplicas, "the desired replica count is more than the maximum replica count"
		if allowed > limit {
			allowed, reason, msg = limit, ReasonScaleUpLimit, "the desired replica count is increasing faster than the maximum scale rate"
		}
		if desired > allowed {
			return allowed, reason, msg
		}
	} else if desired < current {
		limit := scaleDownLimit(st, down, current, now)
		if limit > current {
			limit = current
		}
		allowed, reason, msg := minR, ReasonTooFewReplicas, "the desired replica count is less than the minimum replica count"
		if allowed < limit {
			allowed, reason, msg = limit, ReasonScaleDownLimit, "the desired replica count is decreasing faster than the maximum scale rate"
		}
		if desired < allowed {
			return allowed, reason, msg
		}
	}
	if desired > maxR {
		return maxR, ReasonTooManyReplicas, "the desired replica count is more than the maximum replica count"
	}
	if desired < minR {
		return minR, ReasonTooFewReplicas, "the desired replica count is less than the minimum replica count"
	}
	return desired, ReasonDesiredWithinRange, "the desired count is within the acceptable range"
}

// changed sums the events of the last period.
func changed(events []Timestamped, period int32, now time.Time) int32 {
	cut := now.Add(-time.Duration(period) * time.Second)
	var n int32
	for _, e := range events {
		if e.At.After(cut) {
			n += e.Replicas
		}
	}
	return n
}

func scaleUpLimit(st *State, r autoscalingv2.HPAScalingRules, current int32, now time.Time) int32 {
	sel := ptr.Deref(r.SelectPolicy, autoscalingv2.MaxChangePolicySelect)
	if sel == autoscalingv2.DisabledPolicySelect {
		return current
	}
	result := int32(math.MinInt32)
	pick := func(a, b int32) int32 { return max(a, b) }
	if sel == autoscalingv2.MinChangePolicySelect {
		result, pick = math.MaxInt32, func(a, b int32) int32 { return min(a, b) }
	}
	for _, p := range r.Policies {
		start := current - changed(st.ScaleUps, p.PeriodSeconds, now) + changed(st.ScaleDowns, p.PeriodSeconds, now)
		var proposed int32
		if p.Type == autoscalingv2.PodsScalingPolicy {
			proposed = start + p.Value
		} else {
			proposed = ceil32(float64(start) * (1 + float64(p.Value)/100))
		}
		result = pick(result, proposed)
	}
	return result
}

func scaleDownLimit(st *State, r autoscalingv2.HPAScalingRules, current int32, now time.Time) int32 {
	sel := ptr.Deref(r.SelectPolicy, autoscalingv2.MaxChangePolicySelect)
	if sel == autoscalingv2.DisabledPolicySelect {
		return current
	}
	result := int32(math.MaxInt32)
	pick := func(a, b int32) int32 { return min(a, b) }
	if sel == autoscalingv2.MinChangePolicySelect {
		result, pick = math.MinInt32, func(a, b int32) int32 { return max(a, b) }
	}
	for _, p := range r.Policies {
		start := current - changed(st.ScaleUps, p.PeriodSeconds, now) + changed(st.ScaleDowns, p.PeriodSeconds, now)
		var proposed int32
		if p.Type == autoscalingv2.PodsScalingPolicy {
			proposed = start - p.Value
		} else {
			proposed = int32(float64(start) * (1 - float64(p.Value)/100))
		}
		result = pick(result, proposed)
	}
	return result
}

// Scaled records a change of the fleet's replicas from prev to next at now, forgetting the
// events older than every policy's period.
func (st *State) Scaled(up, down autoscalingv2.HPAScalingRules, prev, next int32, now time.Time) {
	longest := func(r autoscalingv2.HPAScalingRules) time.Time {
		var p int32
		for _, x := range r.Policies {
			p = max(p, x.PeriodSeconds)
		}
		return now.Add(-time.Duration(p) * time.Second)
	}
	st.ScaleUps = keep(st.ScaleUps, longest(up))
	st.ScaleDowns = keep(st.ScaleDowns, longest(down))
	switch {
	case next > prev:
		st.ScaleUps = append(st.ScaleUps, Timestamped{At: now, Replicas: next - prev})
	case next < prev:
		st.ScaleDowns = append(st.ScaleDowns, Timestamped{At: now, Replicas: prev - next})
	}
}

func keep(s []Timestamped, after time.Time) []Timestamped {
	out := s[:0:0]
	for _, e := range s {
		if e.At.After(after) {
			out = append(out, e)
		}
	}
	return out
}

// MetricSpecName names a metric for messages ("cpu resource utilization (percentage of
// request)").
func MetricSpecName(m autoscalingv2.MetricSpec) string {
	switch {
	case m.Resource != nil:
		return fmt.Sprintf("%s resource", m.Resource.Name)
	case m.ContainerResource != nil:
		return fmt.Sprintf("%s resource of container %s", m.ContainerResource.Name, m.ContainerResource.Container)
	}
	return string(m.Type)
}
