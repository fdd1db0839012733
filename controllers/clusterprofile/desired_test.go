package clusterprofile

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	inventoryv1alpha1 "github.com/flotilla-io/flotilla/api/clusterinventory/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
)

var (
	created = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	probed  = metav1.NewTime(time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC))
)

func member(mut func(*clusterv1alpha1.Cluster)) *clusterv1alpha1.Cluster {
	c := &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "m1", UID: "uid-1", CreationTimestamp: created},
		Spec:       clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://10.0.0.1:6443"},
	}
	if mut != nil {
		mut(c)
	}
	return c
}

func ready(status metav1.ConditionStatus, reason, msg string) func(*clusterv1alpha1.Cluster) {
	return func(c *clusterv1alpha1.Cluster) {
		c.Status.Conditions = []metav1.Condition{{Type: wellknown.ClusterConditionReady, Status: status, Reason: reason, Message: msg, LastTransitionTime: probed}}
	}
}

func props(p []inventoryv1alpha1.Property) map[string]string {
	out := map[string]string{}
	for _, x := range p {
		out[x.Name] = x.Value
	}
	return out
}

func TestDesiredMetadataAndSpec(t *testing.T) {
	p := Desired(Input{Cluster: member(nil), Namespace: "inv", AccessProviders: []string{"flotilla"}})
	if p.Name != "m1" || p.Namespace != "inv" {
		t.Fatalf("name %s/%s, want inv/m1", p.Namespace, p.Name)
	}
	if got := p.Labels[inventoryv1alpha1.LabelClusterManagerKey]; got != "flotilla" {
		t.Errorf("cluster-manager label %q, want flotilla", got)
	}
	if got := p.Labels[wellknown.InventoryManagedByLabel]; got != wellknown.InventoryManagedBy {
		t.Errorf("managed-by label %q", got)
	}
	if p.Spec.ClusterManager.Name != "flotilla" || p.Spec.DisplayName != "m1" {
		t.Errorf("spec %+v", p.Spec)
	}
	if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].UID != "uid-1" || p.OwnerReferences[0].Kind != "Cluster" ||
		p.OwnerReferences[0].APIVersion != "cluster.karmada.io/v1alpha1" {
		t.Errorf("owner references %+v", p.OwnerReferences)
	}
	if p.APIVersion != "multicluster.x-k8s.io/v1alpha1" || p.Kind != "ClusterProfile" {
		t.Errorf("type %s %s", p.APIVersion, p.Kind)
	}
}

func TestDesiredConditions(t *testing.T) {
	for _, tc := range []struct {
		name       string
		mut        func(*clusterv1alpha1.Cluster)
		status     metav1.ConditionStatus
		reason     string
		transition metav1.Time
		message    string
	}{
		{"not probed yet", nil, metav1.ConditionUnknown, ReasonStatusUnknown, created, "Flotilla has not probed the member's apiserver yet"},
		{"ready", ready(metav1.ConditionTrue, wellknown.ClusterReasonReady, "cluster is healthy and ready to accept workloads"),
			metav1.ConditionTrue, wellknown.ClusterReasonReady, probed, "cluster is healthy and ready to accept workloads"},
		{"not ready", ready(metav1.ConditionFalse, wellknown.ClusterReasonNotReady, "/readyz said 500"),
			metav1.ConditionFalse, wellknown.ClusterReasonNotReady, probed, "/readyz said 500"},
		{"unreachable", ready(metav1.ConditionFalse, wellknown.ClusterReasonNotReachable, "dial tcp: connection refused"),
			metav1.ConditionFalse, wellknown.ClusterReasonNotReachable, probed, "dial tcp: connection refused"},
		{"unknown without reason or message", ready(metav1.ConditionUnknown, "", ""),
			metav1.ConditionUnknown, ReasonStatusUnknown, probed, "the Cluster's Ready condition is Unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Desired(Input{Cluster: member(tc.mut), Namespace: "inv"})
			h := meta.FindStatusCondition(p.Status.Conditions, inventoryv1alpha1.ConditionControlPlaneHealthy)
			if h == nil {
				t.Fatal("no ControlPlaneHealthy condition")
			}
			want := metav1.Condition{Type: inventoryv1alpha1.ConditionControlPlaneHealthy, Status: tc.status, Reason: tc.reason,
				Message: tc.message, LastTransitionTime: tc.transition}
			if diff := cmp.Diff(want, *h); diff != "" {
				t.Errorf("ControlPlaneHealthy (-want +got):\n%s", diff)
			}
			j := meta.FindStatusCondition(p.Status.Conditions, inventoryv1alpha1.ConditionJoined)
			if j == nil || j.Status != metav1.ConditionTrue || j.Reason != ReasonJoined || !j.LastTransitionTime.Equal(&created) {
				t.Errorf("Joined %+v", j)
			}
		})
	}
}

