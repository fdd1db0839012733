package failover

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func taint(key string, effect corev1.TaintEffect, added time.Time) corev1.Taint {
	return corev1.Taint{Key: key, Effect: effect, TimeAdded: &metav1.Time{Time: added}}
}

func TestNoExecuteEviction(t *testing.T) {
	notReady := taint(wellknown.TaintClusterNotReady, corev1.TaintEffectNoExecute, t0)
	tol := func(key string, seconds *int64) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds}
	}
	tests := []struct {
		name        string
		taints      []corev1.Taint
		tolerations []corev1.Toleration
		wantOK      bool
		wantAt      time.Time
	}{
		{"no taints", nil, nil, false, time.Time{}},
		{"NoSchedule is not looked at", []corev1.Taint{taint("x", corev1.TaintEffectNoSchedule, t0)}, nil, false, time.Time{}},
		{"untolerated: at once", []corev1.Taint{notReady}, nil, true, time.Time{}},
		{"tolerated for ever", []corev1.Taint{notReady}, []corev1.Toleration{tol(wellknown.TaintClusterNotReady, nil)}, false, time.Time{}},
		{"tolerated 10 s", []corev1.Taint{notReady}, []corev1.Toleration{tol(wellknown.TaintClusterNotReady, ptr.To[int64](10))}, true, t0.Add(10 * time.Second)},
		{"the fewest seconds of matching tolerations", []corev1.Taint{notReady},
			[]corev1.Toleration{tol(wellknown.TaintClusterNotReady, ptr.To[int64](60)), tol("", ptr.To[int64](20))}, true, t0.Add(20 * time.Second)},
		{"negative seconds: at the taint's time", []corev1.Taint{notReady}, []corev1.Toleration{tol(wellknown.TaintClusterNotReady, ptr.To[int64](-5))}, true, t0},
		{"the earliest of two taints", []corev1.Taint{notReady, taint("drain", corev1.TaintEffectNoExecute, t0.Add(time.Minute))},
			[]corev1.Toleration{tol(wellknown.TaintClusterNotReady, ptr.To[int64](300)), tol("drain", ptr.To[int64](1))}, true, t0.Add(61 * time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, ok := NoExecuteEviction(tt.taints, tt.tolerations, t0.Add(time.Hour))
			if ok != tt.wantOK || !ev.At.Equal(tt.wantAt) {
				t.Errorf("got (%v, %v), want (%v, %v)", ev.At, ok, tt.wantAt, tt.wantOK)
			}
		})
	}
	// A taint without TimeAdded counts from when it is seen.
	seen := t0.Add(time.Hour)
	ev, ok := NoExecuteEviction([]corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoExecute}}, []corev1.Toleration{tol("k", ptr.To[int64](5))}, seen)
	if !ok || !ev.At.Equal(seen.Add(5*time.Second)) {
		t.Errorf("no TimeAdded: got %v %v", ev.At, ok)
	}
}

