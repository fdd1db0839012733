package workloadaffinity

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
	"github.com/flotilla-io/flotilla/pkg/scheduler/framework"
)

func TestFilter(t *testing.T) {
	m1, m2, m3 := st.NewCluster("m1"), st.NewCluster("m2"), st.NewCluster("m3")
	tests := []struct {
		name  string
		peers framework.WorkloadPeers
		want  map[string]string
	}{{
		name: "no peers: the group's first workload goes anywhere",
		want: map[string]string{"m1": "", "m2": "", "m3": ""},
	}, {
		name:  "anti-affinity: not where a peer is",
		peers: framework.WorkloadPeers{AntiAffinity: []string{"m1", "m3"}},
		want:  map[string]string{"m1": ReasonAntiAffinity, "m2": "", "m3": ReasonAntiAffinity},
	}, {
		name:  "affinity: only where the peer is",
		peers: framework.WorkloadPeers{Affinity: [][]string{{"m2", "m3"}}},
		want:  map[string]string{"m1": ReasonAffinity, "m2": "", "m3": ""},
	}, {
		name:  "affinity: where every peer is",
		peers: framework.WorkloadPeers{Affinity: [][]string{{"m2", "m3"}, {"m3", "m3"}}},
		want:  map[string]string{"m1": ReasonAffinity, "m2": ReasonAffinity, "m3": ""},
	}, {
		name:  "both: with the one group, apart from the other",
		peers: framework.WorkloadPeers{Affinity: [][]string{{"m1", "m2"}}, AntiAffinity: []string{"m2"}},
		want:  map[string]string{"m1": "", "m2": ReasonAntiAffinity, "m3": ReasonAffinity},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := st.State(st.Deployment(1))
			state.Peers = tt.peers
			got, err := st.Reasons(New(), state, m1, m2, m3)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("reasons (-want +got):\n%s", diff)
			}
		})
	}
}