func TestDesiredVersionAndProperties(t *testing.T) {
	q := resource.MustParse
	for _, tc := range []struct {
		name    string
		mut     func(*clusterv1alpha1.Cluster)
		want    map[string]string
		version string
	}{
		{"nothing collected yet", nil, map[string]string{PropertySyncMode: "Push"}, ""},
		{"location and capacity", func(c *clusterv1alpha1.Cluster) {
			c.Spec.ID = "3c1f-kube-system-uid"
			c.Spec.Provider, c.Spec.Region, c.Spec.Zones = "aws", "eu-west-1", []string{"eu-west-1a", "eu-west-1b"}
			c.Status.KubernetesVersion = "v1.34.1"
			c.Status.NodeSummary = &clusterv1alpha1.NodeSummary{TotalNum: 3, ReadyNum: 2}
			c.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: q("12"), corev1.ResourceMemory: q("48Gi"), corev1.ResourcePods: q("330")},
				Allocated:   corev1.ResourceList{corev1.ResourceCPU: q("2500m"), corev1.ResourceMemory: q("8Gi")},
				Allocating:  corev1.ResourceList{corev1.ResourceCPU: q("500m")},
			}
		}, map[string]string{
			PropertyClusterID: "3c1f-kube-system-uid", PropertyProvider: "aws", PropertyRegion: "eu-west-1", PropertyZones: "eu-west-1a,eu-west-1b",
			PropertySyncMode: "Push", PropertyNodeCount: "3", PropertyReadyNodeCount: "2",
			PropertyCPUAllocatable: "12", PropertyCPUAvailable: "9", PropertyMemoryAllocatable: "48Gi", PropertyMemoryAvailable: "40Gi",
		}, "v1.34.1"},
		{"deprecated zone, overcommitted", func(c *clusterv1alpha1.Cluster) {
			c.Spec.SyncMode = clusterv1alpha1.Pull
			c.Spec.Zone = "z1"
			c.Status.NodeSummary = &clusterv1alpha1.NodeSummary{}
			c.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: q("1")},
				Allocated:   corev1.ResourceList{corev1.ResourceCPU: q("1500m")},
			}
		}, map[string]string{
			PropertyZones: "z1", PropertySyncMode: "Pull", PropertyNodeCount: "0", PropertyReadyNodeCount: "0",
			PropertyCPUAllocatable: "1", PropertyCPUAvailable: "0",
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Desired(Input{Cluster: member(tc.mut), Namespace: "inv"})
			if diff := cmp.Diff(tc.want, props(p.Status.Properties)); diff != "" {
				t.Errorf("properties (-want +got):\n%s", diff)
			}
			for i := 1; i < len(p.Status.Properties); i++ {
				if p.Status.Properties[i-1].Name >= p.Status.Properties[i].Name {
					t.Errorf("properties not sorted by name: %v", p.Status.Properties)
				}
			}
			if p.Status.Version.Kubernetes != tc.version {
				t.Errorf("version %q, want %q", p.Status.Version.Kubernetes, tc.version)
			}
		})
	}
}

