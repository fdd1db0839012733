package scheduler

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/flotilla-io/flotilla/pkg/scheduler/framework"
)

// ErrInvalidPlacement marks errors caused by a placement that cannot be scheduled as written
// (an invalid selector, unsupported spread constraints or weight preference). Retrying does
// not help until the policy changes; a reconciler may wrap such errors in
// reconcile.TerminalError. Test with errors.Is.
var ErrInvalidPlacement = framework.ErrInvalidPlacement

// Rejection says why one cluster was filtered out.
type Rejection struct {
	// Cluster is the cluster's name.
	Cluster string
	// Plugin is the filter plugin that rejected it.
	Plugin string
	// Reason reads after a count: "did not match the cluster affinity".
	Reason string
}

// UnschedulableError says that no placement satisfies the binding with the clusters as they
// are now. It is not an internal error: the binding should be retried when clusters change.
// Use errors.As to tell it apart from other errors.
type UnschedulableError struct {
	// Clusters is the number of clusters considered.
	Clusters int
	// Rejections are the clusters the filters removed, sorted by cluster name.
	Rejections []Rejection
	// Reason is set when the feasible clusters, together, could not satisfy the binding: a
	// spread constraint or the capacity for the replicas.
	Reason string
	// AffinityName is the clusterAffinities group this failure is about; empty without groups.
	AffinityName string
	// Groups holds the failure of every clusterAffinities group tried, in order. When set,
	// the other fields are empty.
	Groups []*UnschedulableError
}

// Error renders, for example, "0/5 clusters are available: 2 had untolerated taint
// {cluster.karmada.io/not-ready}, 3 did not match the cluster affinity". Reasons are counted
// and the "count reason" strings sorted, so the message is deterministic.
func (e *UnschedulableError) Error() string {
	if len(e.Groups) > 0 {
		parts := make([]string, len(e.Groups))
		for i, g := range e.Groups {
			parts[i] = fmt.Sprintf("group %q: %s", g.AffinityName, g.Error())
		}
		return "no clusterAffinities group fits: " + strings.Join(parts, "; ")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d/%d clusters are available", e.Clusters-len(e.Rejections), e.Clusters)
	if len(e.Rejections) > 0 {
		b.WriteString(": ")
		b.WriteString(strings.Join(countReasons(e.Rejections), ", "))
	}
	if e.Reason != "" {
		b.WriteString("; ")
		b.WriteString(e.Reason)
	}
	return b.String()
}

// countReasons returns "count reason" for every distinct reason, sorted.
func countReasons(rejections []Rejection) []string {
	counts := map[string]int{}
	for _, r := range rejections {
		counts[r.Reason]++
	}
	out := make([]string, 0, len(counts))
	for reason, n := range counts {
		out = append(out, strconv.Itoa(n)+" "+reason)
	}
	slices.Sort(out)
	return out
}
