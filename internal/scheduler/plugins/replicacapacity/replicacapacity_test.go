package replicacapacity

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

func TestFilter(t *testing.T) {
	rooms := map[string]int32{"empty": 0, "two": 2, "five": 5}
	room := func(c *clusterv1alpha1.Cluster) (int32, bool) {
		r, ok := rooms[c.Name]
		return r, ok
	}
	clusters := []*clusterv1alpha1.Cluster{st.NewCluster("empty"), st.NewCluster("two"), st.NewCluster("five"), st.NewCluster("unreported")}
	divided := &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided}
	tests := []struct {
		name      string
		replicas  int32
		rs        *policyv1alpha1.ReplicaSchedulingStrategy
		scheduled []workv1alpha2.TargetCluster
		want      map[string]string
	}{
		{name: "divided needs one", replicas: 4, rs: divided, want: map[string]string{"empty": ReasonNoRoom}},
		{name: "duplicated needs all", replicas: 4, want: map[string]string{
			"empty": "had room for fewer than 4 replicas on its nodes", "two": "had room for fewer than 4 replicas on its nodes"}},
		{name: "replicas already there count", replicas: 4, scheduled: []workv1alpha2.TargetCluster{{Name: "two", Replicas: 2}, {Name: "empty", Replicas: 1}},
			want: map[string]string{"empty": "had room for fewer than 4 replicas on its nodes"}},
		{name: "no replicas, nothing to check", replicas: 0, want: map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := st.Deployment(tt.replicas)
			spec.Placement = &policyv1alpha1.Placement{ReplicaScheduling: tt.rs}
			spec.Clusters = tt.scheduled
			state := st.State(spec)
			state.Room = room
			got, err := st.Reasons(New(), state, clusters...)
			if err != nil {
				t.Fatal(err)
			}
			for name, reason := range got {
				if reason == "" {
					delete(got, name)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("reasons (-want +got):\n%s", diff)
			}
		})
	}
}
