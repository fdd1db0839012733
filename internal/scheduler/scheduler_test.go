package scheduler

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
	"github.com/flotilla-io/flotilla/pkg/scheduler/framework"
)

func newScheduler(t testing.TB, opts Options) *Scheduler {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func targets(kv ...any) []workv1alpha2.TargetCluster {
	var out []workv1alpha2.TargetCluster
	for i := 0; i < len(kv); i += 2 {
		out = append(out, workv1alpha2.TargetCluster{Name: kv[i].(string), Replicas: int32(kv[i+1].(int))})
	}
	return out
}

func divided(pref policyv1alpha1.ReplicaDivisionPreference, wp *policyv1alpha1.ClusterPreferences) *policyv1alpha1.ReplicaSchedulingStrategy {
	return &policyv1alpha1.ReplicaSchedulingStrategy{
		ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
		ReplicaDivisionPreference: pref,
		WeightPreference:          wp,
	}
}

func staticWeights(kv ...any) *policyv1alpha1.ReplicaSchedulingStrategy {
	var list []policyv1alpha1.StaticClusterWeight
	for i := 0; i < len(kv); i += 2 {
		list = append(list, policyv1alpha1.StaticClusterWeight{
			TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: kv[i].([]string)},
			Weight:        int64(kv[i+1].(int)),
		})
	}
	return divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted, &policyv1alpha1.ClusterPreferences{StaticWeightList: list})
}

func dynamic() *policyv1alpha1.ReplicaSchedulingStrategy {
	return divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted, &policyv1alpha1.ClusterPreferences{DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas})
}

func cpu(allocatable, allocated string) st.ClusterOption {
	return st.Resources(map[string]string{"cpu": allocatable, "pods": "110"}, map[string]string{"cpu": allocated})
}

func withRequest(spec *workv1alpha2.ResourceBindingSpec, req map[string]string) *workv1alpha2.ResourceBindingSpec {
	spec.ReplicaRequirements = &workv1alpha2.ReplicaRequirements{ResourceRequest: st.List(req)}
	return spec
}

func scheduledOn(spec *workv1alpha2.ResourceBindingSpec, clusters ...string) *workv1alpha2.ResourceBindingSpec {
	for _, c := range clusters {
		spec.Clusters = append(spec.Clusters, workv1alpha2.TargetCluster{Name: c, Replicas: spec.Replicas})
	}
	return spec
}