func TestTolerationsDefaults(t *testing.T) {
	got := Tolerations(nil, 300, 200)
	want := []corev1.Toleration{
		{Key: wellknown.TaintClusterNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
		{Key: wellknown.TaintClusterUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](200)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	// The placement's own toleration of a system taint wins; a negative default adds none.
	own := []corev1.Toleration{{Key: wellknown.TaintClusterUnreachable, Operator: corev1.TolerationOpExists, TolerationSeconds: ptr.To[int64](10)}}
	got = Tolerations(own, -1, 300)
	if diff := cmp.Diff(own, got); diff != "" {
		t.Errorf("own toleration (-want +got):\n%s", diff)
	}
	if len(own) != 1 {
		t.Error("the input was modified")
	}
}

func spec3() *workv1alpha2.ResourceBindingSpec {
	return &workv1alpha2.ResourceBindingSpec{Replicas: 6, Clusters: []workv1alpha2.TargetCluster{
		{Name: "m1", Replicas: 2}, {Name: "m2", Replicas: 2}, {Name: "m3", Replicas: 2}}}
}

func TestEvict(t *testing.T) {
	s := spec3()
	orig := s.Clusters
	if !Evict(s, Leave{Cluster: "m2", Producer: ProducerTaintManager, Now: t0}) {
		t.Fatal("Evict of a scheduled cluster returned false")
	}
	if diff := cmp.Diff([]workv1alpha2.TargetCluster{{Name: "m1", Replicas: 2}, {Name: "m3", Replicas: 2}}, s.Clusters); diff != "" {
		t.Errorf("clusters (-want +got):\n%s", diff)
	}
	if len(orig) != 3 {
		t.Error("Evict modified the clusters slice it was given")
	}
	want := []workv1alpha2.GracefulEvictionTask{{FromCluster: "m2", PurgeMode: policyv1alpha1.PurgeModeGracefully, Replicas: ptr.To[int32](2),
		Producer: ProducerTaintManager, ClustersBeforeFailover: []string{"m1", "m2", "m3"}, CreationTimestamp: &metav1.Time{Time: t0}}}
	if diff := cmp.Diff(want, s.GracefulEvictionTasks); diff != "" {
		t.Errorf("tasks (-want +got):\n%s", diff)
	}
	if Evict(s, Leave{Cluster: "m2", Now: t0}) {
		t.Error("Evict of a cluster no longer scheduled returned true")
	}
}

func TestReview(t *testing.T) {
	evicted := func(mode policyv1alpha1.PurgeMode, mut ...func(*workv1alpha2.ResourceBindingSpec)) *workv1alpha2.ResourceBindingSpec {
		s := spec3()
		Evict(s, Leave{Cluster: "m3", PurgeMode: mode, Now: t0})
		for _, m := range mut {
			m(s)
		}
		return s
	}
	allHealthy := map[string]bool{"m1": true, "m2": true}
	view := func(p Placement, healthy map[string]bool, now time.Duration) View {
		return View{Placement: p, Healthy: healthy, Now: t0.Add(now), GracePeriod: DefaultGracePeriod}
	}
	tests := []struct {
		name     string
		spec     *workv1alpha2.ResourceBindingSpec
		view     View
		done     bool
		blocked  bool
		why      string
		nextWant time.Time
	}{
		{"waits for the scheduler", evicted(""), view(PlacementPending, allHealthy, time.Minute), false, false, "to be placed elsewhere", t0.Add(10 * time.Minute)},
		{"waits for health", evicted(""), view(PlacementDone, map[string]bool{"m1": true}, time.Minute), false, false, "to be healthy", t0.Add(10 * time.Minute)},
		{"done when healthy", evicted(""), view(PlacementDone, allHealthy, time.Minute), true, false, "healthy on m1, m2", time.Time{}},
		{"Directly: done when healthy too", evicted(policyv1alpha1.PurgeModeDirectly), view(PlacementDone, allHealthy, 0), true, false, "healthy", time.Time{}},
		{"done when the grace period ends", evicted(""), view(PlacementDone, nil, 10*time.Minute), true, false, "grace period ended", time.Time{}},
		{"task grace period wins", evicted("", func(s *workv1alpha2.ResourceBindingSpec) {
			s.GracefulEvictionTasks[0].GracePeriodSeconds = ptr.To[int32](30)
		}),
			view(PlacementDone, nil, 30*time.Second), true, false, "grace period ended", time.Time{}},
		{"blocked when nothing else fits", evicted(""), view(PlacementFailed, nil, time.Hour), false, true, "no other cluster fits", time.Time{}},
		{"done when nothing else fits and the cluster recovered", evicted(""),
			View{Placement: PlacementFailed, Recovered: map[string]bool{"m3": true}, Now: t0.Add(time.Second), GracePeriod: DefaultGracePeriod}, true, false, "recovered", time.Time{}},
		{"Never stays", evicted(policyv1alpha1.PurgeModeNever), view(PlacementDone, allHealthy, time.Hour), false, false, "purgeMode is Never", time.Time{}},
		{"suppressDeletion stays", evicted("", func(s *workv1alpha2.ResourceBindingSpec) { s.GracefulEvictionTasks[0].SuppressDeletion = ptr.To(true) }),
			view(PlacementDone, allHealthy, time.Hour), false, false, "suppressDeletion", time.Time{}},
		{"done when the cluster is scheduled again", evicted(policyv1alpha1.PurgeModeNever, func(s *workv1alpha2.ResourceBindingSpec) {
			s.Clusters = append(s.Clusters, workv1alpha2.TargetCluster{Name: "m3", Replicas: 2})
		}), view(PlacementPending, nil, 0), true, false, "scheduled again", time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			outcomes, remaining, next := Review(tt.spec, tt.view)
			if len(outcomes) != 1 {
				t.Fatalf("%d outcomes, want 1", len(outcomes))
			}
			o := outcomes[0]
			if o.Done != tt.done || o.Blocked != tt.blocked || !strings.Contains(o.Why, tt.why) {
				t.Errorf("outcome %+v, want done=%v blocked=%v why~%q", o, tt.done, tt.blocked, tt.why)
			}
			if (len(remaining) == 0) != tt.done {
				t.Errorf("remaining %v with done=%v", remaining, tt.done)
			}
			if !tt.done && !tt.blocked && tt.nextWant.IsZero() {
				return // Never and suppressDeletion: when it looks again does not matter
			}
			if !next.Equal(tt.nextWant) {
				t.Errorf("next %v, want %v", next, tt.nextWant)
			}
		})
	}
}

func TestPreservedLabels(t *testing.T) {
	s := spec3()
	Evict(s, Leave{Cluster: "m3", Preserved: map[string]string{"app.example/job-id": "42"}, Now: t0})
	s.Clusters = append(s.Clusters, workv1alpha2.TargetCluster{Name: "m4", Replicas: 2})
	if got := PreservedLabels(s, "m4"); !cmp.Equal(got, map[string]string{"app.example/job-id": "42"}) {
		t.Errorf("new cluster m4 got %v", got)
	}
	if got := PreservedLabels(s, "m1"); got != nil {
		t.Errorf("m1, there before the failover, got %v", got)
	}
}

func TestPreserveState(t *testing.T) {
	status := &runtime.RawExtension{Raw: []byte(`{"jobStatus":{"jobID":"abc-123","state":"RUNNING"},"replicas":3,"list":[1,2]}`)}
	rule := func(alias, path string) []policyv1alpha1.StatePreservationRule {
		return []policyv1alpha1.StatePreservationRule{{AliasLabelName: alias, JSONPath: path}}
	}
	got, err := PreserveState(rule("flink/job-id", "{ .jobStatus.jobID }"), status)
	if err != nil || got["flink/job-id"] != "abc-123" {
		t.Errorf("got %v, %v", got, err)
	}
	got, err = PreserveState(rule("replicas", ".replicas"), status)
	if err != nil || got["replicas"] != "3" {
		t.Errorf("without braces: got %v, %v", got, err)
	}
	for _, tt := range []struct {
		name   string
		rules  []policyv1alpha1.StatePreservationRule
		status *runtime.RawExtension
		want   string
	}{
		{"missing", rule("a", "{.nope}"), status, "is not found"},
		{"several", rule("a", "{.list[*]}"), status, "selects 2 values"},
		{"bad path", rule("a", "{.jobStatus["), status, "jsonPath"},
		{"bad label key", rule("not a key!", "{.replicas}"), status, "not a label key"},
		{"bad label value", rule("a", "{.jobStatus}"), status, "not a label value"},
		{"no status", rule("a", "{.replicas}"), nil, "no status"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := PreserveState(tt.rules, tt.status)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func FuzzPreserveState(f *testing.F) {
	f.Add("{.jobStatus.jobID}", `{"jobStatus":{"jobID":"x"}}`)
	f.Add("{range .items[*]}{.name}{end}", `{"items":[{"name":"a"}]}`)
	f.Add("{.a[?(@.b==\"c\")].d}", `{"a":[{"b":"c","d":1}]}`)
	f.Fuzz(func(t *testing.T, path, status string) {
		// Any path and any status: a value or an error, never a panic.
		_, _ = PreserveState([]policyv1alpha1.StatePreservationRule{{AliasLabelName: "k", JSONPath: path}}, &runtime.RawExtension{Raw: []byte(status)})
	})
}
