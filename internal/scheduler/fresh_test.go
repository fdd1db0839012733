package scheduler

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

// scheduledInput is a Divided (equal weights) binding of 6 replicas scheduled at t0 on the
// given targets, with its applied-placement annotation in line with its placement.
func scheduledInput(t *testing.T, t0 time.Time, current []workv1alpha2.TargetCluster) Input {
	t.Helper()
	spec := st.Deployment(6)
	spec.Placement = &policyv1alpha1.Placement{ReplicaScheduling: divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted, nil)}
	spec.Clusters = current
	applied, err := AppliedPlacement(spec.Placement)
	if err != nil {
		t.Fatal(err)
	}
	return Input{
		Spec:        spec,
		Status:      &workv1alpha2.ResourceBindingStatus{LastScheduledTime: &metav1.Time{Time: t0}},
		Annotations: map[string]string{wellknown.AppliedPlacementAnnotation: applied},
	}
}

func mustSchedule(t *testing.T, s *Scheduler, in Input, clusters []*clusterv1alpha1.Cluster) []workv1alpha2.TargetCluster {
	t.Helper()
	r, err := s.Schedule(in, clusters)
	if err != nil {
		t.Fatalf("Schedule: %v", err)
	}
	return r.Clusters
}

// A member that comes back does not pull a Divided binding's replicas back (no flapping): the
// binding does not need scheduling, so nothing moves. A reschedule triggered by spec.rescheduleTriggeredAt (a WorkloadRebalancer) re-spreads them.
func TestFreshRespreadsOnlyAfterRebalance(t *testing.T) {
	s := newScheduler(t, Options{})
	t0 := time.Date(2026, 11, 23, 23, 0, 0, 0, time.UTC)
	clusters := []*clusterv1alpha1.Cluster{st.NewCluster("m1"), st.NewCluster("m2"), st.NewCluster("m3")} // m3 came back
	in := scheduledInput(t, t0, targets("m1", 3, "m2", 3))

	if need, why := NeedsSchedule(in, clusters); need {
		t.Fatalf("NeedsSchedule = true (%s) for a member that came back; want false", why)
	}
	if RescheduleTriggered(in) {
		t.Fatal("RescheduleTriggered = true without spec.rescheduleTriggeredAt")
	}

	// A trigger older than the last scheduling is spent.
	in.Spec.RescheduleTriggeredAt = &metav1.Time{Time: t0.Add(-time.Minute)}
	if need, _ := NeedsSchedule(in, clusters); need || RescheduleTriggered(in) {
		t.Fatal("a trigger older than lastScheduledTime asks for a reschedule")
	}

	in.Spec.RescheduleTriggeredAt = &metav1.Time{Time: t0.Add(time.Minute)}
	need, why := NeedsSchedule(in, clusters)
	if !need || why != "reschedule triggered" || !RescheduleTriggered(in) {
		t.Fatalf("NeedsSchedule = %v (%q), RescheduleTriggered = %v; want a triggered reschedule", need, why, RescheduleTriggered(in))
	}
	before := in.Spec.DeepCopy()
	in.Fresh = true
	if diff := cmp.Diff(targets("m1", 2, "m2", 2, "m3", 2), mustSchedule(t, s, in, clusters)); diff != "" {
		t.Errorf("fresh reschedule (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, in.Spec); diff != "" {
		t.Errorf("Schedule modified the input spec (-before +after):\n%s", diff)
	}
}

// A NoSchedule taint (cordon) keeps the replicas already on the cluster; a fresh reschedule
// treats the cluster as any other it is not on, and places nothing there.
func TestFreshLeavesCordonedCluster(t *testing.T) {
	s := newScheduler(t, Options{})
	cordoned := st.NewCluster("m3", st.Taint("cluster.flotilla.io/cordoned", "", corev1.TaintEffectNoSchedule))
	clusters := []*clusterv1alpha1.Cluster{st.NewCluster("m1"), st.NewCluster("m2"), cordoned}
	in := scheduledInput(t, time.Date(2026, 11, 23, 23, 0, 0, 0, time.UTC), targets("m1", 2, "m2", 2, "m3", 2))

	if need, why := NeedsSchedule(in, clusters); need {
		t.Fatalf("NeedsSchedule = true (%s) for a NoSchedule taint; want false", why)
	}
	if diff := cmp.Diff(targets("m1", 2, "m2", 2, "m3", 2), mustSchedule(t, s, in, clusters)); diff != "" {
		t.Errorf("ordinary reschedule (-want +got):\n%s", diff)
	}
	in.Fresh = true
	if diff := cmp.Diff(targets("m1", 3, "m2", 3), mustSchedule(t, s, in, clusters)); diff != "" {
		t.Errorf("fresh reschedule (-want +got):\n%s", diff)
	}
}

// A fresh reschedule starts from the first clusterAffinities group, as a new binding does.
func TestFreshStartsFromFirstAffinityGroup(t *testing.T) {
	s := newScheduler(t, Options{})
	clusters := []*clusterv1alpha1.Cluster{st.NewCluster("primary"), st.NewCluster("backup")}
	spec := st.Deployment(2)
	spec.Placement = &policyv1alpha1.Placement{ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{
		{AffinityName: "primary", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"primary"}}},
		{AffinityName: "backup", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"backup"}}},
	}}
	spec.Clusters = targets("backup", 2)
	in := Input{Spec: spec, Status: &workv1alpha2.ResourceBindingStatus{SchedulerObservedAffinityName: "backup"}}

	r, err := s.Schedule(in, clusters)
	if err != nil || r.AffinityName != "backup" {
		t.Fatalf("ordinary reschedule = %+v, %v; want to stay in group backup", r, err)
	}
	in.Fresh = true
	r, err = s.Schedule(in, clusters)
	if err != nil {
		t.Fatal(err)
	}
	if r.AffinityName != "primary" {
		t.Errorf("fresh reschedule chose group %q; want primary", r.AffinityName)
	}
	if diff := cmp.Diff(targets("primary", 2), r.Clusters); diff != "" {
		t.Errorf("fresh reschedule (-want +got):\n%s", diff)
	}
}
