package scheduler

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

// room gives a cluster free pod slots for n more replicas.
func room(n int) st.ClusterOption {
	return st.Resources(map[string]string{"pods": strconv.Itoa(n)}, nil)
}

// overflowPlacement is on-prem (idc1, idc2) with the overflow groups given.
func overflowPlacement(rs *policyv1alpha1.ReplicaSchedulingStrategy, overflow ...policyv1alpha1.OverflowAffinityTerm) *policyv1alpha1.Placement {
	return &policyv1alpha1.Placement{
		ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{{
			AffinityName:       "on-prem",
			ClusterAffinity:    policyv1alpha1.ClusterAffinity{ClusterNames: []string{"idc1", "idc2"}},
			OverflowAffinities: overflow,
		}},
		ReplicaScheduling: rs,
	}
}

func overflowTo(name string, clusters ...string) policyv1alpha1.OverflowAffinityTerm {
	return policyv1alpha1.OverflowAffinityTerm{AffinityName: name, ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: clusters}}
}

// placed is the binding's current placement, "name=replicas" pairs.
func placed(spec *workv1alpha2.ResourceBindingSpec, pairs ...string) *workv1alpha2.ResourceBindingSpec {
	for _, p := range pairs {
		name, n, _ := strings.Cut(p, "=")
		r, _ := strconv.Atoi(n)
		spec.Clusters = append(spec.Clusters, workv1alpha2.TargetCluster{Name: name, Replicas: int32(r)})
	}
	return spec
}

