package clusterprofile

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	inventoryv1alpha1 "github.com/flotilla-io/flotilla/api/clusterinventory/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
)

// Property names. The first three are well-known names (KEP-2149's cluster id, the topology
// labels of nodes); the others are Flotilla's own.
const (
	// PropertyClusterID is the Cluster's spec.id (by default the UID of the member's
	// kube-system namespace, as KEP-2149 suggests for cluster.clusterset.k8s.io).
	PropertyClusterID = "cluster.clusterset.k8s.io"
	// PropertyRegion is the Cluster's spec.region.
	PropertyRegion = "topology.kubernetes.io/region"
	// PropertyZones is the Cluster's spec.zones (or its deprecated spec.zone), comma-separated.
	PropertyZones = "topology.kubernetes.io/zone"
	// PropertyProvider is the Cluster's spec.provider.
	PropertyProvider = "flotilla.io/provider"
	// PropertySyncMode is Push or Pull.
	PropertySyncMode = "flotilla.io/sync-mode"
	// PropertyNodeCount and PropertyReadyNodeCount count the member's nodes.
	PropertyNodeCount      = "flotilla.io/node-count"
	PropertyReadyNodeCount = "flotilla.io/ready-node-count"
	// PropertyCPUAllocatable and PropertyMemoryAllocatable sum the nodes' allocatable CPU
	// and memory; the Available ones subtract what pods request (scheduled or not yet), as
	// the scheduler counts it.
	PropertyCPUAllocatable    = "flotilla.io/cpu-allocatable"
	PropertyCPUAvailable      = "flotilla.io/cpu-available"
	PropertyMemoryAllocatable = "flotilla.io/memory-allocatable"
	PropertyMemoryAvailable   = "flotilla.io/memory-available"
)

// Condition reasons of the profile's own making; ControlPlaneHealthy otherwise carries the
// reason of the Cluster's Ready condition (ClusterReady, ClusterNotReady, ClusterNotReachable).
const (
	ReasonStatusUnknown = "ClusterStatusUnknown"
	ReasonJoined        = "ClusterJoined"
)

// Input is what a ClusterProfile is computed from.
type Input struct {
	// Cluster is the member.
	Cluster *clusterv1alpha1.Cluster
	// Namespace is where the profile is written.
	Namespace string
	// CABundle is the PEM CA of the member's apiserver (the caBundle of the Cluster's
	// credentials Secret), or nil.
	CABundle []byte
	// AccessProviders are the names the profile's access providers are published under.
	AccessProviders []string
}

// Desired returns the ClusterProfile of in.Cluster: its metadata (name, namespace, labels,
// owner), spec and status. It reads nothing but its input, and returns the same profile for
// the same input, so that a profile that did not change is not written again.
func Desired(in Input) *inventoryv1alpha1.ClusterProfile {
	c := in.Cluster
	p := &inventoryv1alpha1.ClusterProfile{
		TypeMeta: metav1.TypeMeta{APIVersion: inventoryv1alpha1.GroupVersion.String(), Kind: "ClusterProfile"},
		ObjectMeta: metav1.ObjectMeta{
			Name: c.Name, Namespace: in.Namespace,
			Labels: map[string]string{
				inventoryv1alpha1.LabelClusterManagerKey: wellknown.ClusterManagerName,
				wellknown.InventoryManagedByLabel:        wellknown.InventoryManagedBy,
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: clusterv1alpha1.GroupVersion.String(), Kind: "Cluster", Name: c.Name, UID: c.UID,
				Controller: ptr.To(true),
			}},
		},
		Spec: inventoryv1alpha1.ClusterProfileSpec{
			DisplayName:    c.Name,
			ClusterManager: inventoryv1alpha1.ClusterManager{Name: wellknown.ClusterManagerName},
		},
	}
	p.Status.Conditions = conditions(c)
	p.Status.Version.Kubernetes = c.Status.KubernetesVersion
	p.Status.Properties = properties(c)
	if providers := accessProviders(c, in.CABundle, in.AccessProviders); len(providers) > 0 {
		p.Status.AccessProviders = providers
		// Consumers written before accessProviders read credentialProviders: the same entries.
		p.Status.CredentialProviders = slices.Clone(providers)
	}
	return p
}

