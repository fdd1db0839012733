// Package dashboard is `kubectl flotilla dashboard`: a read-only web page, served on
// 127.0.0.1 with the user's own kubeconfig, that shows the fleet's Clusters (health,
// capacity, taints), each template's placement and per-cluster readiness from its
// ResourceBinding or ClusterResourceBinding status, and progressive rollouts (stages, each
// cluster's revision) from Rollouts when the host serves them. The server watches those kinds through
// informers and pushes the re-rendered page body to the browser with Server-Sent Events.
//
// BuildView is the pure core (objects → view model); Render and the server are the shell.
package dashboard

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/clusterstatus"
	"github.com/flotilla-io/flotilla/internal/fleetview"
)

const none = "-"

// View is what the page shows.
type View struct {
	Clusters  []ClusterRow
	Templates []TemplateRow
	// Rollouts are the progressive rollouts (rollouts.flotilla.io); nil when the host does
	// not serve them or the user cannot list them (RolloutsOff says why).
	Rollouts    []RolloutRow
	RolloutsOff string
	// Updated is when the view was built.
	Updated time.Time
}

// ClusterRow is one Cluster.
type ClusterRow struct {
	Name, Mode, Version string
	// Origin is where the Cluster came from: joined, registered or cluster-api.
	Origin string
	// Ready is the Ready condition's status (True, False, Unknown); Reason and Message follow
	// it when it is not True.
	Ready, Reason, Message string
	Nodes                  string
	// CPU and Memory are allocated/allocatable.
	CPU, Memory string
	Taints      []string
	Location    string
}

// TemplateRow is one binding: its template and where it is placed.
type TemplateRow struct {
	Kind, Namespace, Name string
	Binding               string
	// Scheduled and FullyApplied are the conditions' status ("Unknown" when absent).
	Scheduled, FullyApplied string
	// ClustersReady is status.clustersReady.
	ClustersReady string
	Placement     []Placement
}

// Placement is the template in one cluster.
type Placement struct {
	Cluster string
	// Replicas the scheduler gave the cluster; "" without replicas.
	Replicas string
	// Applied is "True", "False" or "Unknown" (no status yet); Health is the reflected
	// health; Ready is ready/total replicas when the status has them.
	Applied, Health, Ready string
	Message                string
}

// State is a placement's overall state, for the page's colours: ok, bad or pending.
func (p Placement) State() string {
	switch {
	case p.Applied == "False" || p.Health == "Unhealthy":
		return "bad"
	case p.Applied == "True" && p.Health == "Healthy":
		return "ok"
	}
	return "pending"
}

// BuildView turns the host's objects into the view: clusters by name, templates by kind,
// namespace and name, placements in the binding's cluster order.
func BuildView(clusters []clusterv1alpha1.Cluster, rbs []workv1alpha2.ResourceBinding, crbs []workv1alpha2.ClusterResourceBinding, now time.Time) View {
	v := View{Updated: now}
	for i := range clusters {
		v.Clusters = append(v.Clusters, clusterRow(&clusters[i]))
	}
	slices.SortFunc(v.Clusters, func(a, b ClusterRow) int { return cmp.Compare(a.Name, b.Name) })
	for i := range rbs {
		v.Templates = append(v.Templates, templateRow("ResourceBinding", rbs[i].Namespace, rbs[i].Name, &rbs[i].Spec, &rbs[i].Status))
	}
	for i := range crbs {
		v.Templates = append(v.Templates, templateRow("ClusterResourceBinding", "", crbs[i].Name, &crbs[i].Spec, &crbs[i].Status))
	}
	slices.SortFunc(v.Templates, func(a, b TemplateRow) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return v
}

func clusterRow(c *clusterv1alpha1.Cluster) ClusterRow {
	r := ClusterRow{Name: c.Name, Mode: string(c.Spec.SyncMode), Origin: clusterstatus.Origin(c), Version: cmp.Or(c.Status.KubernetesVersion, none),
		Ready: "Unknown", Nodes: none, CPU: none, Memory: none}
	if cond := meta.FindStatusCondition(c.Status.Conditions, wellknown.ClusterConditionReady); cond != nil {
		r.Ready = string(cond.Status)
		if cond.Status != "True" {
			r.Reason, r.Message = cond.Reason, cond.Message
		}
	}
	if n := c.Status.NodeSummary; n != nil {
		r.Nodes = fmt.Sprintf("%d/%d", n.ReadyNum, n.TotalNum)
	}
	if s := c.Status.ResourceSummary; s != nil {
		r.CPU = clusterstatus.Usage(s, corev1.ResourceCPU, clusterstatus.FormatCPU, " / ")
		r.Memory = clusterstatus.Usage(s, corev1.ResourceMemory, clusterstatus.FormatBytes, " / ")
	}
	for _, t := range c.Spec.Taints {
		r.Taints = append(r.Taints, t.ToString())
	}
	var loc []string
	for _, p := range []string{c.Spec.Provider, c.Spec.Region, c.Spec.Zone} {
		if p != "" {
			loc = append(loc, p)
		}
	}
	r.Location = cmp.Or(joinSlash(loc), none)
	return r
}

func joinSlash(s []string) string {
	out := ""
	for i, p := range s {
		if i > 0 {
			out += "/"
		}
		out += p
	}
	return out
}

func templateRow(kind, ns, name string, spec *workv1alpha2.ResourceBindingSpec, st *workv1alpha2.ResourceBindingStatus) TemplateRow {
	r := spec.Resource
	row := TemplateRow{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, Binding: kind + " " + qualified(ns, name),
		Scheduled: condition(st, wellknown.ConditionScheduled), FullyApplied: condition(st, wellknown.ConditionFullyApplied),
		ClustersReady: cmp.Or(st.ClustersReady, none)}
	status := map[string]workv1alpha2.AggregatedStatusItem{}
	for _, a := range st.AggregatedStatus {
		status[a.ClusterName] = a
	}
	for _, t := range spec.Clusters {
		p := Placement{Cluster: t.Name, Applied: "Unknown", Health: "Unknown", Ready: none}
		if t.Replicas > 0 {
			p.Replicas = strconv.Itoa(int(t.Replicas))
		}
		if a, ok := status[t.Name]; ok {
			p.Applied = "False"
			if a.Applied {
				p.Applied = "True"
			}
			p.Health = cmp.Or(string(a.Health), "Unknown")
			p.Ready = cmp.Or(fleetview.ReadyReplicas(a.Status), none)
			p.Message = a.AppliedMessage
		}
		row.Placement = append(row.Placement, p)
	}
	return row
}

func qualified(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

func condition(st *workv1alpha2.ResourceBindingStatus, t string) string {
	if c := meta.FindStatusCondition(st.Conditions, t); c != nil {
		return string(c.Status)
	}
	return "Unknown"
}
