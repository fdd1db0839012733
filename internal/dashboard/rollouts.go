package dashboard

import (
	"cmp"
	"fmt"
	"slices"

	rolloutsv1alpha1 "github.com/flotilla-io/flotilla/api/rollouts/v1alpha1"
)

// RolloutRow is one template's progressive rollout: its phase, stages and the revision each
// cluster runs.
type RolloutRow struct {
	Namespace, Name string
	// Template is KIND NAME of the template rolled out.
	Template string
	Phase    string
	// Revision is the revision rolled out, Stable the last one every cluster ran.
	Revision, Stable string
	// Halt says where and why the rollout stopped; "" when it did not.
	Halt string
	// Budget is unavailable/maxUnavailable across the fleet; "" without a budget.
	Budget   string
	Stages   []RolloutStage
	Clusters []RolloutCluster
}

// RolloutStage is one stage and its phase.
type RolloutStage struct {
	Name, Phase string
	Clusters    int
}

// RolloutCluster is one cluster's revision and phase in the rollout.
type RolloutCluster struct {
	Name, Stage, Revision, Phase, Health string
	// Current reports whether the cluster runs the revision rolled out.
	Current bool
}

// State is a cluster's state for the page's colours: ok, bad or pending.
func (c RolloutCluster) State() string {
	switch c.Phase {
	case string(rolloutsv1alpha1.ClusterFailed):
		return "bad"
	case string(rolloutsv1alpha1.ClusterDone):
		return "ok"
	}
	return "pending"
}

// RolloutRows turns the host's Rollouts into rows, by namespace and name, revisions shortened
// to their first 10 characters.
func RolloutRows(items []rolloutsv1alpha1.Rollout) []RolloutRow {
	rows := make([]RolloutRow, 0, len(items))
	for i := range items {
		r := &items[i]
		st := &r.Status
		row := RolloutRow{
			Namespace: r.Namespace, Name: r.Name,
			Template: cmp.Or(st.Resource.Kind, "?") + " " + cmp.Or(st.Resource.Name, r.Name),
			Phase:    cmp.Or(string(st.Phase), "Unknown"),
			Revision: short(st.Revision), Stable: short(st.StableRevision),
		}
		if h := st.Halt; h != nil {
			row.Halt = fmt.Sprintf("stage %s, cluster %s: %s", h.Stage, h.Cluster, h.Reason)
		}
		if st.MaxUnavailable != nil {
			row.Budget = fmt.Sprintf("%d/%d", st.Unavailable, *st.MaxUnavailable)
		}
		for _, s := range st.Stages {
			row.Stages = append(row.Stages, RolloutStage{Name: s.Name, Phase: cmp.Or(string(s.Phase), "Pending"), Clusters: len(s.Clusters)})
		}
		for _, c := range st.Clusters {
			row.Clusters = append(row.Clusters, RolloutCluster{
				Name: c.Name, Stage: c.Stage, Revision: short(c.Revision), Phase: cmp.Or(string(c.Phase), "Waiting"),
				Health: cmp.Or(c.Health, none), Current: c.Revision != "" && c.Revision == st.Revision,
			})
		}
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b RolloutRow) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return rows
}

func short(rev string) string {
	if rev == "" {
		return none
	}
	if len(rev) > 10 {
		return rev[:10]
	}
	return rev
}
