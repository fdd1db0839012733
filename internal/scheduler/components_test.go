package scheduler

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

func component(name string, replicas int32, request map[string]string) workv1alpha2.Component {
	c := workv1alpha2.Component{Name: name, Replicas: replicas}
	if request != nil {
		c.ReplicaRequirements = &workv1alpha2.ComponentReplicaRequirements{ResourceRequest: st.List(request)}
	}
	return c
}

// flink is a jobmanager (1 × 1 cpu, 1Gi) and taskmanagers (n × 2 cpu, 2Gi).
func flink(taskmanagers int32) []workv1alpha2.Component {
	return []workv1alpha2.Component{
		component("jobmanager", 1, map[string]string{"cpu": "1", "memory": "1Gi"}),
		component("taskmanager", taskmanagers, map[string]string{"cpu": "2", "memory": "2Gi"}),
	}
}

func flinkSpec(taskmanagers int32, rs *policyv1alpha1.ReplicaSchedulingStrategy) *workv1alpha2.ResourceBindingSpec {
	return &workv1alpha2.ResourceBindingSpec{
		Resource:   workv1alpha2.ObjectReference{APIVersion: "flink.example.io/v1", Kind: "FlinkJob", Namespace: "default", Name: "wordcount", UID: "uid-flink"},
		Components: flink(taskmanagers),
		Placement:  &policyv1alpha1.Placement{ReplicaScheduling: rs},
	}
}

func cpuMem(cpu, mem string) st.ClusterOption {
	return st.Resources(map[string]string{"cpu": cpu, "memory": mem, "pods": "110"}, nil)
}

// flinkCluster is a cluster that serves the FlinkJob kind.
func flinkCluster(name string, opts ...st.ClusterOption) *clusterv1alpha1.Cluster {
	c := st.NewCluster(name, opts...)
	c.Status.APIEnablements = append(c.Status.APIEnablements, clusterv1alpha1.APIEnablement{
		GroupVersion: "flink.example.io/v1", Resources: []clusterv1alpha1.APIResource{{Name: "flinkjobs", Kind: "FlinkJob"}}})
	return c
}

