package scheduler

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

// bytesReader hands out fuzz bytes; past the end it returns zeros.
type bytesReader []byte

func (r *bytesReader) next() byte {
	if len(*r) == 0 {
		return 0
	}
	b := (*r)[0]
	*r = (*r)[1:]
	return b
}

func (r *bytesReader) pick(options ...string) string { return options[int(r.next())%len(options)] }

// fuzzCase builds a binding and clusters from fuzz input. word is used for odd names, label
// values, selector keys and quantities.
func fuzzCase(replicas int32, data []byte, word string) (Input, []*clusterv1alpha1.Cluster) {
	r := bytesReader(data)
	effects := []string{"NoSchedule", "NoExecute", "PreferNoSchedule", word}
	n := int(r.next() % 12)
	clusters := make([]*clusterv1alpha1.Cluster, 0, n)
	var scheduled []workv1alpha2.TargetCluster
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("m%d", i)
		opts := []st.ClusterOption{
			st.Region(r.pick("", "r1", "r2", word)),
			st.Zones(r.pick("z1", "z2", word)),
			st.Provider(r.pick("", "aws", word)),
			st.Label(r.pick("env", word), r.pick("prod", "", word)),
		}
		if r.next()%3 == 0 {
			opts = append(opts, st.Taint(r.pick("t", word), r.pick("", "v", word), corev1.TaintEffect(r.pick(effects...))))
		}
		if r.next()%4 == 0 {
			opts = append(opts, st.NoAPIs())
		}
		if r.next()%5 == 0 {
			opts = append(opts, st.Deleting())
		}
		if b := r.next(); b%3 != 0 {
			opts = append(opts, st.Resources(
				map[string]string{"cpu": quantity(b, word), "pods": quantity(r.next(), word), "nvidia.com/gpu": quantity(r.next(), "0")},
				map[string]string{"cpu": quantity(r.next(), word)}))
		}
		clusters = append(clusters, st.NewCluster(name, opts...))
		if r.next()%2 == 0 {
			scheduled = append(scheduled, workv1alpha2.TargetCluster{Name: name, Replicas: int32(int8(r.next()))})
		}
	}
	if r.next()%7 == 0 {
		clusters = append(clusters, nil)
	}

	spec := st.Deployment(replicas)
	spec.Resource.Kind = r.pick("Deployment", "Job", "", word)
	spec.Clusters = scheduled
	if r.next()%2 == 0 {
		spec.ReplicaRequirements = &workv1alpha2.ReplicaRequirements{ResourceRequest: corev1.ResourceList{
			"cpu": resource.MustParse(quantity(r.next(), "1")), corev1.ResourceName(r.pick("memory", "nvidia.com/gpu", "pods")): resource.MustParse(quantity(r.next(), "0")),
		}}
	}
	p := &policyv1alpha1.Placement{}
	switch r.next() % 4 {
	case 1:
		p.ClusterAffinity = &policyv1alpha1.ClusterAffinity{
			ClusterNames: []string{"m1", "m2", word},
			Exclude:      []string{r.pick("m3", word)},
			LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: r.pick("env", word), Operator: metav1.LabelSelectorOperator(r.pick("In", "NotIn", "Exists", word)), Values: []string{r.pick("prod", word)},
			}}},
			FieldSelector: &policyv1alpha1.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: r.pick("region", "zone", "provider", word), Operator: corev1.NodeSelectorOperator(r.pick("In", "NotIn", word)), Values: []string{r.pick("r1", word)},
			}}},
		}
	case 2, 3:
		for g := 0; g < int(r.next()%4); g++ {
			p.ClusterAffinities = append(p.ClusterAffinities, policyv1alpha1.ClusterAffinityTerm{
				AffinityName:    fmt.Sprintf("g%d", g),
				ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{fmt.Sprintf("m%d", r.next()%8)}},
			})
		}
	}
	if r.next()%2 == 0 {
		p.ClusterTolerations = []corev1.Toleration{{Key: r.pick("", "t", word), Operator: corev1.TolerationOperator(r.pick("Exists", "Equal", "Gt", word)), Value: r.pick("", "v", "3", word)}}
	}
	for c := 0; c < int(r.next()%3); c++ {
		p.SpreadConstraints = append(p.SpreadConstraints, policyv1alpha1.SpreadConstraint{
			SpreadByField: policyv1alpha1.SpreadFieldValue(r.pick("", "cluster", "region", "zone", "provider", word)),
			SpreadByLabel: r.pick("", "", "env"),
			MinGroups:     int(int8(r.next())) % 5,
			MaxGroups:     int(int8(r.next())) % 5,
		})
	}
	switch r.next() % 6 {
	case 1:
		p.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingType(r.pick("Duplicated", "Divided", word))}
	case 2:
		p.ReplicaScheduling = staticWeights([]string{"m1"}, int(r.next()), []string{r.pick("m2", word)}, int(int8(r.next())))
	case 3:
		p.ReplicaScheduling = dynamic()
	case 4:
		p.ReplicaScheduling = divided(policyv1alpha1.ReplicaDivisionPreference(r.pick("Aggregated", "Weighted", "", word)), nil)
	}
	spec.Placement = p
	status := &workv1alpha2.ResourceBindingStatus{SchedulerObservedAffinityName: r.pick("", "g1", word)}
	return Input{Spec: spec, Status: status, Seed: word}, clusters
}

// quantity returns a small quantity from b, or word when b says so and word parses.
func quantity(b byte, word string) string {
	if b%11 == 0 {
		if _, err := resource.ParseQuantity(word); err == nil {
			return word
		}
	}
	return fmt.Sprintf("%d", int(b)%64)
}

// FuzzSchedule runs whole cycles on odd bindings and clusters: no panic, and every success is
// a well-formed placement (sorted unique names, no negative replicas, the replicas all placed).
func FuzzSchedule(f *testing.F) {
	f.Add(int32(3), []byte{5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, "x")
	f.Add(int32(0), []byte{3, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3}, "1Ei")
	f.Add(int32(-4), []byte{11, 255, 254, 253, 0, 1, 2, 7, 9, 3, 3, 3, 2, 2}, "")
	f.Add(int32(2147483647), []byte{8, 2, 4, 6, 8, 10, 3, 3, 3, 3, 1, 4, 0, 2}, "r1")
	s, err := New(Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, replicas int32, data []byte, word string) {
		in, clusters := fuzzCase(replicas, data, word)
		NeedsSchedule(in, clusters)
		got, err := s.Schedule(in, clusters)
		var u *UnschedulableError
		if errors.As(err, &u) {
			_ = u.Error()
			return
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidPlacement) {
				t.Fatalf("internal error: %v", err)
			}
			return
		}
		checkResult(t, in.Spec, got)
	})
}

// checkResult checks the invariants of a successful placement.
func checkResult(t *testing.T, spec *workv1alpha2.ResourceBindingSpec, got Result) {
	t.Helper()
	if len(got.Clusters) == 0 {
		t.Fatalf("success with no clusters")
	}
	names := make([]string, len(got.Clusters))
	var sum int64
	for i, tc := range got.Clusters {
		names[i] = tc.Name
		if tc.Replicas < 0 {
			t.Fatalf("negative replicas: %v", got.Clusters)
		}
		sum += int64(tc.Replicas)
	}
	if !slices.IsSorted(names) {
		t.Fatalf("clusters not sorted: %v", names)
	}
	if m, _ := assignMode(spec, placementOrEmpty(spec)); m != duplicated && sum != int64(spec.Replicas) {
		t.Fatalf("divided %d replicas, placed %d: %v", spec.Replicas, sum, got.Clusters)
	}
}
