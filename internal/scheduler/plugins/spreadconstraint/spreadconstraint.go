// Package spreadconstraint is the plugin for placement.spreadConstraints. It filters out
// clusters that lack the field or label a constraint spreads by, and in the select step picks
// the groups (regions, zones, providers or label values) and the clusters within them.
//
// Defaults, applied here as the controllers do: a constraint with neither spreadByField nor
// spreadByLabel spreads by cluster; minGroups 0 means 1; maxGroups 0 means no limit.
//
// Selection: clusters are ranked by score (high first), then free capacity (when the division
// needs it), then the binding's tie-break rank. A group ranks by its best cluster's score, then
// by the free capacity of all its clusters, then by the rank of its best cluster. The best
// groups are chosen, as many as maxGroups and the clusters' maxGroups allow; the best cluster
// of every chosen group is selected, then the next best clusters of the chosen groups up to
// the clusters' maxGroups. Fewer groups or clusters than minGroups is unschedulable.
//
// At most one constraint may spread by something other than cluster. A cluster listing several
// zones belongs to the group of its first zone.
package spreadconstraint

import (
	"cmp"
	"fmt"
	"slices"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/pkg/scheduler/framework"
)

// Name is the plugin's registry name (Karmada's name for the same plugin).
const Name = "SpreadConstraint"

// Plugin filters and selects clusters by the binding's spread constraints.
type Plugin struct{}

var (
	_ framework.FilterPlugin = Plugin{}
	_ framework.SelectPlugin = Plugin{}
)

// New returns the plugin.
func New() Plugin { return Plugin{} }

// Name implements framework.Plugin.
func (Plugin) Name() string { return Name }

// constraint is a spread constraint with defaults applied.
type constraint struct {
	field policyv1alpha1.SpreadFieldValue // empty when spreading by label
	label string
	min   int
	max   int // 0: no limit
}

// rules are the normalized constraints: at most one by cluster, at most one by a group.
type rules struct {
	cluster *constraint
	group   *constraint
}

func (r rules) empty() bool { return r.cluster == nil && r.group == nil }

// NewFilter rejects clusters without a value for the group constraint's field or label.
func (Plugin) NewFilter(state *framework.CycleState) (framework.Filter, error) {
	r, err := normalize(state.Placement.SpreadConstraints)
	if err != nil || r.group == nil {
		return nil, err
	}
	g := r.group
	reason := "had no " + g.what() + " to spread by"
	return func(c *clusterv1alpha1.Cluster) string {
		if _, ok := g.key(c); ok {
			return ""
		}
		return reason
	}, nil
}

// Select picks the groups and clusters; see the package documentation.
func (Plugin) Select(state *framework.CycleState, candidates []framework.Candidate) ([]framework.Candidate, error) {
	r, err := normalize(state.Placement.SpreadConstraints)
	if err != nil || r.empty() {
		return candidates, err
	}
	sorted := slices.Clone(candidates)
	slices.SortFunc(sorted, compareCandidates)
	maxClusters := 0
	if r.cluster != nil {
		maxClusters = r.cluster.max
	}
	selected := sorted
	if r.group != nil {
		if selected, err = selectGroups(sorted, r.group, maxClusters); err != nil {
			return nil, err
		}
	} else if maxClusters > 0 && len(selected) > maxClusters {
		selected = selected[:maxClusters]
	}
	if r.cluster != nil && len(selected) < r.cluster.min {
		return nil, &framework.UnfitError{Reason: fmt.Sprintf(
			"spread by cluster needs at least %d clusters, %d fit", r.cluster.min, len(selected))}
	}
	return selected, nil
}

// group is the clusters sharing one value of the group constraint, best first.
type group struct {
	members   []int // indexes into the sorted candidates
	available int64
}

// selectGroups chooses the best groups and the clusters in them. sorted is ranked best first;
// maxClusters 0 means no limit.
func selectGroups(sorted []framework.Candidate, g *constraint, maxClusters int) ([]framework.Candidate, error) {
	groups := groupCandidates(sorted, g)
	n := len(groups)
	if g.max > 0 {
		n = min(n, g.max)
	}
	if maxClusters > 0 {
		n = min(n, maxClusters)
	}
	if n < g.min {
		if len(groups) >= g.min {
			return nil, &framework.UnfitError{Reason: fmt.Sprintf(
				"spread by %s needs at least %d groups, but spread by cluster allows at most %d clusters",
				g.what(), g.min, maxClusters)}
		}
		return nil, &framework.UnfitError{Reason: fmt.Sprintf(
			"spread by %s needs at least %d groups, %d fit", g.what(), g.min, len(groups))}
	}
	chosen := groups[:n]

	take := make([]bool, len(sorted))
	count := 0
	for _, gr := range chosen { // the best cluster of every chosen group
		take[gr.members[0]] = true
		count++
	}
	inChosen := make([]bool, len(sorted))
	for _, gr := range chosen {
		for _, i := range gr.members {
			inChosen[i] = true
		}
	}
	for i := range sorted { // then the next best clusters, up to maxClusters
		if maxClusters > 0 && count >= maxClusters {
			break
		}
		if inChosen[i] && !take[i] {
			take[i] = true
			count++
		}
	}
	out := make([]framework.Candidate, 0, count)
	for i, c := range sorted {
		if take[i] {
			out = append(out, c)
		}
	}
	return out, nil
}

