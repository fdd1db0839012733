// Package dryrun runs one scheduling cycle without a cluster and explains it: for every
// cluster, each filter's verdict, each score plugin's score and the estimated room, and the
// division that results. `kubectl flotilla schedule --dry-run` prints it; a plugin author
// tests a plugin with it (examples/scheduler-plugin).
//
// It runs the same scheduler as the manager (the default plugins, the extra ones, enabled,
// disabled and weighted by config.Plugins), on the Clusters given as they are. It does not
// know the placements the manager holds for bindings its members have not reported yet, nor
// workload-affinity peers or FederatedResourceQuota usage.
package dryrun

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	"github.com/flotilla-io/flotilla/pkg/scheduler/config"
	"github.com/flotilla-io/flotilla/pkg/scheduler/framework"
)

// Options choose the scheduler's plugins, as the manager's flags do.
type Options struct {
	// ExtraPlugins run after the default ones (manager.WithSchedulerPlugins).
	ExtraPlugins []framework.Plugin
	// Plugins enables, disables and weighs them (--scheduler-plugins, --scheduler-config).
	Plugins config.Plugins
}

// Report is an explained cycle.
type Report struct {
	// Clusters is the resulting placement (spec.clusters); empty when Error says why not.
	Clusters []workv1alpha2.TargetCluster
	// AffinityName is the clusterAffinities group the result uses, or the group explained.
	AffinityName string
	// Error is why the binding cannot be placed, as its Scheduled condition would say.
	Error string
	// Explained are the clusters, in the order given.
	Explained []Cluster
}

// Cluster is one cluster's verdicts.
type Cluster struct {
	Name string
	// Filters are the filters' verdicts in order; an empty Reason passes.
	Filters []Verdict
	// Scores are the score plugins' scores (0-100, before weighting) and weights.
	Scores []Score
	// Room is the estimated room in replicas; math.MaxInt32 when unknown or unbounded.
	Room int32
	// Replicas are what the result gives the cluster.
	Replicas int32
	// Chosen is true when the result places the binding on the cluster.
	Chosen bool
}

// Verdict is a filter's verdict.
type Verdict struct{ Plugin, Reason string }

// Score is a score plugin's score.
type Score struct {
	Plugin string
	Score  int64
	Weight int64
}

// Feasible reports whether every filter passed the cluster.
func (c Cluster) Feasible() bool {
	for _, v := range c.Filters {
		if v.Reason != "" {
			return false
		}
	}
	return true
}

// Total is the weighted sum of the scores.
func (c Cluster) Total() int64 {
	var t int64
	for _, s := range c.Scores {
		t += s.Score * s.Weight
	}
	return t
}

// Run schedules spec on the clusters and explains the result. It fails on a plugin
// configuration the manager would refuse and on a plugin that fails to prepare.
func Run(opts Options, spec *workv1alpha2.ResourceBindingSpec, clusters []*clusterv1alpha1.Cluster) (*Report, error) {
	s, err := scheduler.New(scheduler.Options{ExtraPlugins: opts.ExtraPlugins, Plugins: opts.Plugins})
	if err != nil {
		return nil, err
	}
	ex, err := s.Explain(scheduler.Input{Spec: spec}, clusters)
	if err != nil {
		return nil, err
	}
	r := &Report{Clusters: ex.Result.Clusters, AffinityName: ex.AffinityName}
	if ex.Err != nil {
		r.Error = ex.Err.Error()
	}
	placed := map[string]int32{}
	for _, tc := range ex.Result.Clusters {
		placed[tc.Name] = tc.Replicas
	}
	for _, c := range ex.Clusters {
		out := Cluster{Name: c.Cluster, Room: c.Room}
		if !c.RoomKnown {
			out.Room = math.MaxInt32
		}
		out.Replicas, out.Chosen = placed[c.Cluster]
		for _, f := range c.Filters {
			out.Filters = append(out.Filters, Verdict{Plugin: f.Plugin, Reason: f.Reason})
		}
		for _, sc := range c.Scores {
			out.Scores = append(out.Scores, Score{Plugin: sc.Plugin, Score: sc.Score, Weight: sc.Weight})
		}
		r.Explained = append(r.Explained, out)
	}
	return r, nil
}