func TestSchedule(t *testing.T) {
	three := []*clusterv1alpha1.Cluster{st.NewCluster("m1"), st.NewCluster("m2"), st.NewCluster("m3")}
	configMap := &workv1alpha2.ResourceBindingSpec{Resource: workv1alpha2.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cfg", UID: "uid-cfg"}}
	tests := []struct {
		name      string
		spec      *workv1alpha2.ResourceBindingSpec
		placement policyv1alpha1.Placement
		clusters  []*clusterv1alpha1.Cluster
		opts      Options
		want      []workv1alpha2.TargetCluster
	}{
		{"nil replicaScheduling is Duplicated", st.Deployment(3), policyv1alpha1.Placement{}, three,
			Options{}, targets("m1", 3, "m2", 3, "m3", 3)},
		{"Duplicated", st.Deployment(2), policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated}},
			three, Options{}, targets("m1", 2, "m2", 2, "m3", 2)},
		{"a non-workload is duplicated with 0 replicas, even when Divided", configMap, policyv1alpha1.Placement{ReplicaScheduling: staticWeights()},
			three, Options{}, targets("m1", 0, "m2", 0, "m3", 0)},
		{"static weights: the highest matching rule wins", st.Deployment(6),
			policyv1alpha1.Placement{ReplicaScheduling: staticWeights([]string{"m1", "m2"}, 1, []string{"m2"}, 2, []string{"m3"}, 3)},
			three, Options{}, targets("m1", 1, "m2", 2, "m3", 3)},
		{"static weights: clusters matching no rule are dropped", st.Deployment(4),
			policyv1alpha1.Placement{ReplicaScheduling: staticWeights([]string{"m1"}, 1, []string{"m3"}, 1)},
			three, Options{}, targets("m1", 2, "m3", 2)},
		{"static weights: no rule matches, all share equally", st.Deployment(3),
			policyv1alpha1.Placement{ReplicaScheduling: staticWeights([]string{"elsewhere"}, 5)},
			three, Options{}, targets("m1", 1, "m2", 1, "m3", 1)},
		{"Divided without weights shares equally", st.Deployment(6),
			policyv1alpha1.Placement{ReplicaScheduling: divided("", nil)},
			three, Options{}, targets("m1", 2, "m2", 2, "m3", 2)},
		{"0-replica clusters are dropped", st.Deployment(1),
			policyv1alpha1.Placement{ReplicaScheduling: divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted, nil)},
			three[:2], Options{}, targets("m2", 1)},
		{"0-replica clusters are kept with EnableEmptyWorkloadPropagation", st.Deployment(1),
			policyv1alpha1.Placement{ReplicaScheduling: divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted, nil)},
			three[:2], Options{EnableEmptyWorkloadPropagation: true}, targets("m1", 0, "m2", 1)},
		{"dynamic weights by free CPU", withRequest(st.Deployment(6), map[string]string{"cpu": "500m"}),
			policyv1alpha1.Placement{ReplicaScheduling: dynamic()},
			[]*clusterv1alpha1.Cluster{st.NewCluster("m1", cpu("2", "1")), st.NewCluster("m2", cpu("8", "6")), st.NewCluster("m3", cpu("4", "1"))},
			Options{}, targets("m1", 1, "m2", 2, "m3", 3)},
		{"a GPU request lands only where GPUs are free", withRequest(st.Deployment(3), map[string]string{"cpu": "1", "nvidia.com/gpu": "1"}),
			policyv1alpha1.Placement{ReplicaScheduling: dynamic()},
			[]*clusterv1alpha1.Cluster{
				st.NewCluster("cpu-only", cpu("64", "0")),
				st.NewCluster("gpu", st.Resources(map[string]string{"cpu": "64", "nvidia.com/gpu": "4"}, map[string]string{"nvidia.com/gpu": "1"})),
				st.NewCluster("gpu-full", st.Resources(map[string]string{"cpu": "64", "nvidia.com/gpu": "2"}, map[string]string{"nvidia.com/gpu": "2"})),
			},
			Options{}, targets("gpu", 3)},
		{"aggregated: as few clusters as fit", withRequest(st.Deployment(5), map[string]string{"cpu": "1"}),
			policyv1alpha1.Placement{ReplicaScheduling: divided(policyv1alpha1.ReplicaDivisionPreferenceAggregated, nil)},
			[]*clusterv1alpha1.Cluster{st.NewCluster("small", cpu("2", "0")), st.NewCluster("big", cpu("4", "0")), st.NewCluster("mid", cpu("3", "0"))},
			Options{}, targets("big", 4, "mid", 1)},
		{"spread over two regions, preferring the cluster already used", scheduledOn(st.Deployment(1), "a"),
			policyv1alpha1.Placement{SpreadConstraints: []policyv1alpha1.SpreadConstraint{
				{SpreadByField: policyv1alpha1.SpreadByFieldRegion, MinGroups: 2, MaxGroups: 2},
				{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MinGroups: 2, MaxGroups: 2},
			}},
			[]*clusterv1alpha1.Cluster{st.NewCluster("a", st.Region("r1")), st.NewCluster("b", st.Region("r1")), st.NewCluster("c", st.Region("r2")), st.NewCluster("nowhere")},
			Options{}, targets("a", 1, "c", 1)},
		{"clusters being deleted or evicted are not chosen", st.Deployment(1), policyv1alpha1.Placement{},
			[]*clusterv1alpha1.Cluster{st.NewCluster("going", st.Deleting()), nil, st.NewCluster("staying")},
			Options{}, targets("staying", 1)},
		{"disabled plugin does not run", st.Deployment(1), policyv1alpha1.Placement{},
			[]*clusterv1alpha1.Cluster{st.NewCluster("new", st.NoAPIs())},
			Options{DisabledPlugins: []string{"APIEnablement"}}, targets("new", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := tt.spec.DeepCopy()
			spec.Placement = &tt.placement
			got, err := newScheduler(t, tt.opts).Schedule(Input{Spec: spec}, tt.clusters)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(Result{Clusters: tt.want}, got); diff != "" {
				t.Errorf("Schedule() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSeedCase: 2 replicas over three clusters of weight 10 go to two clusters, 1 each;
// scaling to 3 gives 1/1/1 and keeps the first two.
func TestSeedCase(t *testing.T) {
	s := newScheduler(t, Options{})
	clusters := []*clusterv1alpha1.Cluster{st.NewCluster("m1"), st.NewCluster("m2"), st.NewCluster("m3")}
	spec := st.Deployment(2)
	spec.Placement = &policyv1alpha1.Placement{ReplicaScheduling: staticWeights([]string{"m1"}, 10, []string{"m2"}, 10, []string{"m3"}, 10)}
	first, err := s.Schedule(Input{Spec: spec}, clusters)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Clusters) != 2 || first.Clusters[0].Replicas != 1 || first.Clusters[1].Replicas != 1 {
		t.Fatalf("2 replicas over 10/10/10 = %v, want two clusters with 1 each", first.Clusters)
	}
	again, _ := s.Schedule(Input{Spec: spec}, clusters)
	if diff := cmp.Diff(first, again); diff != "" {
		t.Errorf("same input, different answer (-first +again):\n%s", diff)
	}
	spec.Clusters, spec.Replicas = first.Clusters, 3
	scaled, err := s.Schedule(Input{Spec: spec}, clusters)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(targets("m1", 1, "m2", 1, "m3", 1), scaled.Clusters); diff != "" {
		t.Errorf("scaled to 3 (-want +got):\n%s", diff)
	}
}

func TestUnschedulable(t *testing.T) {
	notReady := st.Taint(wellknown.TaintClusterNotReady, "", corev1.TaintEffectNoSchedule)
	tests := []struct {
		name           string
		spec           *workv1alpha2.ResourceBindingSpec
		placement      policyv1alpha1.Placement
		clusters       []*clusterv1alpha1.Cluster
		wantMessage    string
		wantRejections []Rejection
	}{
		{"reasons are counted and sorted", st.Deployment(1),
			policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"a", "b"}}},
			[]*clusterv1alpha1.Cluster{st.NewCluster("a", notReady), st.NewCluster("b", notReady), st.NewCluster("c"), st.NewCluster("d"), st.NewCluster("e")},
			"0/5 clusters are available: 2 had untolerated taint {cluster.karmada.io/not-ready}, 3 did not match the cluster affinity",
			[]Rejection{
				{"a", "TaintToleration", "had untolerated taint {cluster.karmada.io/not-ready}"},
				{"b", "TaintToleration", "had untolerated taint {cluster.karmada.io/not-ready}"},
				{"c", "ClusterAffinity", "did not match the cluster affinity"},
				{"d", "ClusterAffinity", "did not match the cluster affinity"},
				{"e", "ClusterAffinity", "did not match the cluster affinity"},
			}},
		{"no clusters", st.Deployment(1), policyv1alpha1.Placement{}, nil, "0/0 clusters are available", nil},
		{"not enough capacity is never a partial placement", withRequest(st.Deployment(10), map[string]string{"cpu": "1"}),
			policyv1alpha1.Placement{ReplicaScheduling: dynamic()},
			[]*clusterv1alpha1.Cluster{st.NewCluster("a", cpu("3", "0")), st.NewCluster("b", cpu("2", "1")), st.NewCluster("unknown")},
			"3/3 clusters are available; insufficient capacity: 10 replicas requested, the feasible clusters can hold 4", nil},
		{"spread constraint", st.Deployment(1),
			policyv1alpha1.Placement{SpreadConstraints: []policyv1alpha1.SpreadConstraint{{MinGroups: 3}}},
			[]*clusterv1alpha1.Cluster{st.NewCluster("a"), st.NewCluster("b", st.NoAPIs())},
			"1/2 clusters are available: 1 had not reported their APIs yet; spread by cluster needs at least 3 clusters, 1 fit",
			[]Rejection{{"b", "APIEnablement", "had not reported their APIs yet"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := tt.spec.DeepCopy()
			spec.Placement = &tt.placement
			_, err := newScheduler(t, Options{}).Schedule(Input{Spec: spec}, tt.clusters)
			var u *UnschedulableError
			if !errors.As(err, &u) {
				t.Fatalf("Schedule() error = %v, want *UnschedulableError", err)
			}
			if got := u.Error(); got != tt.wantMessage {
				t.Errorf("message:\n got %q\nwant %q", got, tt.wantMessage)
			}
			if diff := cmp.Diff(tt.wantRejections, u.Rejections); diff != "" {
				t.Errorf("rejections mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClusterAffinities(t *testing.T) {
	clusters := []*clusterv1alpha1.Cluster{
		st.NewCluster("primary", st.Taint(wellknown.TaintClusterUnreachable, "", corev1.TaintEffectNoSchedule)),
		st.NewCluster("backup"),
		st.NewCluster("last"),
	}
	groups := []policyv1alpha1.ClusterAffinityTerm{
		{AffinityName: "primary", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"primary"}}},
		{AffinityName: "backup", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"backup"}}},
		{AffinityName: "last", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"last"}}},
	}
	spec := st.Deployment(1)
	spec.Placement = &policyv1alpha1.Placement{ClusterAffinities: groups}
	s := newScheduler(t, Options{})

	got, err := s.Schedule(Input{Spec: spec}, clusters)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Result{Clusters: targets("backup", 1), AffinityName: "backup"}, got); diff != "" {
		t.Errorf("falls back to the next group (-want +got):\n%s", diff)
	}

	observed := &workv1alpha2.ResourceBindingStatus{SchedulerObservedAffinityName: "last"}
	got, err = s.Schedule(Input{Spec: spec, Status: observed}, clusters)
	if err != nil {
		t.Fatal(err)
	}
	if got.AffinityName != "last" {
		t.Errorf("starts from the observed group: got %q, want %q", got.AffinityName, "last")
	}

	_, err = s.Schedule(Input{Spec: spec}, clusters[:1])
	var u *UnschedulableError
	if !errors.As(err, &u) || len(u.Groups) != 3 {
		t.Fatalf("no group fits: error = %v, want *UnschedulableError with 3 groups", err)
	}
	want := `no clusterAffinities group fits: group "primary": 0/1 clusters are available: 1 had untolerated taint {cluster.karmada.io/unreachable}; ` +
		`group "backup": 0/1 clusters are available: 1 did not match the cluster affinity; ` +
		`group "last": 0/1 clusters are available: 1 did not match the cluster affinity`
	if err.Error() != want {
		t.Errorf("message:\n got %q\nwant %q", err, want)
	}
}