func TestAvailableComponentSets(t *testing.T) {
	tests := []struct {
		name       string
		cluster    *clusterv1alpha1.Cluster
		components []workv1alpha2.Component
		want       int32
	}{
		// one set of flink(3) is 7 cpu, 7Gi, 4 pods
		{"exactly one set", st.NewCluster("c", cpuMem("7", "7Gi")), flink(3), 1},
		{"one cpu short", st.NewCluster("c", cpuMem("6", "64Gi")), flink(3), 0},
		{"two sets and a bit", st.NewCluster("c", cpuMem("15", "64Gi")), flink(3), 2},
		{"memory is scarcest", st.NewCluster("c", cpuMem("64", "13Gi")), flink(3), 1},
		{"pods: one slot per replica of every component", st.NewCluster("c", st.Resources(map[string]string{"cpu": "64", "memory": "64Gi", "pods": "110"}, map[string]string{"pods": "103"})), flink(3), 1},
		{"no resource summary", st.NewCluster("c"), flink(3), 0},
		{"no requests, pods bound", st.NewCluster("c", st.Resources(map[string]string{"pods": "10"}, nil)), []workv1alpha2.Component{component("a", 2, nil), component("b", 3, nil)}, 2},
		{"zero replicas everywhere: unbounded", st.NewCluster("c", cpuMem("1", "1Gi")), []workv1alpha2.Component{component("a", 0, map[string]string{"cpu": "100"})}, math.MaxInt32},
		{"a component scaled to 0 needs nothing", st.NewCluster("c", cpuMem("1", "1Gi")), flink(0), 1},
		{"gpu not allocatable", st.NewCluster("c", cpuMem("64", "64Gi")), []workv1alpha2.Component{component("worker", 1, map[string]string{"nvidia.com/gpu": "1"})}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := AvailableComponentSets(tt.cluster, tt.components); got != tt.want {
				t.Errorf("AvailableComponentSets() = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestComponentShortfall(t *testing.T) {
	tests := []struct {
		name    string
		cluster *clusterv1alpha1.Cluster
		want    string
	}{
		{"fits", st.NewCluster("c", cpuMem("7", "7Gi")), ""},
		{"cpu short by 2", st.NewCluster("c", cpuMem("5", "64Gi")), "cpu short by 2 (set needs 7, 5 free)"},
		{"cpu and memory", st.NewCluster("c", cpuMem("5", "6Gi")), "cpu short by 2 (set needs 7, 5 free), memory short by 1Gi (set needs 7Gi, 6Gi free)"},
		{"allocated counts", st.NewCluster("c", st.Resources(map[string]string{"cpu": "8", "memory": "64Gi"}, map[string]string{"cpu": "4"})), "cpu short by 3 (set needs 7, 4 free)"},
		{"pods", st.NewCluster("c", st.Resources(map[string]string{"cpu": "8", "memory": "64Gi", "pods": "5"}, map[string]string{"pods": "2"})), "pods short by 1 (set needs 4, 3 free)"},
		{"not allocatable", st.NewCluster("c", st.Resources(map[string]string{"cpu": "8"}, nil)), "memory short by 7Gi (none allocatable)"},
		{"overcommitted counts as nothing free", st.NewCluster("c", st.Resources(map[string]string{"cpu": "4", "memory": "64Gi"}, map[string]string{"cpu": "5"})), "cpu short by 7 (set needs 7, 0 free)"},
		{"no summary", st.NewCluster("c"), "reports no free resources (no resourceSummary)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ComponentShortfall(tt.cluster, flink(3)); got != tt.want {
				t.Errorf("ComponentShortfall() = %q, want %q", got, tt.want)
			}
		})
	}
}

func wholeSet(name string, taskmanagers int32) workv1alpha2.TargetCluster {
	return workv1alpha2.TargetCluster{Name: name, Components: []workv1alpha2.ComponentReplicas{{Name: "jobmanager", Replicas: 1}, {Name: "taskmanager", Replicas: taskmanagers}}}
}

func TestScheduleComponents(t *testing.T) {
	small := flinkCluster("small", cpuMem("4", "64Gi"))  // no set of flink(3)
	medium := flinkCluster("medium", cpuMem("8", "8Gi")) // one set
	large := flinkCluster("large", cpuMem("32", "64Gi")) // four sets
	tests := []struct {
		name     string
		spec     *workv1alpha2.ResourceBindingSpec
		clusters []*clusterv1alpha1.Cluster
		want     []workv1alpha2.TargetCluster
		wantErr  string
	}{
		{
			name:     "duplicated: the whole set on every cluster that fits",
			spec:     flinkSpec(3, nil),
			clusters: []*clusterv1alpha1.Cluster{small, medium, large},
			want:     []workv1alpha2.TargetCluster{wholeSet("large", 3), wholeSet("medium", 3)},
		},
		{
			name:     "divided weighted: not split, whole on the cluster with room for most sets",
			spec:     flinkSpec(3, divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted, nil)),
			clusters: []*clusterv1alpha1.Cluster{small, medium, large},
			want:     []workv1alpha2.TargetCluster{wholeSet("large", 3)},
		},
		{
			name:     "divided aggregated: whole on one cluster",
			spec:     flinkSpec(3, divided(policyv1alpha1.ReplicaDivisionPreferenceAggregated, nil)),
			clusters: []*clusterv1alpha1.Cluster{small, medium},
			want:     []workv1alpha2.TargetCluster{wholeSet("medium", 3)},
		},
		{
			name: "divided: kept where it is while it is feasible",
			spec: func() *workv1alpha2.ResourceBindingSpec {
				s := flinkSpec(3, divided("", nil))
				s.Clusters = []workv1alpha2.TargetCluster{wholeSet("medium", 3)}
				return s
			}(),
			clusters: []*clusterv1alpha1.Cluster{small, medium, large},
			want:     []workv1alpha2.TargetCluster{wholeSet("medium", 3)},
		},
		{
			name:     "a bigger set no longer fits the medium cluster",
			spec:     flinkSpec(6, nil),
			clusters: []*clusterv1alpha1.Cluster{medium, large},
			want:     []workv1alpha2.TargetCluster{wholeSet("large", 6)},
		},
		{
			name:     "fits nowhere: the condition says by how much",
			spec:     flinkSpec(3, divided("", nil)),
			clusters: []*clusterv1alpha1.Cluster{small},
			wantErr:  "0/1 clusters are available: 1 cannot hold one set of the components (jobmanager 1, taskmanager 3): cpu short by 3 (set needs 7, 4 free)",
		},
		{
			name: "spec.replicas is kept on every target",
			spec: func() *workv1alpha2.ResourceBindingSpec {
				s := flinkSpec(3, nil)
				s.Replicas = 4
				return s
			}(),
			clusters: []*clusterv1alpha1.Cluster{medium},
			want: func() []workv1alpha2.TargetCluster {
				tc := wholeSet("medium", 3)
				tc.Replicas = 4
				return []workv1alpha2.TargetCluster{tc}
			}(),
		},
		{
			name: "a cluster already running the set keeps it though its free capacity no longer holds another",
			spec: func() *workv1alpha2.ResourceBindingSpec {
				s := flinkSpec(3, nil)
				s.Clusters = []workv1alpha2.TargetCluster{wholeSet("full", 3)}
				return s
			}(),
			clusters: []*clusterv1alpha1.Cluster{flinkCluster("full", cpuMem("1", "1Gi")), medium},
			want:     []workv1alpha2.TargetCluster{wholeSet("full", 3), wholeSet("medium", 3)},
		},
		{
			name: "scaling up where it runs: only the added replicas must fit",
			spec: func() *workv1alpha2.ResourceBindingSpec {
				s := flinkSpec(5, divided("", nil))
				s.Clusters = []workv1alpha2.TargetCluster{wholeSet("running", 3)}
				return s
			}(),
			clusters: []*clusterv1alpha1.Cluster{flinkCluster("running", cpuMem("4", "4Gi")), large},
			want:     []workv1alpha2.TargetCluster{wholeSet("running", 5)},
		},
		{
			name: "scaling up where it runs, past its free capacity: the set moves",
			spec: func() *workv1alpha2.ResourceBindingSpec {
				s := flinkSpec(6, divided("", nil))
				s.Clusters = []workv1alpha2.TargetCluster{wholeSet("running", 3)}
				return s
			}(),
			clusters: []*clusterv1alpha1.Cluster{flinkCluster("running", cpuMem("4", "64Gi")), large},
			want:     []workv1alpha2.TargetCluster{wholeSet("large", 6)},
		},
		{
			name: "scaling up where it runs, nowhere room: the shortfall is of the added replicas",
			spec: func() *workv1alpha2.ResourceBindingSpec {
				s := flinkSpec(6, divided("", nil))
				s.Clusters = []workv1alpha2.TargetCluster{wholeSet("running", 3)}
				return s
			}(),
			clusters: []*clusterv1alpha1.Cluster{flinkCluster("running", cpuMem("4", "64Gi"))},
			wantErr:  "0/1 clusters are available: 1 cannot hold the replicas added to the components it runs (jobmanager 0, taskmanager 3): cpu short by 2 (set needs 6, 4 free)",
		},
		{
			name:     "invalid replica scheduling type",
			spec:     flinkSpec(3, &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: "Sideways"}),
			clusters: []*clusterv1alpha1.Cluster{large},
			wantErr:  `invalid placement: replicaScheduling.replicaSchedulingType "Sideways": must be Duplicated or Divided`,
		},
	}
	s := newScheduler(t, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Schedule(Input{Spec: tt.spec}, tt.clusters)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Schedule() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Schedule() error = %v", err)
			}
			if diff := cmp.Diff(tt.want, got.Clusters); diff != "" {
				t.Errorf("Schedule() clusters (-want +got):\n%s", diff)
			}
		})
	}
}

