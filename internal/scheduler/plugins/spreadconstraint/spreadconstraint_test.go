package spreadconstraint

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
	"github.com/flotilla-io/flotilla/pkg/scheduler/framework"
)

// candidate is a feasible cluster; rank follows the order of creation in each test.
type candidate struct {
	name, region string
	score        int64
	available    int32
}

func build(cs []candidate) []framework.Candidate {
	out := make([]framework.Candidate, len(cs))
	for i, c := range cs {
		out[i] = framework.Candidate{
			Cluster:   st.NewCluster(c.name, st.Region(c.region), st.Label("rack", c.region+"-rack")),
			Score:     c.score,
			Available: c.available,
			Rank:      uint64(i),
		}
	}
	return out
}

func names(cs []framework.Candidate) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Cluster.Name
	}
	return out
}

func byCluster(min, max int) policyv1alpha1.SpreadConstraint {
	return policyv1alpha1.SpreadConstraint{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MinGroups: min, MaxGroups: max}
}

func byRegion(min, max int) policyv1alpha1.SpreadConstraint {
	return policyv1alpha1.SpreadConstraint{SpreadByField: policyv1alpha1.SpreadByFieldRegion, MinGroups: min, MaxGroups: max}
}

func TestSelect(t *testing.T) {
	fleet := []candidate{
		{"a1", "r1", 0, 0}, {"a2", "r1", 0, 0},
		{"b1", "r2", 100, 0}, {"b2", "r2", 0, 0},
		{"c1", "r3", 0, 0},
	}
	tests := []struct {
		name        string
		constraints []policyv1alpha1.SpreadConstraint
		fleet       []candidate
		want        []string
		wantUnfit   string
	}{
		{"no constraints keeps every cluster", nil, fleet, []string{"a1", "a2", "b1", "b2", "c1"}, ""},
		{"by cluster, at most 2: best score, then rank", []policyv1alpha1.SpreadConstraint{byCluster(1, 2)}, fleet, []string{"b1", "a1"}, ""},
		{"empty constraint means by cluster, minGroups 1", []policyv1alpha1.SpreadConstraint{{}}, fleet, []string{"b1", "a1", "a2", "b2", "c1"}, ""},
		{"by cluster, too few", []policyv1alpha1.SpreadConstraint{byCluster(6, 0)}, fleet, nil, "spread by cluster needs at least 6 clusters, 5 fit"},
		{"two best regions, three clusters", []policyv1alpha1.SpreadConstraint{byRegion(1, 2), byCluster(1, 3)}, fleet, []string{"b1", "a1", "a2"}, ""},
		{"every region gets its best cluster first", []policyv1alpha1.SpreadConstraint{byRegion(3, 3), byCluster(1, 3)}, fleet, []string{"b1", "a1", "c1"}, ""},
		{"region without cluster limit takes all its clusters", []policyv1alpha1.SpreadConstraint{byRegion(1, 1)}, fleet, []string{"b1", "b2"}, ""},
		{"too few regions", []policyv1alpha1.SpreadConstraint{byRegion(4, 0), byCluster(1, 0)}, fleet, nil, "spread by region needs at least 4 groups, 3 fit"},
		{"cluster limit below region minimum", []policyv1alpha1.SpreadConstraint{byRegion(3, 0), byCluster(1, 2)}, fleet, nil,
			"spread by region needs at least 3 groups, but spread by cluster allows at most 2 clusters"},
		{"by label", []policyv1alpha1.SpreadConstraint{{SpreadByLabel: "rack", MaxGroups: 1}}, fleet, []string{"b1", "b2"}, ""},
		{"equal scores: the region with more free capacity in all first", []policyv1alpha1.SpreadConstraint{byRegion(1, 1), byCluster(1, 1)},
			[]candidate{{"a1", "r1", 0, 5}, {"b1", "r2", 0, 4}, {"b2", "r2", 0, 4}}, []string{"b1"}, ""},
		{"equal scores: the cluster with more free capacity first", []policyv1alpha1.SpreadConstraint{byCluster(1, 1)},
			[]candidate{{"a1", "r1", 0, 1}, {"b1", "r2", 0, 4}}, []string{"b1"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := st.State(st.Deployment(1))
			state.Placement.SpreadConstraints = tt.constraints
			got, err := New().Select(state, build(tt.fleet))
			if tt.wantUnfit != "" {
				var unfit *framework.UnfitError
				if !errors.As(err, &unfit) || unfit.Reason != tt.wantUnfit {
					t.Fatalf("Select() error = %v, want unfit %q", err, tt.wantUnfit)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, names(got)); diff != "" {
				t.Errorf("selected mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInvalidConstraints(t *testing.T) {
	for name, cs := range map[string][]policyv1alpha1.SpreadConstraint{
		"field and label":         {{SpreadByField: policyv1alpha1.SpreadByFieldRegion, SpreadByLabel: "rack"}},
		"two group constraints":   {byRegion(1, 0), {SpreadByField: policyv1alpha1.SpreadByFieldZone}},
		"two cluster constraints": {byCluster(1, 0), {}},
		"max below min":           {byCluster(3, 2)},
		"negative":                {byCluster(-1, 0)},
		"unknown field":           {{SpreadByField: "rack"}},
	} {
		state := st.State(st.Deployment(1))
		state.Placement.SpreadConstraints = cs
		if _, err := New().Select(state, build([]candidate{{"a", "r", 0, 0}})); !errors.Is(err, framework.ErrInvalidPlacement) {
			t.Errorf("%s: Select() error = %v, want ErrInvalidPlacement", name, err)
		}
		if _, err := New().NewFilter(state); !errors.Is(err, framework.ErrInvalidPlacement) {
			t.Errorf("%s: NewFilter() error = %v, want ErrInvalidPlacement", name, err)
		}
	}
}

func TestFilter(t *testing.T) {
	withRegion := st.NewCluster("with-region", st.Region("r1"), st.Zones("z1", "z2"), st.Provider("aws"), st.Label("rack", "1"))
	bare := st.NewCluster("bare")
	tests := []struct {
		name       string
		constraint policyv1alpha1.SpreadConstraint
		want       map[string]string
	}{
		{"by cluster checks nothing", byCluster(1, 0), map[string]string{"with-region": "", "bare": ""}},
		{"by region", byRegion(1, 0), map[string]string{"with-region": "", "bare": "had no region to spread by"}},
		{"by zone", policyv1alpha1.SpreadConstraint{SpreadByField: policyv1alpha1.SpreadByFieldZone}, map[string]string{"with-region": "", "bare": "had no zone to spread by"}},
		{"by provider", policyv1alpha1.SpreadConstraint{SpreadByField: policyv1alpha1.SpreadByFieldProvider}, map[string]string{"with-region": "", "bare": "had no provider to spread by"}},
		{"by label", policyv1alpha1.SpreadConstraint{SpreadByLabel: "rack"}, map[string]string{"with-region": "", "bare": "had no label rack to spread by"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := st.State(st.Deployment(1))
			state.Placement.SpreadConstraints = []policyv1alpha1.SpreadConstraint{tt.constraint}
			got, err := st.Reasons(New(), state, withRegion, bare)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("reasons mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestZoneGroupIsFirstZone(t *testing.T) {
	c := &constraint{field: policyv1alpha1.SpreadByFieldZone}
	for _, tt := range []struct {
		cluster *clusterv1alpha1.Cluster
		want    string
	}{
		{st.NewCluster("zones", st.Zones("z2", "z1")), "z2"},
		{st.NewCluster("deprecated", func(c *clusterv1alpha1.Cluster) { c.Spec.Zone = "z9" }), "z9"},
	} {
		if got, _ := c.key(tt.cluster); got != tt.want {
			t.Errorf("key(%s) = %q, want %q", tt.cluster.Name, got, tt.want)
		}
	}
}