func TestErrors(t *testing.T) {
	badSelector := &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Sometimes"}},
	}}
	for name, p := range map[string]policyv1alpha1.Placement{
		"label selector": {ClusterAffinity: badSelector},
		"static weight":  {ReplicaScheduling: divided("", &policyv1alpha1.ClusterPreferences{StaticWeightList: []policyv1alpha1.StaticClusterWeight{{TargetCluster: *badSelector, Weight: 1}}})},
		"dynamic weight": {ReplicaScheduling: divided("", &policyv1alpha1.ClusterPreferences{DynamicWeight: "Cost"})},
		"division":       {ReplicaScheduling: divided("Random", nil)},
		"type":           {ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: "Sharded"}},
		"spread":         {SpreadConstraints: []policyv1alpha1.SpreadConstraint{{SpreadByField: "planet"}}},
	} {
		spec := st.Deployment(2)
		spec.Placement = &p
		_, err := newScheduler(t, Options{}).Schedule(Input{Spec: spec}, []*clusterv1alpha1.Cluster{st.NewCluster("m1")})
		if !errors.Is(err, ErrInvalidPlacement) {
			t.Errorf("%s: error = %v, want ErrInvalidPlacement", name, err)
		}
	}
}

func TestDuplicateClusterNames(t *testing.T) {
	_, err := newScheduler(t, Options{}).Schedule(Input{Spec: st.Deployment(1)}, []*clusterv1alpha1.Cluster{st.NewCluster("m1"), st.NewCluster("m1")})
	var u *UnschedulableError
	if err == nil || errors.As(err, &u) || errors.Is(err, ErrInvalidPlacement) {
		t.Errorf("Schedule() error = %v, want an internal error", err)
	}
}