func TestDesiredAccessProviders(t *testing.T) {
	ca := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	for _, tc := range []struct {
		name      string
		mut       func(*clusterv1alpha1.Cluster)
		ca        []byte
		providers []string
		want      []string // names published
		wantCA    bool
		insecure  bool
		proxy     string
	}{
		{"one provider with the CA", nil, ca, []string{"flotilla"}, []string{"flotilla"}, true, false, ""},
		{"several providers", nil, ca, []string{"flotilla", "secretreader"}, []string{"flotilla", "secretreader"}, true, false, ""},
		{"no endpoint (a Pull member)", func(c *clusterv1alpha1.Cluster) { c.Spec.APIEndpoint = "" }, ca, []string{"flotilla"}, nil, false, false, ""},
		{"no provider names", nil, ca, nil, nil, false, false, ""},
		{"without a CA", nil, nil, []string{"flotilla"}, []string{"flotilla"}, false, false, ""},
		{"insecure and proxied: the CA is left out", func(c *clusterv1alpha1.Cluster) {
			c.Spec.InsecureSkipTLSVerification = true
			c.Spec.ProxyURL = "http://proxy:3128"
		}, ca, []string{"flotilla"}, []string{"flotilla"}, false, true, "http://proxy:3128"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Desired(Input{Cluster: member(tc.mut), Namespace: "inv", CABundle: tc.ca, AccessProviders: tc.providers})
			var names []string
			for _, ap := range p.Status.AccessProviders {
				names = append(names, ap.Name)
				c := ap.Cluster
				if c.Server != "https://10.0.0.1:6443" {
					t.Errorf("%s: server %q", ap.Name, c.Server)
				}
				if got := len(c.CertificateAuthorityData) > 0; got != tc.wantCA {
					t.Errorf("%s: CA present %v, want %v", ap.Name, got, tc.wantCA)
				}
				if c.InsecureSkipTLSVerify != tc.insecure || c.ProxyURL != tc.proxy {
					t.Errorf("%s: insecure %v proxy %q", ap.Name, c.InsecureSkipTLSVerify, c.ProxyURL)
				}
				if len(c.Extensions) != 1 || c.Extensions[0].Name != inventoryv1alpha1.ExecExtensionName {
					t.Fatalf("%s: extensions %+v", ap.Name, c.Extensions)
				}
				var cfg map[string]string
				if err := json.Unmarshal(c.Extensions[0].Extension.Raw, &cfg); err != nil || cfg["clusterName"] != "m1" {
					t.Errorf("%s: exec config %s (%v)", ap.Name, c.Extensions[0].Extension.Raw, err)
				}
			}
			if diff := cmp.Diff(tc.want, names); diff != "" {
				t.Errorf("access providers (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(p.Status.AccessProviders, p.Status.CredentialProviders); diff != "" {
				t.Errorf("credentialProviders differ from accessProviders:\n%s", diff)
			}
		})
	}
}

// The same input gives the same profile, so an unchanged member is not written again.
func TestDesiredIsStable(t *testing.T) {
	in := Input{Cluster: member(ready(metav1.ConditionTrue, "ClusterReady", "ok")), Namespace: "inv", CABundle: []byte("ca"), AccessProviders: []string{"a", "b"}}
	if diff := cmp.Diff(Desired(in), Desired(in)); diff != "" {
		t.Errorf("two computations differ:\n%s", diff)
	}
}

// The JSON field names are the published schema's (kubeconfig's kebab-case inside cluster).
func TestWireNames(t *testing.T) {
	p := Desired(Input{Cluster: member(func(c *clusterv1alpha1.Cluster) { c.Spec.ProxyURL = "http://p:1" }), Namespace: "inv",
		CABundle: []byte("ca"), AccessProviders: []string{"flotilla"}})
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	status := m["status"].(map[string]any)
	for _, k := range []string{"conditions", "version", "properties", "accessProviders", "credentialProviders"} {
		if _, ok := status[k]; !ok {
			t.Errorf("status.%s missing in %s", k, b)
		}
	}
	cluster := status["accessProviders"].([]any)[0].(map[string]any)["cluster"].(map[string]any)
	for _, k := range []string{"server", "certificate-authority-data", "proxy-url", "extensions"} {
		if _, ok := cluster[k]; !ok {
			t.Errorf("accessProviders[0].cluster.%s missing in %s", k, b)
		}
	}
	spec := m["spec"].(map[string]any)
	if spec["clusterManager"].(map[string]any)["name"] != "flotilla" || spec["displayName"] != "m1" {
		t.Errorf("spec %v", spec)
	}
}
