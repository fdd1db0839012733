package federatedquota

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
	"github.com/flotilla-io/flotilla/pkg/scheduler/framework"
)

func TestExceeds(t *testing.T) {
	tests := []struct {
		name                       string
		overall, requested, adding map[string]string
		want                       string
	}{{
		name:    "within",
		overall: map[string]string{"cpu": "4"}, requested: map[string]string{"cpu": "1"}, adding: map[string]string{"cpu": "3"},
	}, {
		name:    "exactly at the limit fits",
		overall: map[string]string{"cpu": "4", "memory": "4Gi"}, requested: map[string]string{"cpu": "2", "memory": "2Gi"},
		adding: map[string]string{"cpu": "2", "memory": "2Gi"},
	}, {
		name:    "over by a fraction of a core",
		overall: map[string]string{"cpu": "2"}, requested: map[string]string{"cpu": "1"}, adding: map[string]string{"cpu": "1500m"},
		want: "cpu over by 500m (2500m requested, limit 2)",
	}, {
		name:    "requests.* names the same request; several resources sorted",
		overall: map[string]string{"requests.memory": "1Gi", "cpu": "1"}, adding: map[string]string{"cpu": "2", "memory": "1536Mi"},
		want: "cpu over by 1 (2 requested, limit 1); requests.memory over by 512Mi (1536Mi requested, limit 1Gi)",
	}, {
		name:    "pods counts replicas",
		overall: map[string]string{"pods": "10"}, requested: map[string]string{"pods": "8"}, adding: map[string]string{"pods": "3"},
		want: "pods over by 1 (11 requested, limit 10)",
	}, {
		name:    "extended resources",
		overall: map[string]string{"requests.nvidia.com/gpu": "2"}, adding: map[string]string{"nvidia.com/gpu": "3"},
		want: "requests.nvidia.com/gpu over by 1 (3 requested, limit 2)",
	}, {
		name:    "limits, counts and storage are the members' business",
		overall: map[string]string{"limits.cpu": "1", "count/deployments.apps": "1", "requests.storage": "1Gi", "services": "0"},
		adding:  map[string]string{"cpu": "5", "storage": "5Gi", "services": "2"},
	}, {
		name:    "asking for none of an exceeded resource fits",
		overall: map[string]string{"cpu": "1", "memory": "1Gi"}, requested: map[string]string{"cpu": "5"}, adding: map[string]string{"memory": "1Mi"},
	}, {
		name:    "a resource the others do not request yet",
		overall: map[string]string{"memory": "1Gi"}, requested: map[string]string{"cpu": "5"}, adding: map[string]string{"memory": "2Gi"},
		want: "memory over by 1Gi (2Gi requested, limit 1Gi)",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Describe(Exceeds(st.List(tt.overall), st.List(tt.requested), st.List(tt.adding)))
			if got != tt.want {
				t.Errorf("Exceeds() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRequestAndUsage(t *testing.T) {
	req := &workv1alpha2.ReplicaRequirements{ResourceRequest: st.List(map[string]string{"cpu": "250m", "memory": "100Mi"})}
	tests := []struct {
		name string
		got  corev1.ResourceList
		want map[string]string
	}{
		{"no replicas", Request(0, req), nil},
		{"replicas without requirements count pods", Request(3, nil), map[string]string{"pods": "3"}},
		{"replicas times requirements", Request(6, req), map[string]string{"pods": "6", "cpu": "1500m", "memory": "600Mi"}},
		{"usage: replicas of each cluster", Usage(&workv1alpha2.ResourceBindingSpec{ReplicaRequirements: req,
			Clusters: []workv1alpha2.TargetCluster{{Name: "m1", Replicas: 3}, {Name: "m2", Replicas: 1}}}),
			map[string]string{"pods": "4", "cpu": "1", "memory": "400Mi"}},
		{"usage: unscheduled", Usage(&workv1alpha2.ResourceBindingSpec{Replicas: 5, ReplicaRequirements: req}), nil},
		{"sum", Add(Request(2, req), Request(2, req)), map[string]string{"pods": "4", "cpu": "1", "memory": "400Mi"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(canonical(st.List(tt.want)), canonical(tt.got)); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func canonical(l corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		out[string(k)] = v.String()
	}
	return out
}

func TestFilter(t *testing.T) {
	m1, m2 := st.NewCluster("m1"), st.NewCluster("m2")
	spec := st.Deployment(4)
	spec.ReplicaRequirements = &workv1alpha2.ReplicaRequirements{ResourceRequest: st.List(map[string]string{"cpu": "500m"})}
	tests := []struct {
		name   string
		quotas []framework.NamespaceQuota
		want   map[string]string
	}{{
		name: "no quota",
		want: map[string]string{"m1": "", "m2": ""},
	}, {
		name:   "within the quota",
		quotas: []framework.NamespaceQuota{{Name: "team", Overall: st.List(map[string]string{"cpu": "3"}), Requested: st.List(map[string]string{"cpu": "1"})}},
		want:   map[string]string{"m1": "", "m2": ""},
	}, {
		name: "over the second quota: no cluster fits, the reason says by how much",
		quotas: []framework.NamespaceQuota{
			{Name: "roomy", Overall: st.List(map[string]string{"cpu": "100"})},
			{Name: "team", Overall: st.List(map[string]string{"cpu": "2", "pods": "10"}), Requested: st.List(map[string]string{"cpu": "1", "pods": "1"})},
		},
		want: map[string]string{
			"m1": "would exceed the overall limit of FederatedResourceQuota team: cpu over by 1 (3 requested, limit 2)",
			"m2": "would exceed the overall limit of FederatedResourceQuota team: cpu over by 1 (3 requested, limit 2)",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := st.State(spec)
			state.Quotas = tt.quotas
			got, err := st.Reasons(New(), state, m1, m2)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("reasons mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
