// Package fhpa is the pure core of FederatedHPAs: Kubernetes' HorizontalPodAutoscaler
// algorithm over the pods of every member that runs the target, pooled as if they were one
// cluster's.
//
//   - Replicas computes one resource metric's recommendation as kube's replica calculator
//     does: desired = ceil(ready pods * current/target) outside the tolerance (0.1), pods
//     without metrics assumed at the target's edge (100% of their request when scaling down,
//     0 when scaling up), unready pods counted as 0 when scaling up, the recommendation
//     dropped when those assumptions flip its direction.
//   - Recommend combines the metrics (the largest wins; an unreadable metric blocks a scale
//     down), clamps to min/max.
//   - Normalize applies behavior: stabilization windows over past recommendations, then the
//     scale-up and scale-down policies' rate limits over past scale events (State), with
//     Kubernetes' defaults.
//
// Nothing here reads a clock or a client: every function takes the time and the observations.
package fhpa

import (
	"errors"
	"fmt"
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// DefaultTolerance is how far the usage ratio may be from 1 before the replicas change
// (kube-controller-manager's --horizontal-pod-autoscaler-tolerance).
const DefaultTolerance = 0.1

// CPUInitializationPeriod and InitialReadinessDelay are kube-controller-manager's defaults:
// a pod started less than 5 minutes ago counts as unready for CPU until its metric was taken
// after it became Ready; an older pod that is not Ready counts as unready when it never was
// Ready since 30 s after it started.
const (
	CPUInitializationPeriod = 5 * time.Minute
	InitialReadinessDelay   = 30 * time.Second
)

// Pod is one pod of the target in one member, with its metrics when the member's metrics
// API reported them (nil otherwise).
type Pod struct {
	// Cluster is the member it runs in.
	Cluster string
	Pod     *corev1.Pod
	Metrics *metricsv1beta1.PodMetrics
}

// Tolerances are the ratio bands within which nothing changes.
type Tolerances struct{ Up, Down float64 }

func (t Tolerances) within(ratio float64) bool { return 1-t.Down <= ratio && ratio <= 1+t.Up }

// Recommendation is what one metric asks for.
type Recommendation struct {
	Replicas int32
	// Utilization is the average utilization in percent of requests (Utilization targets).
	Utilization *int32
	// AverageValue is the average usage per pod.
	AverageValue resource.Quantity
	// ReadyPods counts the pods whose metrics were used.
	ReadyPods int
}

// podKey names a pod across members.
func podKey(p Pod) string { return p.Cluster + "/" + p.Pod.Namespace + "/" + p.Pod.Name }

// usage is a pod's usage of the resource in milli-units (cpu) or units (others), summed over
// its containers or taken from one container.
func usage(m *metricsv1beta1.PodMetrics, name corev1.ResourceName, container string) (int64, bool) {
	var sum int64
	found := false
	for _, c := range m.Containers {
		if container != "" && c.Name != container {
			continue
		}
		q, ok := c.Usage[name]
		if !ok {
			continue
		}
		sum += q.MilliValue()
		found = true
	}
	return sum, found
}

// request is a pod's request of the resource in milli-units; an error names the container
// without one.
func request(p *corev1.Pod, name corev1.ResourceName, container string) (int64, error) {
	var sum int64
	found := false
	for _, c := range p.Spec.Containers {
		if container != "" && c.Name != container {
			continue
		}
		q, ok := c.Resources.Requests[name]
		if !ok {
			return 0, fmt.Errorf("missing request for %s in container %s of pod %s", name, c.Name, p.Name)
		}
		sum += q.MilliValue()
		found = true
	}
	if !found {
		return 0, fmt.Errorf("pod %s has no container %s", p.Name, container)
	}
	return sum, nil
}

// group sorts the pods as kube's replica calculator does: ready ones with metrics, unready
// ones (pending, or not ready for CPU's initialization), ones without metrics, and ignored
// ones (deleting, failed).
func group(pods []Pod, name corev1.ResourceName, container string, now time.Time) (ready map[string]int64, unready, missing map[string]bool, all map[string]Pod) {
	ready, unready, missing, all = map[string]int64{}, map[string]bool{}, map[string]bool{}, map[string]Pod{}
	for _, p := range pods {
		k := podKey(p)
		if p.Pod.DeletionTimestamp != nil || p.Pod.Status.Phase == corev1.PodFailed || p.Pod.Status.Phase == corev1.PodSucceeded {
			continue
		}
		all[k] = p
		if p.Pod.Status.Phase == corev1.PodPending {
			unready[k] = true
			continue
		}
		var value int64
		ok := p.Metrics != nil
		if ok {
			value, ok = usage(p.Metrics, name, container)
		}
		if !ok {
			missing[k] = true
			continue
		}
		if name == corev1.ResourceCPU && cpuUnready(p, now) {
			unready[k] = true
			continue
		}
		ready[k] = value
	}
	return ready, unready, missing, all
}

// cpuUnready says whether a pod's CPU metric must not be trusted yet.
func cpuUnready(p Pod, now time.Time) bool {
	var cond *corev1.PodCondition
	for i := range p.Pod.Status.Conditions {
		if p.Pod.Status.Conditions[i].Type == corev1.PodReady {
			cond = &p.Pod.Status.Conditions[i]
		}
	}
	if cond == nil || p.Pod.Status.StartTime == nil {
		return true
	}
	start := p.Pod.Status.StartTime.Time
	if start.Add(CPUInitializationPeriod).After(now) {
		window := p.Metrics.Window.Duration
		return cond.Status == corev1.ConditionFalse || p.Metrics.Timestamp.Time.Before(cond.LastTransitionTime.Add(window))
	}
	return cond.Status == corev1.ConditionFalse && start.Add(InitialReadinessDelay).After(cond.LastTransitionTime.Time)
}

// target is one resource metric's target.
type target struct {
	name        corev1.ResourceName
	container   string
	utilization *int32 // percent of requests
	average     int64  // milli-units per pod
}

// ratio is current/target over the pods in values, with their requests.
func (t target) ratio(values map[string]int64, requests map[string]int64) (ratio float64, util int32, avg int64) {
	var sum, req int64
	for k, v := range values {
		sum += v
		req += requests[k]
	}
	if len(values) > 0 {
		avg = sum / int64(len(values))
	}
	if t.utilization != nil {
		if req == 0 {
			return 0, 0, avg
		}
		u := float64(sum) * 100 / float64(req)
		return u / float64(*t.utilization), int32(u), avg
	}
	return float64(sum) / (float64(t.average) * float64(len(values))), 0, avg
}

// ErrNoPods says no pod of the target runs anywhere: nothing to measure.
var ErrNoPods = errors.New("no pods of the target are running in the member clusters")

// Replicas computes one Resource or ContainerResource metric's recommendation for the pods of
// every member, as kube's replica calculator does for one cluster's.
func Replicas(m autoscalingv2.MetricSpec, current int32, pods []Pod, tol Tolerances, now time.Time) (Recommendation, error) {
	t, err := targetOf(m)
	if err != nil {
		return Recommendation{}, err
	}
	ready, unready, missing, all := group(pods, t.name, t.container, now)
	if len(all) == 0 {
		return Recommendation{}, ErrNoPods
	}
	if len(ready) == 0 {
		return Recommendation{}, fmt.Errorf("did not receive metrics for %s of any ready pod of the target (%d pods)", t.name, len(all))
	}
	requests := map[string]int64{}
	if t.utilization != nil {
		for k, p := range all {
			r, err := request(p.Pod, t.name, t.container)
			if err != nil {
				return Recommendation{}, err
			}
			requests[k] = r
		}
	}
	readyCount := len(ready)
	if t.utilization != nil {
		var total int64
		for k := range ready {
			total += requests[k]
		}
		if total == 0 {
			return Recommendation{}, fmt.Errorf("the pods of the target request no %s: a Utilization target needs requests", t.name)
		}
	}
	ratio, util, avg := t.ratio(ready, requests)
	rec := Recommendation{ReadyPods: readyCount, AverageValue: *resource.NewMilliQuantity(avg, resource.DecimalSI)}
	if t.utilization != nil {
		rec.Utilization = &util
	}
	scaleUpWithUnready := len(unready) > 0 && ratio > 1
	if !scaleUpWithUnready && len(missing) == 0 {
		if tol.within(ratio) {
			rec.Replicas = current
			return rec, nil
		}
		rec.Replicas = ceil32(ratio * float64(readyCount))
		return rec, nil
	}
	// Assume the pods without metrics use the target's edge, in the direction that damps the
	// change; unready pods use nothing when scaling up.
	values := map[string]int64{}
	for k, v := range ready {
		values[k] = v
	}
	for k := range missing {
		if ratio < 1 {
			if t.utilization != nil {
				values[k] = requests[k] * int64(max(100, *t.utilization)) / 100
			} else {
				values[k] = t.average
			}
		} else {
			values[k] = 0
		}
	}
	if scaleUpWithUnready {
		for k := range unready {
			values[k] = 0
		}
	}
	newRatio, _, _ := t.ratio(values, requests)
	if tol.within(newRatio) || (ratio < 1 && newRatio > 1) || (ratio > 1 && newRatio < 1) {
		rec.Replicas = current
		return rec, nil
	}
	n := ceil32(newRatio * float64(len(values)))
	if (newRatio < 1 && n > current) || (newRatio > 1 && n < current) {
		n = current
	}
	rec.Replicas = n
	return rec, nil
}

// ceil32 rounds up, saturating at the int32 bounds (a huge usage ratio must not wrap to a
// negative count, which would read as a scale down).
func ceil32(f float64) int32 {
	c := math.Ceil(f)
	switch {
	case math.IsNaN(c) || c < 0:
		return 0
	case c > math.MaxInt32:
		return math.MaxInt32
	}
	return int32(c)
}

// ErrNotSupported marks metric types Flotilla does not act on.
var ErrNotSupported = errors.New("not supported")

// targetOf reads a metric's resource and target.
func targetOf(m autoscalingv2.MetricSpec) (target, error) {
	var t target
	var mt autoscalingv2.MetricTarget
	switch m.Type {
	case autoscalingv2.ResourceMetricSourceType:
		if m.Resource == nil {
			return t, errors.New("metrics[].resource is required for a metric of type Resource")
		}
		t.name, mt = m.Resource.Name, m.Resource.Target
	case autoscalingv2.ContainerResourceMetricSourceType:
		if m.ContainerResource == nil || m.ContainerResource.Container == "" {
			return t, errors.New("metrics[].containerResource with a container is required for a metric of type ContainerResource")
		}
		t.name, t.container, mt = m.ContainerResource.Name, m.ContainerResource.Container, m.ContainerResource.Target
	default:
		return t, fmt.Errorf("metric type %q: %w (Resource and ContainerResource are)", m.Type, ErrNotSupported)
	}
	switch {
	case mt.Type == autoscalingv2.UtilizationMetricType && mt.AverageUtilization != nil && *mt.AverageUtilization > 0:
		t.utilization = mt.AverageUtilization
	case mt.Type == autoscalingv2.AverageValueMetricType && mt.AverageValue != nil && mt.AverageValue.MilliValue() > 0:
		t.average = mt.AverageValue.MilliValue()
	default:
		return t, fmt.Errorf("metrics[].target of %s: type Utilization with averageUtilization > 0 or AverageValue with averageValue > 0", t.name)
	}
	return t, nil
}

// DefaultMetrics are the metrics of a FederatedHPA that lists none: 80% average CPU
// utilization.
func DefaultMetrics() []autoscalingv2.MetricSpec {
	u := int32(80)
	return []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &u}}}}
}