func TestNew(t *testing.T) {
	for name, opts := range map[string]Options{
		"unknown plugin":         {DisabledPlugins: []string{"Typo"}},
		"ClusterDeletion":        {DisabledPlugins: []string{"ClusterDeletion"}},
		"duplicate extra plugin": {ExtraPlugins: []framework.Plugin{onlyIn{"x"}, onlyIn{"x"}}},
	} {
		if _, err := New(opts); err == nil {
			t.Errorf("%s: New() returned no error", name)
		}
	}
}

// onlyIn is a user plugin: it admits only the named cluster.
type onlyIn struct{ cluster string }

func (onlyIn) Name() string { return "OnlyIn" }

func (p onlyIn) NewFilter(*framework.CycleState) (framework.Filter, error) {
	return func(c *clusterv1alpha1.Cluster) string {
		if c.Name == p.cluster {
			return ""
		}
		return fmt.Sprintf("was not %s", p.cluster)
	}, nil
}

func TestExtraPlugin(t *testing.T) {
	s := newScheduler(t, Options{ExtraPlugins: []framework.Plugin{onlyIn{"m2"}}})
	got, err := s.Schedule(Input{Spec: st.Deployment(1)}, []*clusterv1alpha1.Cluster{st.NewCluster("m1"), st.NewCluster("m2")})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(targets("m2", 1), got.Clusters); diff != "" {
		t.Errorf("extra filter not applied (-want +got):\n%s", diff)
	}
}

// TestTemplatesSpreadEvenly schedules one replica of many templates over three equal
// clusters: each cluster gets roughly a third.
func TestTemplatesSpreadEvenly(t *testing.T) {
	s := newScheduler(t, Options{})
	clusters := []*clusterv1alpha1.Cluster{st.NewCluster("m1"), st.NewCluster("m2"), st.NewCluster("m3")}
	const templates = 3000
	counts := map[string]int{}
	for i := 0; i < templates; i++ {
		spec := st.Deployment(1)
		spec.Resource.UID = "" // the seed defaults to kind/namespace/name
		spec.Resource.Name = fmt.Sprintf("web-%d", i)
		spec.Placement = &policyv1alpha1.Placement{ReplicaScheduling: divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted, nil)}
		got, err := s.Schedule(Input{Spec: spec}, clusters)
		if err != nil {
			t.Fatal(err)
		}
		counts[got.Clusters[0].Name]++
	}
	for _, c := range clusters {
		if n := counts[c.Name]; n < templates/3-150 || n > templates/3+150 {
			t.Errorf("%s got %d of %d templates, want about a third: %v", c.Name, n, templates, counts)
		}
	}
}
