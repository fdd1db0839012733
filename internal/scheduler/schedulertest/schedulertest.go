// Package schedulertest builds Cluster and binding objects for scheduler tests.
package schedulertest

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/pkg/scheduler/framework"
)

// ClusterOption changes a test cluster.
type ClusterOption func(*clusterv1alpha1.Cluster)

// NewCluster returns a Push cluster that serves apps/v1 Deployment, batch/v1 Job and v1
// ConfigMap, changed by the options.
func NewCluster(name string, opts ...ClusterOption) *clusterv1alpha1.Cluster {
	c := &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push},
		Status: clusterv1alpha1.ClusterStatus{APIEnablements: []clusterv1alpha1.APIEnablement{
			{GroupVersion: "v1", Resources: []clusterv1alpha1.APIResource{{Name: "configmaps", Kind: "ConfigMap"}}},
			{GroupVersion: "apps/v1", Resources: []clusterv1alpha1.APIResource{{Name: "deployments", Kind: "Deployment"}}},
			{GroupVersion: "batch/v1", Resources: []clusterv1alpha1.APIResource{{Name: "jobs", Kind: "Job"}}},
		}},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Region sets spec.region.
func Region(r string) ClusterOption { return func(c *clusterv1alpha1.Cluster) { c.Spec.Region = r } }

// Provider sets spec.provider.
func Provider(p string) ClusterOption {
	return func(c *clusterv1alpha1.Cluster) { c.Spec.Provider = p }
}

// Zones sets spec.zones.
func Zones(z ...string) ClusterOption { return func(c *clusterv1alpha1.Cluster) { c.Spec.Zones = z } }

// Label adds a label.
func Label(key, value string) ClusterOption {
	return func(c *clusterv1alpha1.Cluster) {
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels[key] = value
	}
}

// Taint adds a taint.
func Taint(key, value string, effect corev1.TaintEffect) ClusterOption {
	return func(c *clusterv1alpha1.Cluster) {
		c.Spec.Taints = append(c.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	}
}

// NoAPIs clears status.apiEnablements, as before the cluster controller first collects them.
func NoAPIs() ClusterOption {
	return func(c *clusterv1alpha1.Cluster) { c.Status.APIEnablements = nil }
}

// Deleting sets a deletionTimestamp.
func Deleting() ClusterOption {
	return func(c *clusterv1alpha1.Cluster) {
		now := metav1.Unix(1_700_000_000, 0)
		c.DeletionTimestamp = &now
	}
}

// Resources sets status.resourceSummary from "name=quantity" maps.
func Resources(allocatable, allocated map[string]string) ClusterOption {
	return func(c *clusterv1alpha1.Cluster) {
		c.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{
			Allocatable: List(allocatable),
			Allocated:   List(allocated),
		}
	}
}

// List turns a "name=quantity" map into a ResourceList.
func List(m map[string]string) corev1.ResourceList {
	if m == nil {
		return nil
	}
	l := corev1.ResourceList{}
	for k, v := range m {
		l[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return l
}

// Deployment returns a binding spec for a Deployment with the replicas.
func Deployment(replicas int32) *workv1alpha2.ResourceBindingSpec {
	return &workv1alpha2.ResourceBindingSpec{
		Resource: workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: "web", UID: "uid-web"},
		Replicas: replicas,
	}
}

// State returns the cycle state of a spec, seeded with "seed".
func State(spec *workv1alpha2.ResourceBindingSpec) *framework.CycleState {
	return framework.NewCycleState(spec, nil, "seed")
}

// Reasons runs a filter plugin over the clusters and returns the reason per cluster name ("" for
// a fit).
func Reasons(p framework.FilterPlugin, state *framework.CycleState, clusters ...*clusterv1alpha1.Cluster) (map[string]string, error) {
	f, err := p.NewFilter(state)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(clusters))
	for _, c := range clusters {
		if f == nil {
			out[c.Name] = ""
			continue
		}
		out[c.Name] = f(c)
	}
	return out, nil
}

// Nodes adds a node group of count nodes, each with free ("name=quantity") free, to
// status.resourceSummary.nodeGroups, and their free amounts to its allocatable.
func Nodes(count int32, free map[string]string, labels ...string) ClusterOption {
	return func(c *clusterv1alpha1.Cluster) {
		if c.Status.ResourceSummary == nil {
			c.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{}
		}
		rs := c.Status.ResourceSummary
		g := clusterv1alpha1.NodeGroup{Count: count, Free: List(free)}
		for i := 0; i+1 < len(labels); i += 2 {
			if g.Labels == nil {
				g.Labels = map[string]string{}
			}
			g.Labels[labels[i]] = labels[i+1]
		}
		rs.NodeGroups = append(rs.NodeGroups, g)
		if rs.Allocatable == nil {
			rs.Allocatable = corev1.ResourceList{}
		}
		for name, q := range g.Free {
			total := rs.Allocatable[name]
			for range count {
				total.Add(q)
			}
			rs.Allocatable[name] = total
		}
	}
}
