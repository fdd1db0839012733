package scheduler

import (
	"math"
	"testing"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/scheduler/estimate"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

func TestAvailableReplicas(t *testing.T) {
	allocating := func(m map[string]string) st.ClusterOption {
		return func(c *clusterv1alpha1.Cluster) { c.Status.ResourceSummary.Allocating = st.List(m) }
	}
	tests := []struct {
		name    string
		cluster *clusterv1alpha1.Cluster
		request map[string]string
		want    int32
	}{
		{"no resource summary: nothing known, nothing available", st.NewCluster("c"), map[string]string{"cpu": "1"}, 0},
		{"no resource summary, no request", st.NewCluster("c"), nil, 0},
		{"cpu in millis", st.NewCluster("c", st.Resources(map[string]string{"cpu": "4"}, map[string]string{"cpu": "1500m"})), map[string]string{"cpu": "250m"}, 10},
		{"allocating counts as used", st.NewCluster("c", st.Resources(map[string]string{"cpu": "4"}, map[string]string{"cpu": "1"}), allocating(map[string]string{"cpu": "1"})), map[string]string{"cpu": "1"}, 2},
		{"the scarcest resource wins", st.NewCluster("c", st.Resources(map[string]string{"cpu": "16", "memory": "4Gi"}, nil)), map[string]string{"cpu": "1", "memory": "1Gi"}, 4},
		{"pods count one per replica", st.NewCluster("c", st.Resources(map[string]string{"cpu": "16", "pods": "110"}, map[string]string{"pods": "108"})), map[string]string{"cpu": "1"}, 2},
		{"no request: pods limit", st.NewCluster("c", st.Resources(map[string]string{"pods": "10"}, nil)), nil, 10},
		{"no request, no pods: unbounded", st.NewCluster("c", st.Resources(map[string]string{"cpu": "1"}, nil)), nil, math.MaxInt32},
		{"extended resource not allocatable", st.NewCluster("c", st.Resources(map[string]string{"cpu": "16"}, nil)), map[string]string{"cpu": "1", "nvidia.com/gpu": "1"}, 0},
		{"extended resource free", st.NewCluster("c", st.Resources(map[string]string{"cpu": "16", "nvidia.com/gpu": "8"}, map[string]string{"nvidia.com/gpu": "5"})), map[string]string{"nvidia.com/gpu": "1"}, 3},
		{"overcommitted", st.NewCluster("c", st.Resources(map[string]string{"cpu": "4"}, map[string]string{"cpu": "5"})), map[string]string{"cpu": "1"}, 0},
		{"zero request is ignored", st.NewCluster("c", st.Resources(map[string]string{"pods": "3"}, nil)), map[string]string{"cpu": "0"}, 3},
		{"huge memory falls back to whole units", st.NewCluster("c", st.Resources(map[string]string{"memory": "4Ei"}, nil)), map[string]string{"memory": "1Ei"}, 4},
		{"capped at MaxInt32", st.NewCluster("c", st.Resources(map[string]string{"cpu": "8Ei"}, nil)), map[string]string{"cpu": "1m"}, math.MaxInt32},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := AvailableReplicas(tt.cluster, st.List(tt.request)); got != tt.want {
				t.Errorf("AvailableReplicas() = %d, want %d", got, tt.want)
			}
		})
	}
}

// A member with no Node the status could read (apiserver-only, as the soak's and the bench's
// members are) reports an empty summary: its room is unknown, so static weights and Duplicated
// placements are not refused for want of room. The soak failed with every such binding
// Unschedulable ("had no room for one replica on its nodes") before.
func TestEstimateReplicasWithoutNodes(t *testing.T) {
	empty := func(c *clusterv1alpha1.Cluster) { c.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{} }
	request := st.List(map[string]string{"cpu": "10m", "memory": "16Mi"})
	if n, known := EstimateReplicas(st.NewCluster("c", empty), request, estimate.New(nil), nil); known {
		t.Errorf("no allocatable: EstimateReplicas() = %d, known; want unknown", n)
	}
	full := st.NewCluster("c", st.Resources(map[string]string{"cpu": "4"}, map[string]string{"cpu": "4"}))
	if n, known := EstimateReplicas(full, request, estimate.New(nil), nil); !known || n != 0 {
		t.Errorf("full nodes: EstimateReplicas() = %d, %v; want 0, known", n, known)
	}
}

// The Pods a member counts as waiting for a Node are in its summed allocating, but not yet in
// any node group's free amounts. A 6-CPU Pod waiting on a member whose only node that holds 6
// CPUs is free takes that node: the summed room (12 - 6 CPUs) still allows one more 6-CPU
// replica, the nodes do not. Before, the estimate offered the large node twice.
func TestEstimateReplicasCountsPendingPods(t *testing.T) {
	c := st.NewCluster("c", func(c *clusterv1alpha1.Cluster) {
		c.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{
			Allocatable: st.List(map[string]string{"cpu": "12", "pods": "220"}),
			Allocating:  st.List(map[string]string{"cpu": "6", "pods": "1"}),
			NodeGroups: []clusterv1alpha1.NodeGroup{
				{Count: 1, Free: st.List(map[string]string{"cpu": "8", "pods": "110"})},
				{Count: 4, Free: st.List(map[string]string{"cpu": "1", "pods": "110"})},
			},
		}
	})
	request := st.List(map[string]string{"cpu": "6"})
	e := estimate.New(&workv1alpha2.ReplicaRequirements{ResourceRequest: request})
	if n, known := EstimateReplicas(c, request, e, nil); !known || n != 0 {
		t.Errorf("a 6-CPU Pod waiting for the only large node: EstimateReplicas() = %d, %v; want 0, known", n, known)
	}
	// 1-CPU replicas: the waiting Pod takes 6 of the large node's 8; 2 there and 4 on the small.
	small := st.List(map[string]string{"cpu": "1"})
	e = estimate.New(&workv1alpha2.ReplicaRequirements{ResourceRequest: small})
	if n, known := EstimateReplicas(c, small, e, nil); !known || n != 6 {
		t.Errorf("1-CPU replicas: EstimateReplicas() = %d, %v; want 6, known", n, known)
	}
}
