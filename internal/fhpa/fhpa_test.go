package fhpa

import (
	"fmt"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	"k8s.io/utils/ptr"

	autoscalingv1alpha1 "github.com/flotilla-io/flotilla/api/autoscaling/v1alpha1"
)

var now = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

// pod is a running, Ready pod started 10 minutes ago requesting reqMilli CPU, using
// useMilli (negative: no metrics).
func pod(cluster, name string, reqMilli, useMilli int64) Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(reqMilli, resource.DecimalSI)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &metav1.Time{Time: now.Add(-10 * time.Minute)},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Time{Time: now.Add(-9 * time.Minute)}}}}}
	out := Pod{Cluster: cluster, Pod: p}
	if useMilli >= 0 {
		out.Metrics = &metricsv1beta1.PodMetrics{ObjectMeta: p.ObjectMeta, Timestamp: metav1.Time{Time: now}, Window: metav1.Duration{Duration: 15 * time.Second},
			Containers: []metricsv1beta1.ContainerMetrics{{Name: "c", Usage: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(useMilli, resource.DecimalSI)}}}}
	}
	return out
}

func pending(cluster, name string) Pod {
	p := pod(cluster, name, 100, -1)
	p.Pod.Status.Phase = corev1.PodPending
	p.Pod.Status.Conditions = nil
	return p
}

func cpuUtil(u int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(u)}}}
}

func cpuAvg(q string) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse(q))}}}
}

var tol = Tolerances{Up: DefaultTolerance, Down: DefaultTolerance}