func TestOverflowAffinities(t *testing.T) {
	cloud := overflowTo("public-cloud", "cloud1", "cloud2")
	// The preferred group holds 5 (3 + 2); the cloud 20; "other" is in no group.
	fleet := func(idc1, idc2, cloud1, cloud2 int) []*clusterv1alpha1.Cluster {
		return []*clusterv1alpha1.Cluster{
			st.NewCluster("idc1", room(idc1)), st.NewCluster("idc2", room(idc2)),
			st.NewCluster("cloud1", room(cloud1)), st.NewCluster("cloud2", room(cloud2)),
			st.NewCluster("other", room(100)),
		}
	}
	full := fleet(3, 2, 10, 10)
	tests := []struct {
		name      string
		spec      *workv1alpha2.ResourceBindingSpec
		placement *policyv1alpha1.Placement
		clusters  []*clusterv1alpha1.Cluster
		want      []workv1alpha2.TargetCluster
	}{{
		name:      "what the preferred group holds stays in it",
		spec:      st.Deployment(5),
		placement: overflowPlacement(dynamic(), cloud),
		clusters:  full,
		want:      targets("idc1", 3, "idc2", 2),
	}, {
		name:      "the rest overflows to the next group, divided by its free capacity",
		spec:      st.Deployment(9),
		placement: overflowPlacement(dynamic(), cloud),
		clusters:  fleet(3, 2, 10, 30),
		want:      targets("cloud1", 1, "cloud2", 3, "idc1", 3, "idc2", 2),
	}, {
		name:      "groups are filled in their order, down the chain",
		spec:      st.Deployment(8),
		placement: overflowPlacement(dynamic(), overflowTo("cloud-a", "cloud1"), overflowTo("cloud-b", "cloud2")),
		clusters:  fleet(3, 2, 2, 10),
		want:      targets("cloud1", 2, "cloud2", 1, "idc1", 3, "idc2", 2),
	}, {
		name: "a scale-up goes to the preferred group first when it has room again",
		spec: placed(st.Deployment(7), "idc1=3", "idc2=2", "cloud1=1"),
		// idc2 freed room for one more.
		placement: overflowPlacement(dynamic(), cloud),
		clusters:  fleet(0, 1, 9, 10),
		want:      targets("cloud1", 1, "idc1", 3, "idc2", 3),
	}, {
		name:      "a scale-down leaves the overflow group first",
		spec:      placed(st.Deployment(6), "idc1=3", "idc2=2", "cloud1=2", "cloud2=1"),
		placement: overflowPlacement(dynamic(), cloud),
		clusters:  fleet(0, 0, 8, 9),
		want:      targets("cloud1", 1, "idc1", 3, "idc2", 2),
	}, {
		name:      "and only then the preferred group",
		spec:      placed(st.Deployment(4), "idc1=3", "idc2=2", "cloud1=2", "cloud2=1"),
		placement: overflowPlacement(dynamic(), cloud),
		clusters:  fleet(0, 0, 8, 9),
		want:      targets("idc1", 2, "idc2", 2),
	}, {
		name:      "the same count stays where it is: no replica is pulled back on its own",
		spec:      placed(st.Deployment(6), "idc1=3", "idc2=2", "cloud1=1"),
		placement: overflowPlacement(dynamic(), cloud),
		clusters:  fleet(5, 5, 9, 10),
		want:      targets("cloud1", 1, "idc1", 3, "idc2", 2),
	}, {
		name:      "Aggregated fills the fewest clusters of each group",
		spec:      st.Deployment(8),
		placement: overflowPlacement(divided(policyv1alpha1.ReplicaDivisionPreferenceAggregated, nil), cloud),
		clusters:  fleet(3, 2, 4, 10),
		want:      targets("cloud2", 3, "idc1", 3, "idc2", 2),
	}, {
		name:      "a preferred cluster that cannot be used sends its share to the next group",
		spec:      st.Deployment(5),
		placement: overflowPlacement(dynamic(), cloud),
		clusters: []*clusterv1alpha1.Cluster{
			st.NewCluster("idc1", room(3), st.Taint(wellknown.TaintClusterNotReady, "", corev1.TaintEffectNoSchedule)),
			st.NewCluster("idc2", room(2)), st.NewCluster("cloud1", room(10)), st.NewCluster("cloud2", room(0)),
		},
		want: targets("cloud1", 3, "idc2", 2),
	}, {
		name:      "a cluster in two groups belongs to the first",
		spec:      st.Deployment(6),
		placement: overflowPlacement(dynamic(), overflowTo("cloud", "idc2", "cloud1")),
		clusters:  fleet(3, 2, 10, 10),
		want:      targets("cloud1", 1, "idc1", 3, "idc2", 2),
	}, {
		name:      "a template without replicas goes to the preferred group",
		spec:      &workv1alpha2.ResourceBindingSpec{Resource: workv1alpha2.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cfg", UID: "uid-cfg"}},
		placement: overflowPlacement(dynamic(), cloud),
		clusters:  full,
		want:      targets("idc1", 0, "idc2", 0),
	}}
	s := newScheduler(t, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.spec.Placement = tt.placement
			got, err := s.Schedule(Input{Spec: tt.spec}, tt.clusters)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got.Clusters); diff != "" {
				t.Errorf("clusters (-want +got):\n%s", diff)
			}
			if got.AffinityName != "on-prem" {
				t.Errorf("AffinityName = %q, want the clusterAffinities group's, on-prem", got.AffinityName)
			}
		})
	}
}

func TestOverflowAffinitiesFailures(t *testing.T) {
	cloud := overflowTo("public-cloud", "cloud1")
	fleet := []*clusterv1alpha1.Cluster{st.NewCluster("idc1", room(3)), st.NewCluster("idc2", room(2)), st.NewCluster("cloud1", room(4))}
	s := newScheduler(t, Options{})

	t.Run("more than all groups hold is unschedulable, keeping the placement", func(t *testing.T) {
		spec := st.Deployment(10)
		spec.Placement = overflowPlacement(dynamic(), cloud)
		_, err := s.Schedule(Input{Spec: spec}, fleet)
		var u *UnschedulableError
		if !errors.As(err, &u) {
			t.Fatalf("err = %v, want an *UnschedulableError", err)
		}
		if !strings.Contains(err.Error(), "10 replicas requested, the feasible clusters can hold 9") {
			t.Errorf("message %q does not say how much fits", err)
		}
	})
	t.Run("the next clusterAffinities group is tried when one with overflow does not fit", func(t *testing.T) {
		spec := st.Deployment(10)
		spec.Placement = overflowPlacement(dynamic(), cloud)
		spec.Placement.ClusterAffinities = append(spec.Placement.ClusterAffinities,
			policyv1alpha1.ClusterAffinityTerm{AffinityName: "elsewhere", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"big"}}})
		got, err := s.Schedule(Input{Spec: spec}, append(fleet, st.NewCluster("big", room(20))))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(targets("big", 10), got.Clusters); diff != "" || got.AffinityName != "elsewhere" {
			t.Errorf("got %v in %q, want big (10) in elsewhere: %s", got.Clusters, got.AffinityName, diff)
		}
	})
	for name, rs := range map[string]*policyv1alpha1.ReplicaSchedulingStrategy{
		"no replicaScheduling": nil,
		"Duplicated":           {ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated},
		"static weights":       staticWeights([]string{"idc1"}, 1),
		"Weighted, no weights": divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted, nil),
	} {
		t.Run("invalid with "+name, func(t *testing.T) {
			spec := st.Deployment(2)
			spec.Placement = overflowPlacement(rs, cloud)
			_, err := s.Schedule(Input{Spec: spec}, fleet)
			if !errors.Is(err, ErrInvalidPlacement) || !strings.Contains(err.Error(), "clusterAffinities[on-prem].overflowAffinities") {
				t.Errorf("err = %v, want ErrInvalidPlacement naming clusterAffinities[on-prem].overflowAffinities", err)
			}
		})
	}
}

