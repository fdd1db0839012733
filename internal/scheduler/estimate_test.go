package scheduler

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/scheduler/estimate"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

// TestScheduleByNodes: every division mode honours what fits node by node.
func TestScheduleByNodes(t *testing.T) {
	// "edge": 20 free CPUs on 1-CPU nodes; "big": 2 nodes with 16 free CPUs each; "gpu": 2
	// GPU nodes; "unreported": no resourceSummary.
	clusters := func() []*clusterv1alpha1.Cluster {
		return []*clusterv1alpha1.Cluster{
			st.NewCluster("edge", st.Nodes(20, map[string]string{"cpu": "1", "pods": "110"})),
			st.NewCluster("big", st.Nodes(2, map[string]string{"cpu": "16", "pods": "110"})),
			st.NewCluster("gpu", st.Nodes(2, map[string]string{"cpu": "8", "pods": "110", "nvidia.com/gpu": "2"})),
		}
	}
	sixCPU := func(replicas int32, rs *policyv1alpha1.ReplicaSchedulingStrategy) *workv1alpha2.ResourceBindingSpec {
		spec := withRequest(st.Deployment(replicas), map[string]string{"cpu": "6"})
		spec.Placement = &policyv1alpha1.Placement{ReplicaScheduling: rs}
		return spec
	}
	gpus := func(replicas int32) *workv1alpha2.ResourceBindingSpec {
		spec := withRequest(st.Deployment(replicas), map[string]string{"cpu": "1", "nvidia.com/gpu": "1"})
		spec.Placement = &policyv1alpha1.Placement{ReplicaScheduling: dynamic()}
		return spec
	}
	tests := []struct {
		name    string
		spec    *workv1alpha2.ResourceBindingSpec
		held    map[string][]estimate.Held
		want    []workv1alpha2.TargetCluster
		wantErr string
	}{
		// By summed free CPUs, edge (20) would get most of these; by nodes it holds none.
		{name: "dynamic weights: only where 6-CPU replicas fit", spec: sixCPU(6, dynamic()), want: targets("big", 4, "gpu", 2)},
		{name: "aggregated", spec: sixCPU(5, divided(policyv1alpha1.ReplicaDivisionPreferenceAggregated, nil)), want: targets("big", 4, "gpu", 1)},
		{name: "static weights are capped by the room", spec: sixCPU(6, staticWeights([]string{"big"}, 5, []string{"gpu"}, 1)), want: targets("big", 4, "gpu", 2)},
		{name: "static weights, not enough room", spec: sixCPU(7, staticWeights([]string{"big"}, 1, []string{"gpu"}, 1)),
			wantErr: "2/3 clusters are available: 1 had no room for one replica on its nodes; insufficient capacity: 7 replicas requested, the feasible clusters can hold 6"},
		{name: "duplicated: only where all replicas fit", spec: sixCPU(3, nil), want: targets("big", 3)},
		{name: "GPUs only where they are", spec: gpus(3), want: targets("gpu", 3)},
		{name: "held placements take the room first", spec: sixCPU(3, dynamic()),
			held: map[string][]estimate.Held{"big": {{Replicas: 3, Request: st.List(map[string]string{"cpu": "6"})}}}, want: targets("big", 1, "gpu", 2)},
	}
	s := newScheduler(t, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Schedule(Input{Spec: tt.spec, Held: tt.held}, clusters())
			if tt.wantErr != "" {
				var u *UnschedulableError
				if !errors.As(err, &u) || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got.Clusters); diff != "" {
				t.Errorf("clusters (-want +got):\n%s", diff)
			}
		})
	}
}