func TestReplicas(t *testing.T) {
	cases := []struct {
		name    string
		metric  autoscalingv2.MetricSpec
		current int32
		pods    []Pod
		want    int32
		wantErr string
	}{
		{"summed across members: 2 pods at 100% of a 50% target", cpuUtil(50), 2, []Pod{pod("m1", "a", 100, 100), pod("m2", "b", 100, 100)}, 4, ""},
		{"within tolerance keeps current", cpuUtil(50), 2, []Pod{pod("m1", "a", 100, 54), pod("m2", "b", 100, 54)}, 2, ""},
		{"just outside tolerance scales", cpuUtil(50), 2, []Pod{pod("m1", "a", 100, 60), pod("m2", "b", 100, 60)}, 3, ""},
		{"scale down", cpuUtil(50), 4, []Pod{pod("m1", "a", 100, 10), pod("m1", "b", 100, 10), pod("m2", "c", 100, 10), pod("m2", "d", 100, 10)}, 1, ""},
		{"average value", cpuAvg("100m"), 2, []Pod{pod("m1", "a", 100, 300), pod("m2", "b", 100, 100)}, 4, ""},
		{"missing metrics damp a scale down (assumed at 100% of request)", cpuUtil(50), 3, []Pod{pod("m1", "a", 100, 10), pod("m1", "b", 100, 10), pod("m2", "c", 100, -1)}, 3, ""},
		{"missing metrics count 0 when scaling up", cpuUtil(50), 3, []Pod{pod("m1", "a", 100, 200), pod("m1", "b", 100, 200), pod("m2", "c", 100, -1)}, 8, ""},
		{"pending pods count 0 when scaling up", cpuUtil(50), 3, []Pod{pod("m1", "a", 100, 100), pending("m2", "p")}, 3, ""},
		{"pending pods do not block a large scale up", cpuUtil(50), 2, []Pod{pod("m1", "a", 100, 400), pending("m2", "p")}, 8, ""},
		{"no pods", cpuUtil(50), 2, nil, 0, "no pods"},
		{"no metrics at all", cpuUtil(50), 2, []Pod{pod("m1", "a", 100, -1)}, 0, "did not receive metrics"},
		{"missing request", cpuUtil(50), 1, []Pod{func() Pod { p := pod("m1", "a", 100, 50); p.Pod.Spec.Containers[0].Resources.Requests = nil; return p }()}, 0, "missing request for cpu in container c"},
		{"pods metric not supported", autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType}, 1, []Pod{pod("m1", "a", 100, 50)}, 0, "not supported"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec, err := Replicas(c.metric, c.current, c.pods, tol, now)
			if c.wantErr != "" {
				if err == nil || !contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rec.Replicas != c.want {
				t.Fatalf("replicas = %d, want %d", rec.Replicas, c.want)
			}
		})
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && (s == sub || indexOf(s, sub) >= 0))
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func TestNormalize(t *testing.T) {
	up, down := Behavior(nil)
	t.Run("defaults: scale up by max(4 pods, 100%) per 15 s", func(t *testing.T) {
		st := &State{}
		o := Normalize(st, up, down, 1, 100, 2, 20, now)
		if o.Replicas != 6 || o.LimitedReason != ReasonScaleUpLimit {
			t.Fatalf("%+v", o)
		}
		st.Scaled(up, down, 2, 6, now)
		// Within the same 15 s period nothing more is allowed.
		o = Normalize(st, up, down, 1, 100, 6, 20, now.Add(5*time.Second))
		if o.Replicas != 6 {
			t.Fatalf("same period: %+v", o)
		}
		o = Normalize(st, up, down, 1, 100, 6, 20, now.Add(16*time.Second))
		if o.Replicas != 12 {
			t.Fatalf("next period: %+v", o)
		}
	})
	t.Run("defaults: scale down waits for the 300 s window", func(t *testing.T) {
		st := &State{}
		Normalize(st, up, down, 1, 100, 5, 5, now)
		o := Normalize(st, up, down, 1, 100, 5, 1, now.Add(60*time.Second))
		if o.Replicas != 5 || o.AbleReason != ReasonScaleDownStabilized {
			t.Fatalf("%+v", o)
		}
		o = Normalize(st, up, down, 1, 100, 5, 1, now.Add(301*time.Second))
		if o.Replicas != 1 {
			t.Fatalf("after window: %+v", o)
		}
	})
	t.Run("bounds", func(t *testing.T) {
		short := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0)}}
		u, d := Behavior(short)
		if o := Normalize(&State{}, u, d, 2, 10, 5, 1, now); o.Replicas != 2 || o.LimitedReason != ReasonTooFewReplicas || !o.Limited {
			t.Fatalf("%+v", o)
		}
		if o := Normalize(&State{}, u, d, 2, 10, 9, 40, now); o.Replicas != 10 || o.LimitedReason != ReasonTooManyReplicas {
			t.Fatalf("%+v", o)
		}
	})
	t.Run("selectPolicy Min and Disabled", func(t *testing.T) {
		b := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{SelectPolicy: ptr.To(autoscalingv2.MinChangePolicySelect)},
			ScaleDown: &autoscalingv2.HPAScalingRules{SelectPolicy: ptr.To(autoscalingv2.DisabledPolicySelect), StabilizationWindowSeconds: ptr.To[int32](0)}}
		u, d := Behavior(b)
		if o := Normalize(&State{}, u, d, 1, 100, 10, 40, now); o.Replicas != 14 {
			t.Fatalf("min of (10+4, 10*2): %+v", o)
		}
		if o := Normalize(&State{}, u, d, 1, 100, 10, 1, now); o.Replicas != 10 {
			t.Fatalf("scale down disabled: %+v", o)
		}
	})
}

func spec(metrics ...autoscalingv2.MetricSpec) autoscalingv1alpha1.FederatedHPASpec {
	return autoscalingv1alpha1.FederatedHPASpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		MinReplicas: ptr.To[int32](1), MaxReplicas: 10, Metrics: metrics}
}

func cond(s autoscalingv2.HorizontalPodAutoscalerStatus, t autoscalingv2.HorizontalPodAutoscalerConditionType) string {
	for _, c := range s.Conditions {
		if c.Type == t {
			return fmt.Sprintf("%s/%s", c.Status, c.Reason)
		}
	}
	return ""
}

