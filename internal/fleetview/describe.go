package fleetview

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/bindings"
)

// ClusterDescription is a Cluster and the bindings placed on it.
type ClusterDescription struct {
	Cluster  *clusterv1alpha1.Cluster
	Bindings []PlacedBinding
}

// PlacedBinding is a binding that targets the cluster.
type PlacedBinding struct {
	Ref
	Template Ref
	// Replicas the scheduler gave the cluster.
	Replicas int32
}

// DescribeCluster reads the Cluster and lists the ResourceBindings and
// ClusterResourceBindings whose spec.clusters name it.
func (h *Host) DescribeCluster(ctx context.Context, name string) (*ClusterDescription, error) {
	c := &clusterv1alpha1.Cluster{}
	if err := h.Client.Get(ctx, client.ObjectKey{Name: name}, c); err != nil {
		return nil, fmt.Errorf("get cluster %q: %w", name, err)
	}
	d := &ClusterDescription{Cluster: c}
	rbs := &workv1alpha2.ResourceBindingList{}
	if err := h.Client.List(ctx, rbs); err != nil {
		return nil, fmt.Errorf("list ResourceBindings: %w", err)
	}
	crbs := &workv1alpha2.ClusterResourceBindingList{}
	if err := h.Client.List(ctx, crbs); err != nil {
		return nil, fmt.Errorf("list ClusterResourceBindings: %w", err)
	}
	add := func(rb client.Object) {
		spec := bindings.Spec(rb)
		for _, t := range bindings.Targets(spec) {
			if t.Name == name {
				r := spec.Resource
				d.Bindings = append(d.Bindings, PlacedBinding{
					Ref:      Ref{Kind: bindings.Kind(rb), Namespace: rb.GetNamespace(), Name: rb.GetName()},
					Template: Ref{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}, Replicas: t.Replicas,
				})
				return
			}
		}
	}
	for i := range rbs.Items {
		add(&rbs.Items[i])
	}
	for i := range crbs.Items {
		add(&crbs.Items[i])
	}
	slices.SortFunc(d.Bindings, func(a, b PlacedBinding) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return d, nil
}

// rbacEscalation says whether the member credential may propagate RBAC objects granting
// rights it does not hold: the opt-in join and register record on the Cluster.
func rbacEscalation(c *clusterv1alpha1.Cluster) string {
	if c.Annotations[wellknown.AllowRBACEscalationAnnotation] == "true" {
		return "allowed (joined with --allow-rbac-escalation)"
	}
	return "not allowed"
}

// PrintClusterDescription writes the description the way kubectl describe does.
func PrintClusterDescription(w io.Writer, d *ClusterDescription, now time.Time) error {
	c := d.Cluster
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	field := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, cmp.Or(v, "<none>")) }
	field("Name", c.Name)
	field("Labels", mapString(c.Labels))
	field("Mode", string(c.Spec.SyncMode))
	field("API Endpoint", c.Spec.APIEndpoint)
	if ref := c.Spec.SecretRef; ref != nil {
		field("Secret", ref.Namespace+"/"+ref.Name)
	} else {
		field("Secret", "")
	}
	field("Provider", c.Spec.Provider)
	field("Region", c.Spec.Region)
	field("Zones", strings.Join(append(slices.Clone(c.Spec.Zones), zoneIfAny(c)...), ","))
	field("Kubernetes Version", c.Status.KubernetesVersion)
	field("API Enablements", fmt.Sprintf("%d group versions", len(c.Status.APIEnablements)))
	field("RBAC Escalation", rbacEscalation(c))
	field("Age", duration.HumanDuration(now.Sub(c.CreationTimestamp.Time)))
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w, "Conditions:")
	if len(c.Status.Conditions) == 0 {
		fmt.Fprintln(w, "  <none>")
	} else {
		tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "  TYPE\tSTATUS\tREASON\tLAST TRANSITION\tMESSAGE")
		for _, cond := range c.Status.Conditions {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s ago\t%s\n", cond.Type, cond.Status, cmp.Or(cond.Reason, none),
				duration.HumanDuration(now.Sub(cond.LastTransitionTime.Time)), oneLine(cond.Message))
		}
		tw.Flush()
	}

	fmt.Fprint(w, "Nodes:")
	if n := c.Status.NodeSummary; n != nil {
		fmt.Fprintf(w, " %d/%d ready\n", n.ReadyNum, n.TotalNum)
	} else {
		fmt.Fprintln(w, " <unknown>")
	}

	fmt.Fprintln(w, "Resources:")
	if s := c.Status.ResourceSummary; s == nil || len(s.Allocatable) == 0 {
		fmt.Fprintln(w, "  <unknown>")
	} else {
		var names []corev1.ResourceName
		for n := range s.Allocatable {
			names = append(names, n)
		}
		slices.Sort(names)
		tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "  RESOURCE\tALLOCATABLE\tALLOCATED\tALLOCATING")
		for _, n := range names {
			q := func(l corev1.ResourceList) string {
				if v, ok := l[n]; ok {
					return v.String()
				}
				return "0"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", n, q(s.Allocatable), q(s.Allocated), q(s.Allocating))
		}
		tw.Flush()
	}

	fmt.Fprintln(w, "Taints:")
	if len(c.Spec.Taints) == 0 {
		fmt.Fprintln(w, "  <none>")
	}
	for _, t := range c.Spec.Taints {
		fmt.Fprintln(w, "  "+t.ToString())
	}

	fmt.Fprintf(w, "Bindings (%d):\n", len(d.Bindings))
	if len(d.Bindings) == 0 {
		fmt.Fprintln(w, "  <none>")
		return nil
	}
	tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  KIND\tNAMESPACE\tNAME\tTEMPLATE\tREPLICAS")
	for _, b := range d.Bindings {
		replicas := none
		if b.Replicas > 0 {
			replicas = fmt.Sprint(b.Replicas)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", b.Kind, cmp.Or(b.Namespace, none), b.Name, b.Template, replicas)
	}
	return tw.Flush()
}

func zoneIfAny(c *clusterv1alpha1.Cluster) []string {
	if c.Spec.Zone != "" && !slices.Contains(c.Spec.Zones, c.Spec.Zone) {
		return []string{c.Spec.Zone}
	}
	return nil
}

func mapString(m map[string]string) string {
	var kv []string
	for k, v := range m {
		kv = append(kv, k+"="+v)
	}
	slices.Sort(kv)
	return strings.Join(kv, ",")
}
