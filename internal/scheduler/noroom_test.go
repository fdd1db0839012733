package scheduler

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

// The descheduler takes replicas that stay unschedulable off a cluster and names it in
// NoRoomOn: the cycle places them on the others, whatever the (stale) estimate says of that
// cluster, and keeps every replica the others hold.
func TestScheduleNoRoomOn(t *testing.T) {
	clusters := []*clusterv1alpha1.Cluster{
		st.NewCluster("full", cpu("16", "0")), // says 16 CPUs are free: stale
		st.NewCluster("m2", cpu("4", "1")),
		st.NewCluster("m3", cpu("2", "0")),
	}
	tests := []struct {
		name   string
		pref   *policyv1alpha1.ReplicaSchedulingStrategy
		placed []workv1alpha2.TargetCluster
		noRoom map[string]bool
		want   []workv1alpha2.TargetCluster
	}{{
		name:   "without the hint the stale estimate takes them back",
		pref:   dynamic(),
		placed: targets("full", 2, "m2", 1),
		want:   targets("full", 4, "m2", 2),
	}, {
		name:   "dynamic weights: the others share them by their room",
		pref:   dynamic(),
		placed: targets("full", 2, "m2", 1),
		noRoom: map[string]bool{"full": true},
		want:   targets("full", 2, "m2", 3, "m3", 1),
	}, {
		name:   "aggregated: the cluster that holds replicas and has room first",
		pref:   divided(policyv1alpha1.ReplicaDivisionPreferenceAggregated, nil),
		placed: targets("full", 2, "m2", 1),
		noRoom: map[string]bool{"full": true},
		want:   targets("full", 2, "m2", 4),
	}, {
		name:   "a cluster left with none is not chosen again",
		pref:   dynamic(),
		placed: targets("m2", 1),
		noRoom: map[string]bool{"full": true},
		want:   targets("m2", 4, "m3", 2),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := withRequest(st.Deployment(6), map[string]string{"cpu": "1"})
			spec.Placement = &policyv1alpha1.Placement{ReplicaScheduling: tt.pref}
			spec.Clusters = tt.placed
			s, err := New(Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Schedule(Input{Spec: spec, NoRoomOn: tt.noRoom}, clusters)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got.Clusters); diff != "" {
				t.Errorf("clusters (-want +got):\n%s", diff)
			}
		})
	}
}