func TestDecide(t *testing.T) {
	two := []Pod{pod("m1", "a", 100, 100), pod("m2", "b", 100, 100)}
	t.Run("scales up from metrics summed across members", func(t *testing.T) {
		d := Decide(Input{Spec: spec(cpuUtil(50)), Current: 2, Pods: two}, &State{}, now)
		if d.Status.DesiredReplicas != 4 || !d.Rescaled || d.Status.LastScaleTime == nil || cond(d.Status, autoscalingv2.ScalingActive) != "True/ValidMetricFound" {
			t.Fatalf("%+v", d)
		}
		if len(d.Events) != 1 || d.Events[0].Reason != "SuccessfulRescale" || d.Events[0].Message != "New size: 4; reason: cpu resource utilization (percentage of request) above target" {
			t.Fatalf("%+v", d.Events)
		}
		if got := *d.Status.CurrentMetrics[0].Resource.Current.AverageUtilization; got != 100 {
			t.Fatalf("utilization %d", got)
		}
	})
	t.Run("a member whose metrics are down keeps the replicas", func(t *testing.T) {
		d := Decide(Input{Spec: spec(cpuUtil(50)), Current: 4, Pods: []Pod{pod("m1", "a", 100, 1)}, Unavailable: map[string]string{"m2": "metrics.k8s.io unavailable"}}, &State{}, now)
		if d.Status.DesiredReplicas != 4 || d.Rescaled || cond(d.Status, autoscalingv2.ScalingActive) != "False/FailedGetResourceMetric" {
			t.Fatalf("%+v", d)
		}
		if c := d.Status.Conditions[1].Message; !contains(c, "cluster m2: metrics.k8s.io unavailable") {
			t.Fatal(c)
		}
	})
	t.Run("no metrics anywhere keeps the replicas", func(t *testing.T) {
		d := Decide(Input{Spec: spec(cpuUtil(50)), Current: 4, Pods: []Pod{pod("m1", "a", 100, -1)}}, &State{}, now)
		if d.Status.DesiredReplicas != 4 || cond(d.Status, autoscalingv2.ScalingActive) != "False/FailedGetResourceMetric" {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("unsupported metric types: condition and Warning, never silently ignored", func(t *testing.T) {
		d := Decide(Input{Spec: spec(autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType}), Current: 2, Pods: two}, &State{}, now)
		if d.Status.DesiredReplicas != 2 || cond(d.Status, autoscalingv2.ScalingActive) != "False/InvalidMetricSourceType" || d.Events[0].Reason != ReasonInvalidMetricSource {
			t.Fatalf("%+v", d)
		}
		// With a supported metric too, that one acts but a scale down is blocked.
		d = Decide(Input{Spec: spec(cpuUtil(50), autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType}), Current: 2, Pods: two}, &State{}, now)
		if d.Status.DesiredReplicas != 4 || cond(d.Status, autoscalingv2.ScalingActive) != "True/ValidMetricFound" || !contains(d.Status.Conditions[1].Message, "spec.metrics[1] (type Pods)") {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("bounds apply without metrics; zero disables", func(t *testing.T) {
		if d := Decide(Input{Spec: spec(cpuUtil(50)), Current: 12}, &State{}, now); d.Status.DesiredReplicas != 10 {
			t.Fatalf("%+v", d)
		}
		if d := Decide(Input{Spec: spec(cpuUtil(50)), Current: 0}, &State{}, now); d.Status.DesiredReplicas != 0 || cond(d.Status, autoscalingv2.ScalingActive) != "False/ScalingDisabled" {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("default metric is 80% CPU", func(t *testing.T) {
		d := Decide(Input{Spec: spec(), Current: 2, Pods: []Pod{pod("m1", "a", 100, 160), pod("m2", "b", 100, 160)}}, &State{}, now)
		if d.Status.DesiredReplicas != 4 {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("condition transition times kept while unchanged", func(t *testing.T) {
		st := &State{}
		d1 := Decide(Input{Spec: spec(cpuUtil(50)), Current: 2, Pods: two}, st, now)
		d2 := Decide(Input{Spec: spec(cpuUtil(50)), Current: 4, Pods: two, Previous: d1.Status}, st, now.Add(time.Minute))
		if !d2.Status.Conditions[1].LastTransitionTime.Time.Equal(now) {
			t.Fatalf("%+v", d2.Status.Conditions)
		}
	})
}

// FuzzReplicas: any usage, request, current count and target give a count >= 0 or an error,
// never a panic; a ratio within the tolerance keeps the current count.
func FuzzReplicas(f *testing.F) {
	f.Add(int64(100), int64(100), int32(2), int32(50), uint8(2))
	f.Add(int64(0), int64(0), int32(1), int32(1), uint8(1))
	f.Add(int64(1), int64(1<<40), int32(1000), int32(100), uint8(5))
	f.Fuzz(func(t *testing.T, req, use int64, current, target int32, n uint8) {
		if req < 0 || use < 0 || current < 0 || target <= 0 || req > 1<<40 || use > 1<<40 {
			return
		}
		var pods []Pod
		for i := range int(n % 20) {
			pods = append(pods, pod("m", fmt.Sprint(i), req, use))
		}
		rec, err := Replicas(cpuUtil(target), current, pods, tol, now)
		if err != nil {
			return
		}
		if rec.Replicas < 0 {
			t.Fatalf("negative replicas %d", rec.Replicas)
		}
	})
}

func TestSelect(t *testing.T) {
	gk := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	h := func(name, target string, desired int32, deleting bool) autoscalingv1alpha1.FederatedHPA {
		o := autoscalingv1alpha1.FederatedHPA{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec()}
		o.Spec.ScaleTargetRef.Name = target
		o.Status.DesiredReplicas = desired
		if deleting {
			o.DeletionTimestamp = &metav1.Time{Time: now}
		}
		return o
	}
	if a := Select([]autoscalingv1alpha1.FederatedHPA{h("b", "web", 4, false), h("a", "web", 0, false), h("c", "other", 9, false), h("d", "web", 7, true)}, gk, "web"); a == nil || a.Name != "b" || a.Replicas != 4 {
		t.Fatalf("%+v", a)
	}
	if a := Select([]autoscalingv1alpha1.FederatedHPA{h("b", "web", 4, false), h("a", "web", 3, false)}, gk, "web"); a.Name != "a" {
		t.Fatalf("first by name: %+v", a)
	}
	if a := Select(nil, gk, "web"); a != nil || a.Marker() != "" || a.Applies(3) {
		t.Fatal("none")
	}
	a := &Active{Name: "web", Replicas: 5}
	if !a.Applies(1) || a.Applies(0) || a.Marker() != "FederatedHPA web: 5 replicas" {
		t.Fatalf("%+v", a)
	}
}

func TestEffectiveBounds(t *testing.T) {
	at := func(min, max *int32, minutes int) autoscalingv1alpha1.SuccessfulExecution {
		ts := &metav1.Time{Time: now.Add(time.Duration(minutes) * time.Minute)}
		return autoscalingv1alpha1.SuccessfulExecution{ScheduleTime: ts, ExecutionTime: ts, AppliedMinReplicas: min, AppliedMaxReplicas: max}
	}
	cron := func(name, target string, hist ...autoscalingv1alpha1.ExecutionHistory) autoscalingv1alpha1.CronFederatedHPA {
		c := autoscalingv1alpha1.CronFederatedHPA{ObjectMeta: metav1.ObjectMeta{Name: name}}
		c.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{APIVersion: "autoscaling.karmada.io/v1alpha1", Kind: "FederatedHPA", Name: target}
		c.Status.ExecutionHistories = hist
		return c
	}
	s := spec() // 1..10
	if b := EffectiveBounds(s, "web", nil); b != (Bounds{Min: 1, Max: 10}) {
		t.Fatalf("spec's: %+v", b)
	}
	crons := []autoscalingv1alpha1.CronFederatedHPA{
		cron("night", "web", autoscalingv1alpha1.ExecutionHistory{RuleName: "down", SuccessfulExecutions: []autoscalingv1alpha1.SuccessfulExecution{at(nil, ptr.To[int32](3), 2)}}),
		cron("day", "web", autoscalingv1alpha1.ExecutionHistory{RuleName: "up", SuccessfulExecutions: []autoscalingv1alpha1.SuccessfulExecution{at(ptr.To[int32](5), ptr.To[int32](8), 1)}}),
		cron("other", "api", autoscalingv1alpha1.ExecutionHistory{RuleName: "up", SuccessfulExecutions: []autoscalingv1alpha1.SuccessfulExecution{at(ptr.To[int32](9), nil, 3)}}),
	}
	b := EffectiveBounds(s, "web", crons)
	if b.Min != 3 || b.Max != 3 || !contains(b.Note, "maxReplicas 3 from CronFederatedHPA night rule down") || !contains(b.Note, "minReplicas lowered") {
		t.Fatalf("newest max (3) wins over the older rule's 8, min 5 lowered to it: %+v", b)
	}
}