// groupCandidates groups the sorted candidates by the constraint's key and ranks the groups.
func groupCandidates(sorted []framework.Candidate, g *constraint) []group {
	index := map[string]int{}
	var groups []group
	for i, c := range sorted {
		key, ok := g.key(c.Cluster)
		if !ok { // the filter keeps these out; a disabled filter must not break selection
			continue
		}
		gi, seen := index[key]
		if !seen {
			gi = len(groups)
			index[key] = gi
			groups = append(groups, group{})
		}
		groups[gi].members = append(groups[gi].members, i)
		groups[gi].available += int64(c.Available)
	}
	slices.SortStableFunc(groups, func(a, b group) int {
		// members[0] is the group's best cluster; sorted puts better clusters first.
		if c := cmp.Compare(sorted[a.members[0]].Tier, sorted[b.members[0]].Tier); c != 0 {
			return c
		}
		if c := cmp.Compare(sorted[b.members[0]].Score, sorted[a.members[0]].Score); c != 0 {
			return c
		}
		if c := cmp.Compare(b.available, a.available); c != 0 {
			return c
		}
		return cmp.Compare(a.members[0], b.members[0])
	})
	return groups
}

// compareCandidates orders the better candidate first: lower overflow tier (the preferred
// group before its overflow groups), higher score, more free capacity, lower tie-break rank,
// then name.
func compareCandidates(a, b framework.Candidate) int {
	if c := cmp.Compare(a.Tier, b.Tier); c != 0 {
		return c
	}
	if c := cmp.Compare(b.Score, a.Score); c != 0 {
		return c
	}
	if c := cmp.Compare(b.Available, a.Available); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Rank, b.Rank); c != 0 {
		return c
	}
	return cmp.Compare(a.Cluster.Name, b.Cluster.Name)
}

// normalize applies the defaults and checks that the constraints can be honoured together.
func normalize(in []policyv1alpha1.SpreadConstraint) (rules, error) {
	var r rules
	for i, sc := range in {
		c, err := normalizeOne(sc)
		if err != nil {
			return rules{}, fmt.Errorf("%w: spreadConstraints[%d]: %v", framework.ErrInvalidPlacement, i, err)
		}
		if c.field == policyv1alpha1.SpreadByFieldCluster {
			if r.cluster != nil {
				return rules{}, fmt.Errorf("%w: spreadConstraints[%d]: more than one constraint spreads by cluster", framework.ErrInvalidPlacement, i)
			}
			r.cluster = &c
			continue
		}
		if r.group != nil {
			return rules{}, fmt.Errorf("%w: spreadConstraints[%d]: only one constraint may spread by something other than cluster (already spreading by %s)", framework.ErrInvalidPlacement, i, r.group.what())
		}
		r.group = &c
	}
	return r, nil
}

func normalizeOne(sc policyv1alpha1.SpreadConstraint) (constraint, error) {
	c := constraint{field: sc.SpreadByField, label: sc.SpreadByLabel, min: sc.MinGroups, max: sc.MaxGroups}
	switch {
	case c.field != "" && c.label != "":
		return c, fmt.Errorf("spreadByField and spreadByLabel are mutually exclusive")
	case c.field == "" && c.label == "":
		c.field = policyv1alpha1.SpreadByFieldCluster
	}
	switch c.field {
	case "", policyv1alpha1.SpreadByFieldCluster, policyv1alpha1.SpreadByFieldRegion,
		policyv1alpha1.SpreadByFieldZone, policyv1alpha1.SpreadByFieldProvider:
	default:
		return c, fmt.Errorf("spreadByField %q: must be one of cluster, region, zone, provider", c.field)
	}
	if c.min < 0 || c.max < 0 {
		return c, fmt.Errorf("minGroups and maxGroups must not be negative")
	}
	if c.min == 0 {
		c.min = 1
	}
	if c.max > 0 && c.max < c.min {
		return c, fmt.Errorf("maxGroups %d is less than minGroups %d", c.max, c.min)
	}
	return c, nil
}

// what names the constraint's grouping in messages: "region", "label topology/rack".
func (c *constraint) what() string {
	if c.label != "" {
		return "label " + c.label
	}
	return string(c.field)
}

// key returns the cluster's group under the constraint, and false when it has none.
func (c *constraint) key(cl *clusterv1alpha1.Cluster) (string, bool) {
	if c.label != "" {
		v, ok := cl.Labels[c.label]
		return v, ok
	}
	var v string
	switch c.field {
	case policyv1alpha1.SpreadByFieldCluster:
		v = cl.Name
	case policyv1alpha1.SpreadByFieldRegion:
		v = cl.Spec.Region
	case policyv1alpha1.SpreadByFieldProvider:
		v = cl.Spec.Provider
	case policyv1alpha1.SpreadByFieldZone:
		v = cl.Spec.Zone
		if len(cl.Spec.Zones) > 0 {
			v = cl.Spec.Zones[0]
		}
	}
	return v, v != ""
}