// Binding returns the binding spec the detector would make of a template under a
// placement: the template's reference, its replicas and what one replica requests, as the
// built-in interpreter reads them (Deployment, StatefulSet, ReplicaSet, Job, Pod; other
// kinds have no replicas).
func Binding(placement *policyv1alpha1.Placement, template *unstructured.Unstructured) (*workv1alpha2.ResourceBindingSpec, error) {
	replicas, req, err := interpreter.Interpreter{}.GetReplicas(template)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", template.GetKind(), template.GetName(), err)
	}
	uid := template.GetUID()
	if uid == "" {
		uid = "dry-run"
	}
	return &workv1alpha2.ResourceBindingSpec{
		Resource: workv1alpha2.ObjectReference{APIVersion: template.GetAPIVersion(), Kind: template.GetKind(),
			Namespace: template.GetNamespace(), Name: template.GetName(), UID: uid},
		Replicas: replicas, ReplicaRequirements: req, Placement: placement.DeepCopy(),
	}, nil
}

// Print writes the report as a table: a row per cluster with its verdict (the first
// filter's reason, or "fits"), its room, each score and the replicas it gets; then the
// division, or why there is none.
func Print(w io.Writer, r *Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	var scoreNames []string
	if len(r.Explained) > 0 {
		for _, s := range r.Explained[0].Scores {
			name := s.Plugin
			if s.Weight != 1 {
				name += fmt.Sprintf("(x%d)", s.Weight)
			}
			scoreNames = append(scoreNames, strings.ToUpper(name))
		}
	}
	header := append([]string{"CLUSTER", "FILTERS", "ROOM"}, scoreNames...)
	header = append(header, "TOTAL", "REPLICAS")
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, c := range r.Explained {
		verdict := "fits"
		for _, f := range c.Filters {
			if f.Reason != "" {
				verdict = f.Plugin + ": " + f.Reason
				break
			}
		}
		room := "-"
		if c.Room != math.MaxInt32 {
			room = fmt.Sprint(c.Room)
		}
		row := []string{c.Name, verdict, room}
		for _, s := range c.Scores {
			row = append(row, fmt.Sprint(s.Score))
		}
		replicas := "-"
		if c.Chosen {
			replicas = fmt.Sprint(c.Replicas)
		}
		row = append(row, fmt.Sprint(c.Total()), replicas)
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.AffinityName != "" {
		fmt.Fprintf(w, "\nclusterAffinities group: %s\n", r.AffinityName)
	}
	if r.Error != "" {
		_, err := fmt.Fprintf(w, "\nNot schedulable: %s\n", r.Error)
		return err
	}
	parts := make([]string, len(r.Clusters))
	for i, tc := range r.Clusters {
		parts[i] = fmt.Sprintf("%s: %d", tc.Name, tc.Replicas)
	}
	_, err := fmt.Fprintf(w, "\nResult: %s\n", strings.Join(parts, ", "))
	return err
}

// Verbose writes every filter's verdict of every cluster, not only the first rejection.
func Verbose(w io.Writer, r *Report) error {
	for _, c := range r.Explained {
		if _, err := fmt.Fprintf(w, "%s:\n", c.Name); err != nil {
			return err
		}
		for _, f := range c.Filters {
			reason := "pass"
			if f.Reason != "" {
				reason = "reject: " + f.Reason
			}
			fmt.Fprintf(w, "  filter %-24s %s\n", f.Plugin, reason)
		}
		for _, s := range c.Scores {
			fmt.Fprintf(w, "  score  %-24s %d x %d\n", s.Plugin, s.Score, s.Weight)
		}
	}
	return nil
}
