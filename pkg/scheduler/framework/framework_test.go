package framework

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

type fakeFilter struct{ name string }

func (f fakeFilter) Name() string { return f.name }
func (fakeFilter) NewFilter(*CycleState) (Filter, error) {
	return func(*clusterv1alpha1.Cluster) string { return "" }, nil
}

type fakeScorer struct{ name string }

func (f fakeScorer) Name() string                        { return f.name }
func (fakeScorer) NewScorer(*CycleState) (Scorer, error) { return nil, nil }

type notAPlugin struct{}

func (notAPlugin) Name() string { return "Nothing" }

func TestRegistry(t *testing.T) {
	r, err := NewRegistry(fakeFilter{"A"}, fakeScorer{"B"}, fakeFilter{"C"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"A", "B", "C"}, r.Names()); diff != "" {
		t.Errorf("Names() mismatch (-want +got):\n%s", diff)
	}
	if err := r.Disable("A"); err != nil {
		t.Fatal(err)
	}
	if got := len(r.Filters()); got != 1 {
		t.Errorf("Filters() after disabling A: %d plugins, want 1", got)
	}
	if got := len(r.Scorers()); got != 1 {
		t.Errorf("Scorers(): %d plugins, want 1", got)
	}
	for name, err := range map[string]error{
		"duplicate name": r.Register(fakeFilter{"B"}),
		"empty name":     r.Register(fakeFilter{""}),
		"nil plugin":     r.Register(nil),
		"no interface":   r.Register(notAPlugin{}),
		"unknown name":   r.Disable("Typo"),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestTieBreaker(t *testing.T) {
	a, b := NewTieBreaker("uid-1"), NewTieBreaker("uid-2")
	if a.Rank("member1") != NewTieBreaker("uid-1").Rank("member1") {
		t.Error("Rank is not deterministic")
	}
	if a.Rank("member1") == b.Rank("member1") {
		t.Error("different seeds gave the same rank")
	}
	if NewTieBreaker("ab").Rank("c") == NewTieBreaker("a").Rank("bc") {
		t.Error("seed and name run together")
	}
	// Over many seeds, each of three clusters should rank first about a third of the time.
	first := map[string]int{}
	const seeds = 3000
	names := []string{"member1", "member2", "member3"}
	for i := 0; i < seeds; i++ {
		tb := NewTieBreaker("template-" + strconv.Itoa(i))
		best := names[0]
		for _, n := range names[1:] {
			if tb.Rank(n) < tb.Rank(best) {
				best = n
			}
		}
		first[best]++
	}
	for _, n := range names {
		if first[n] < seeds/3-150 || first[n] > seeds/3+150 {
			t.Errorf("%s ranked first %d of %d times, want about a third: %v", n, first[n], seeds, first)
		}
	}
}

func TestCycleState(t *testing.T) {
	s := NewCycleState(&workv1alpha2.ResourceBindingSpec{Clusters: []workv1alpha2.TargetCluster{{Name: "m1", Replicas: 2}}}, nil, "seed")
	if !s.IsScheduled("m1") || s.IsScheduled("m2") || s.ScheduledReplicas("m1") != 2 {
		t.Errorf("scheduled clusters not read from spec.clusters")
	}
	if s.Placement == nil || s.Status == nil {
		t.Errorf("nil placement or status not defaulted")
	}
	g := s.WithAffinity("primary", nil)
	if g.AffinityName != "primary" || s.AffinityName != "" {
		t.Errorf("WithAffinity changed the original or did not set the name")
	}
	if NewCycleState(nil, nil, "").Spec == nil {
		t.Errorf("nil spec not defaulted")
	}
}

func TestWithGroup(t *testing.T) {
	s := NewCycleState(nil, nil, "seed")
	g := &policyv1alpha1.ClusterAffinityTerm{AffinityName: "idc", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"a"}},
		OverflowAffinities: []policyv1alpha1.OverflowAffinityTerm{
			{AffinityName: "cloud-1", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"b"}}},
			{AffinityName: "cloud-2", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"c"}}},
		}}
	got := s.WithGroup(g)
	var names []string
	for _, tier := range got.Tiers {
		names = append(names, tier.Name+":"+tier.Affinity.ClusterNames[0])
	}
	if diff := cmp.Diff([]string{"idc:a", "cloud-1:b", "cloud-2:c"}, names); diff != "" {
		t.Errorf("tiers (-want +got):\n%s", diff)
	}
	if got.AffinityName != "idc" || got.Affinity != &g.ClusterAffinity || s.Tiers != nil {
		t.Errorf("WithGroup set %q/%v, or changed the original", got.AffinityName, got.Affinity)
	}
	if plain := got.WithAffinity("other", nil); plain.Tiers != nil {
		t.Errorf("WithAffinity kept the tiers of the previous group")
	}
	if s.WithGroup(&policyv1alpha1.ClusterAffinityTerm{AffinityName: "x"}).Tiers != nil {
		t.Errorf("a group without overflowAffinities has tiers")
	}
}