func TestScheduleComponentsUnschedulableIsTyped(t *testing.T) {
	_, err := newScheduler(t, Options{}).Schedule(Input{Spec: flinkSpec(3, nil)}, []*clusterv1alpha1.Cluster{flinkCluster("small", cpuMem("4", "4Gi"))})
	var unschedulable *UnschedulableError
	if !errors.As(err, &unschedulable) {
		t.Fatalf("Schedule() error = %v, want an *UnschedulableError", err)
	}
	if len(unschedulable.Rejections) != 1 || unschedulable.Rejections[0].Plugin != ComponentCapacityFilter {
		t.Errorf("rejections = %+v, want one by %s", unschedulable.Rejections, ComponentCapacityFilter)
	}
}

// TestComponentsChosenOnlyIfASetFits schedules random component workloads on random fleets:
// every chosen cluster has room for one complete set, every chosen cluster gets every
// component with all its replicas, Divided chooses exactly one cluster, and when no cluster has
// room the binding is unschedulable.
func TestComponentsChosenOnlyIfASetFits(t *testing.T) {
	s := newScheduler(t, Options{})
	rng := rand.New(rand.NewPCG(35, 2))
	var placed, refused int
	for iter := 0; iter < 1000; iter++ {
		var comps []workv1alpha2.Component
		for i := range 1 + rng.IntN(4) {
			comps = append(comps, component(fmt.Sprintf("c%d", i), int32(rng.IntN(6)),
				map[string]string{"cpu": fmt.Sprintf("%dm", 100*(1+rng.IntN(20))), "memory": fmt.Sprintf("%dMi", 128*(1+rng.IntN(16)))}))
		}
		var clusters []*clusterv1alpha1.Cluster
		anyFits := false
		for i := range 1 + rng.IntN(6) {
			c := flinkCluster(fmt.Sprintf("m%d", i), st.Resources(
				map[string]string{"cpu": fmt.Sprint(rng.IntN(24)), "memory": fmt.Sprintf("%dGi", rng.IntN(24)), "pods": fmt.Sprint(rng.IntN(30))},
				map[string]string{"cpu": fmt.Sprintf("%dm", rng.IntN(4000))}))
			clusters = append(clusters, c)
			anyFits = anyFits || AvailableComponentSets(c, comps) > 0
		}
		var rs *policyv1alpha1.ReplicaSchedulingStrategy
		if rng.IntN(2) == 0 {
			rs = divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted, nil)
		}
		spec := flinkSpec(0, rs)
		spec.Components = comps
		got, err := s.Schedule(Input{Spec: spec}, clusters)
		if !anyFits {
			var unschedulable *UnschedulableError
			if !errors.As(err, &unschedulable) {
				t.Fatalf("no cluster holds a set of %v, yet Schedule() = %v, %v", comps, got.Clusters, err)
			}
			refused++
			continue
		}
		if err != nil {
			t.Fatalf("a cluster holds a set of %v, yet Schedule() failed: %v", comps, err)
		}
		if rs != nil && len(got.Clusters) != 1 {
			t.Fatalf("divided set placed on %d clusters: %v", len(got.Clusters), got.Clusters)
		}
		placed++
		byName := map[string]*clusterv1alpha1.Cluster{}
		for _, c := range clusters {
			byName[c.Name] = c
		}
		for _, tc := range got.Clusters {
			if n := AvailableComponentSets(byName[tc.Name], comps); n < 1 {
				t.Fatalf("cluster %s chosen but holds %d sets of %v", tc.Name, n, comps)
			}
			if diff := cmp.Diff(componentReplicas(comps), tc.Components); diff != "" {
				t.Fatalf("cluster %s does not get the whole set (-want +got):\n%s", tc.Name, diff)
			}
		}
	}
	if placed < 100 || refused < 100 {
		t.Fatalf("the random cases placed %d and refused %d: both should be common", placed, refused)
	}
}

func TestNeedsScheduleWhenComponentsChange(t *testing.T) {
	spec := flinkSpec(3, nil)
	in := Input{Spec: spec, Annotations: map[string]string{}}
	placement, err := AppliedPlacement(spec.Placement)
	if err != nil {
		t.Fatal(err)
	}
	in.Annotations["policy.karmada.io/applied-placement"] = placement
	spec.Clusters = []workv1alpha2.TargetCluster{wholeSet("large", 3)}
	clusters := []*clusterv1alpha1.Cluster{flinkCluster("large", cpuMem("32", "64Gi"))}
	if need, why := NeedsSchedule(in, clusters); need {
		t.Fatalf("NeedsSchedule() = true (%s), want false for an unchanged set", why)
	}
	spec.Components = flink(5)
	need, why := NeedsSchedule(in, clusters)
	if !need || !strings.Contains(why, "components changed: cluster large has jobmanager 1, taskmanager 3, spec.components are jobmanager 1, taskmanager 5") {
		t.Fatalf("NeedsSchedule() = %v, %q; want a reschedule naming the components", need, why)
	}
}