// conditions are ControlPlaneHealthy, from the Cluster's Ready condition (the probes of the
// member's /readyz, smoothed over the failure threshold), and Joined.
func conditions(c *clusterv1alpha1.Cluster) []metav1.Condition {
	healthy := metav1.Condition{
		Type: inventoryv1alpha1.ConditionControlPlaneHealthy, Status: metav1.ConditionUnknown,
		Reason: ReasonStatusUnknown, Message: "Flotilla has not probed the member's apiserver yet",
		LastTransitionTime: c.CreationTimestamp,
	}
	if ready := meta.FindStatusCondition(c.Status.Conditions, wellknown.ClusterConditionReady); ready != nil {
		healthy.Status, healthy.LastTransitionTime = ready.Status, ready.LastTransitionTime
		if ready.Reason != "" {
			healthy.Reason = ready.Reason
		}
		healthy.Message = ready.Message
		if healthy.Message == "" {
			healthy.Message = "the Cluster's Ready condition is " + string(ready.Status)
		}
	}
	joined := metav1.Condition{
		Type: inventoryv1alpha1.ConditionJoined, Status: metav1.ConditionTrue, Reason: ReasonJoined,
		Message: "the member is joined to Flotilla as Cluster " + c.Name + " (" + string(c.Spec.SyncMode) + ")", LastTransitionTime: c.CreationTimestamp,
	}
	return []metav1.Condition{healthy, joined}
}

// properties are the Cluster's location and capacity, sorted by name; empty values are left
// out (a property's value may not be empty).
func properties(c *clusterv1alpha1.Cluster) []inventoryv1alpha1.Property {
	var out []inventoryv1alpha1.Property
	add := func(name, value string) {
		if value != "" {
			out = append(out, inventoryv1alpha1.Property{Name: name, Value: value})
		}
	}
	add(PropertyClusterID, c.Spec.ID)
	add(PropertyRegion, c.Spec.Region)
	zones := c.Spec.Zones
	if len(zones) == 0 && c.Spec.Zone != "" {
		zones = []string{c.Spec.Zone}
	}
	add(PropertyZones, truncate(strings.Join(zones, ","), 1024))
	add(PropertyProvider, c.Spec.Provider)
	add(PropertySyncMode, string(c.Spec.SyncMode))
	if n := c.Status.NodeSummary; n != nil {
		add(PropertyNodeCount, strconv.Itoa(int(n.TotalNum)))
		add(PropertyReadyNodeCount, strconv.Itoa(int(n.ReadyNum)))
	}
	if r := c.Status.ResourceSummary; r != nil {
		for _, res := range []struct {
			name                   corev1.ResourceName
			allocatable, available string
		}{
			{corev1.ResourceCPU, PropertyCPUAllocatable, PropertyCPUAvailable},
			{corev1.ResourceMemory, PropertyMemoryAllocatable, PropertyMemoryAvailable},
		} {
			alloc, ok := r.Allocatable[res.name]
			if !ok {
				continue
			}
			add(res.allocatable, alloc.String())
			left := available(alloc, r.Allocated[res.name], r.Allocating[res.name])
			add(res.available, left.String())
		}
	}
	slices.SortFunc(out, func(a, b inventoryv1alpha1.Property) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// available is allocatable less what is requested, never below zero.
func available(allocatable resource.Quantity, requested ...resource.Quantity) resource.Quantity {
	left := allocatable.DeepCopy()
	for _, q := range requested {
		left.Sub(q)
	}
	if left.Sign() < 0 {
		return *resource.NewQuantity(0, allocatable.Format)
	}
	return left
}

// accessProviders are the member's apiserver as each named provider publishes it: the
// endpoint, how to trust it, the proxy, and the exec plugin's per-cluster configuration
// ({"clusterName": <Cluster>}). A Cluster without an endpoint has none.
func accessProviders(c *clusterv1alpha1.Cluster, caBundle []byte, names []string) []inventoryv1alpha1.AccessProvider {
	if c.Spec.APIEndpoint == "" || len(names) == 0 {
		return nil
	}
	cfg, _ := json.Marshal(execConfig{ClusterName: c.Name}) // a struct of one string: cannot fail
	cluster := inventoryv1alpha1.AccessCluster{
		Server:                c.Spec.APIEndpoint,
		InsecureSkipTLSVerify: c.Spec.InsecureSkipTLSVerification,
		ProxyURL:              c.Spec.ProxyURL,
		Extensions:            []inventoryv1alpha1.NamedExtension{{Name: inventoryv1alpha1.ExecExtensionName, Extension: runtime.RawExtension{Raw: cfg}}},
	}
	if !cluster.InsecureSkipTLSVerify && len(caBundle) > 0 {
		cluster.CertificateAuthorityData = slices.Clone(caBundle)
	}
	out := make([]inventoryv1alpha1.AccessProvider, 0, len(names))
	for _, n := range names {
		out = append(out, inventoryv1alpha1.AccessProvider{Name: n, Cluster: *cluster.DeepCopy()})
	}
	return out
}

// execConfig is the per-cluster configuration handed to the consumer's exec credential
// plugin: the name of the member (and of its ClusterProfile), as the Cluster Inventory API's
// secretreader plugin expects it.
type execConfig struct {
	ClusterName string `json:"clusterName"`
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
