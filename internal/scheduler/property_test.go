package scheduler

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

// TestCycleProperties schedules random bindings on random fleets: the same input always gives
// the same answer, and every success places exactly the replicas.
func TestCycleProperties(t *testing.T) {
	s := newScheduler(t, Options{})
	rng := rand.New(rand.NewPCG(11, 12))
	for iter := 0; iter < 2000; iter++ {
		data := make([]byte, 64+rng.IntN(64))
		for i := range data {
			data[i] = byte(rng.UintN(256))
		}
		in, clusters := fuzzCase(int32(rng.IntN(50)), data, "w")
		first, err1 := s.Schedule(in, clusters)
		second, err2 := s.Schedule(in, clusters)
		if fmt.Sprint(err1) != fmt.Sprint(err2) {
			t.Fatalf("errors differ: %v then %v", err1, err2)
		}
		if diff := cmp.Diff(first, second); diff != "" {
			t.Fatalf("same input, different answer (-first +second):\n%s", diff)
		}
		if err1 == nil {
			checkResult(t, in.Spec, first)
		}
	}
}

// TestScaleUpNeverMovesReplicas scales static-weighted bindings up step by step, feeding each
// result back as spec.clusters: no cluster ever loses a replica.
func TestScaleUpNeverMovesReplicas(t *testing.T) {
	s := newScheduler(t, Options{})
	rng := rand.New(rand.NewPCG(13, 14))
	for iter := 0; iter < 200; iter++ {
		n := 1 + rng.IntN(6)
		clusters := make([]*clusterv1alpha1.Cluster, n)
		var weights []any
		for i := range clusters {
			name := fmt.Sprintf("m%d", i)
			clusters[i] = st.NewCluster(name)
			weights = append(weights, []string{name}, 1+rng.IntN(5))
		}
		spec := st.Deployment(0)
		spec.Resource.UID = "" // a different template each iteration
		spec.Resource.Name = fmt.Sprintf("web-%d", iter)
		spec.Placement = &policyv1alpha1.Placement{ReplicaScheduling: staticWeights(weights...)}
		for replicas := int32(1); replicas <= 30; replicas += int32(1 + rng.IntN(3)) {
			spec.Replicas = replicas
			got, err := s.Schedule(Input{Spec: spec}, clusters)
			if err != nil {
				t.Fatal(err)
			}
			before := map[string]int32{}
			for _, tc := range spec.Clusters {
				before[tc.Name] = tc.Replicas
			}
			after := map[string]int32{}
			for _, tc := range got.Clusters {
				after[tc.Name] = tc.Replicas
			}
			for name, r := range before {
				if after[name] < r {
					t.Fatalf("scaling %v to %d replicas gave %v: %s lost replicas", spec.Clusters, replicas, got.Clusters, name)
				}
			}
			spec.Clusters = got.Clusters
		}
	}
}
