package scheduler

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/scheduler/estimate"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

// benchFleet returns n clusters spread over 10 regions and 3 providers, with labels, a few
// served APIs, a resource summary, and a not-ready taint on every 20th.
func benchFleet(n int) []*clusterv1alpha1.Cluster {
	envs := []string{"prod", "staging", "dev"}
	providers := []string{"aws", "gcp", "azure"}
	clusters := make([]*clusterv1alpha1.Cluster, n)
	for i := range clusters {
		region := fmt.Sprintf("region-%d", i%10)
		opts := []st.ClusterOption{
			st.Region(region),
			st.Zones(region + "a"),
			st.Provider(providers[i%3]),
			st.Label("env", envs[i%3]),
			st.Label("team", fmt.Sprintf("team-%d", i%7)),
			st.Resources(
				map[string]string{"cpu": fmt.Sprintf("%d", 64+i%64), "memory": "256Gi", "pods": "1100"},
				map[string]string{"cpu": fmt.Sprintf("%d", i%32), "memory": "64Gi", "pods": "300"}),
			func(c *clusterv1alpha1.Cluster) {
				for _, gv := range []string{"autoscaling/v2", "networking.k8s.io/v1", "policy/v1", "rbac.authorization.k8s.io/v1", "storage.k8s.io/v1"} {
					c.Status.APIEnablements = append(c.Status.APIEnablements, clusterv1alpha1.APIEnablement{
						GroupVersion: gv, Resources: []clusterv1alpha1.APIResource{{Name: "things", Kind: "Thing"}},
					})
				}
			},
		}
		if i%20 == 19 {
			opts = append(opts, st.Taint(wellknown.TaintClusterNotReady, "", corev1.TaintEffectNoSchedule))
		}
		clusters[i] = st.NewCluster(fmt.Sprintf("member-%05d", i), opts...)
	}
	return clusters
}

// benchBinding is a 100-replica Deployment for prod and staging clusters, placed as mode says.
func benchBinding(mode string) *workv1alpha2.ResourceBindingSpec {
	spec := st.Deployment(100)
	spec.ReplicaRequirements = &workv1alpha2.ReplicaRequirements{ResourceRequest: st.List(map[string]string{"cpu": "250m", "memory": "512Mi"})}
	p := &policyv1alpha1.Placement{
		ClusterAffinity: &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"prod", "staging"}}},
		}},
	}
	switch mode {
	case "Duplicated":
	case "StaticWeighted":
		p.ReplicaScheduling = divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted, &policyv1alpha1.ClusterPreferences{StaticWeightList: []policyv1alpha1.StaticClusterWeight{
			{TargetCluster: policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}, Weight: 2},
			{TargetCluster: policyv1alpha1.ClusterAffinity{FieldSelector: &policyv1alpha1.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "provider", Operator: corev1.NodeSelectorOpIn, Values: []string{"aws"}},
			}}}, Weight: 3},
			{TargetCluster: policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "staging"}}}, Weight: 1},
		}})
	case "DynamicWeighted":
		p.ReplicaScheduling = dynamic()
	case "SpreadByRegion":
		p.ReplicaScheduling = divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted, nil)
		p.SpreadConstraints = []policyv1alpha1.SpreadConstraint{
			{SpreadByField: policyv1alpha1.SpreadByFieldRegion, MinGroups: 2, MaxGroups: 3},
			{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MinGroups: 3, MaxGroups: 10},
		}
	}
	spec.Placement = p
	return spec
}

// BenchmarkSchedule runs one full cycle per operation.
func BenchmarkSchedule(b *testing.B) {
	s := newScheduler(b, Options{})
	for _, mode := range []string{"Duplicated", "StaticWeighted", "DynamicWeighted", "SpreadByRegion"} {
		for _, n := range []int{10, 100, 1000, 5000} {
			b.Run(fmt.Sprintf("%s/clusters=%d", mode, n), func(b *testing.B) {
				clusters := benchFleet(n)
				in := Input{Spec: benchBinding(mode)}
				if _, err := s.Schedule(in, clusters); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := s.Schedule(in, clusters); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkNeedsSchedule checks a steady binding on 1000 clusters: the common, no-op case.
func BenchmarkNeedsSchedule(b *testing.B) {
	s := newScheduler(b, Options{})
	clusters := benchFleet(1000)
	spec := benchBinding("StaticWeighted")
	result, err := s.Schedule(Input{Spec: spec}, clusters)
	if err != nil {
		b.Fatal(err)
	}
	spec.Clusters = result.Clusters
	applied, err := AppliedPlacement(spec.Placement)
	if err != nil {
		b.Fatal(err)
	}
	in := Input{Spec: spec, Annotations: map[string]string{wellknown.AppliedPlacementAnnotation: applied}}
	if need, reason := NeedsSchedule(in, clusters); need {
		b.Fatalf("steady binding needs schedule: %s", reason)
	}
	b.ReportAllocs()
	for b.Loop() {
		NeedsSchedule(in, clusters)
	}
}

// BenchmarkScheduleNodeGroups is BenchmarkSchedule on clusters that also report 8 node groups
// each (the estimate node by node), with and without placements held on every cluster.
func BenchmarkScheduleNodeGroups(b *testing.B) {
	s := newScheduler(b, Options{})
	const n = 1000
	clusters := benchFleet(n)
	held := map[string][]estimate.Held{}
	for i, c := range clusters {
		for g := range 8 {
			st.Nodes(int32(2+g), map[string]string{"cpu": fmt.Sprintf("%d", 4+4*g), "memory": "64Gi", "pods": "110"}, "pool", fmt.Sprintf("p%d", g))(c)
		}
		if i%2 == 0 {
			held[c.Name] = []estimate.Held{{Replicas: 3, Request: st.List(map[string]string{"cpu": "2"})}}
		}
	}
	for _, mode := range []string{"Duplicated", "StaticWeighted", "DynamicWeighted"} {
		for _, withHeld := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/clusters=%d/held=%v", mode, n, withHeld), func(b *testing.B) {
				in := Input{Spec: benchBinding(mode)}
				if mode == "Duplicated" {
					in.Spec.Replicas = 10
				}
				if withHeld {
					in.Held = held
				}
				if _, err := s.Schedule(in, clusters); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := s.Schedule(in, clusters); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