// A binding that overflowed is not rescheduled because its overflow clusters are outside the
// preferred group.
func TestOverflowNeedsNoReschedule(t *testing.T) {
	spec := placed(st.Deployment(6), "idc1=3", "idc2=2", "cloud1=1")
	spec.Placement = overflowPlacement(dynamic(), overflowTo("public-cloud", "cloud1"))
	applied, err := AppliedPlacement(spec.Placement)
	if err != nil {
		t.Fatal(err)
	}
	clusters := []*clusterv1alpha1.Cluster{st.NewCluster("idc1"), st.NewCluster("idc2"), st.NewCluster("cloud1"), st.NewCluster("cloud2")}
	in := Input{Spec: spec, Status: &workv1alpha2.ResourceBindingStatus{SchedulerObservedAffinityName: "on-prem"},
		Annotations: map[string]string{wellknown.AppliedPlacementAnnotation: applied}}
	if need, why := NeedsSchedule(in, clusters); need {
		t.Errorf("NeedsSchedule = true (%s), want false", why)
	}
	spec.Clusters = append(spec.Clusters, workv1alpha2.TargetCluster{Name: "cloud2", Replicas: 0})
	spec.Clusters[0].Replicas = 3
	if need, why := NeedsSchedule(in, clusters); !need || !strings.Contains(why, "cloud2") {
		t.Errorf("NeedsSchedule = %v (%s), want true for cloud2, in no group", need, why)
	}
}

func TestWorkloadAffinity(t *testing.T) {
	three := []*clusterv1alpha1.Cluster{st.NewCluster("m1"), st.NewCluster("m2"), st.NewCluster("m3")}
	s := newScheduler(t, Options{})
	one := func() *workv1alpha2.ResourceBindingSpec {
		spec := st.Deployment(1)
		spec.Placement = &policyv1alpha1.Placement{SpreadConstraints: []policyv1alpha1.SpreadConstraint{
			{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MaxGroups: 1, MinGroups: 1}}}
		return spec
	}

	got, err := s.Schedule(Input{Spec: one(), Peers: WorkloadPeers{AntiAffinity: []string{"m1", "m2"}}}, three)
	if err != nil || !cmp.Equal(got.Clusters, targets("m3", 1)) {
		t.Errorf("anti-affinity with peers on m1 and m2: %v, %v; want m3", got.Clusters, err)
	}
	got, err = s.Schedule(Input{Spec: one(), Peers: WorkloadPeers{Affinity: [][]string{{"m2"}}}}, three)
	if err != nil || !cmp.Equal(got.Clusters, targets("m2", 1)) {
		t.Errorf("affinity with a peer on m2: %v, %v; want m2", got.Clusters, err)
	}
	_, err = s.Schedule(Input{Spec: one(), Peers: WorkloadPeers{AntiAffinity: []string{"m1", "m2", "m3"}}}, three)
	var u *UnschedulableError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "3 held a workload of the same anti-affinity group") {
		t.Errorf("anti-affinity with peers everywhere: %v; want unschedulable, saying why", err)
	}
}
