package dashboard_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/dashboard"
)

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func cluster(name string, ready metav1.ConditionStatus, reason, message string) clusterv1alpha1.Cluster {
	c := clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push}}
	if ready != "" {
		c.Status.Conditions = []metav1.Condition{{Type: wellknown.ClusterConditionReady, Status: ready, Reason: reason, Message: message}}
	}
	return c
}

func binding(ns, name, kind string, targets map[string]int32, status ...workv1alpha2.AggregatedStatusItem) workv1alpha2.ResourceBinding {
	rb := workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	rb.Spec.Resource = workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: kind, Namespace: ns, Name: strings.TrimSuffix(name, "-deployment")}
	for _, c := range []string{"member1", "member2", "member3"} {
		if r, ok := targets[c]; ok {
			rb.Spec.Clusters = append(rb.Spec.Clusters, workv1alpha2.TargetCluster{Name: c, Replicas: r})
		}
	}
	rb.Status.AggregatedStatus = status
	return rb
}

func TestBuildView(t *testing.T) {
	m1 := cluster("member1", metav1.ConditionTrue, "ClusterReady", "")
	m1.Spec.Provider, m1.Spec.Region = "aws", "us-east-1"
	m1.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}}
	m1.Status.KubernetesVersion = "v1.36.3"
	m1.Status.NodeSummary = &clusterv1alpha1.NodeSummary{TotalNum: 3, ReadyNum: 2}
	m1.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi")},
		Allocated:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("1536Mi")},
	}
	m2 := cluster("member2", metav1.ConditionFalse, "ClusterNotReachable", "dial tcp 127.0.0.1:1: connection refused")
	m3 := cluster("member3", "", "", "")

	web := binding("shop", "web-deployment", "Deployment", map[string]int32{"member1": 2, "member2": 1, "member3": 1},
		workv1alpha2.AggregatedStatusItem{ClusterName: "member1", Applied: true, Health: workv1alpha1.ResourceHealthy,
			Status: &runtime.RawExtension{Raw: []byte(`{"replicas":2,"readyReplicas":1}`)}},
		workv1alpha2.AggregatedStatusItem{ClusterName: "member2", AppliedMessage: "quota exceeded"})
	web.Status.ClustersReady = "1/3"
	web.Status.Conditions = []metav1.Condition{{Type: wellknown.ConditionScheduled, Status: metav1.ConditionTrue}}
	cm := binding("apps", "cfg-configmap", "ConfigMap", map[string]int32{"member1": 0})
	crb := workv1alpha2.ClusterResourceBinding{ObjectMeta: metav1.ObjectMeta{Name: "reader-clusterrole"}}
	crb.Spec.Resource = workv1alpha2.ObjectReference{Kind: "ClusterRole", Name: "reader"}

	v := dashboard.BuildView([]clusterv1alpha1.Cluster{m3, m2, m1}, []workv1alpha2.ResourceBinding{web, cm},
		[]workv1alpha2.ClusterResourceBinding{crb}, now)
	want := dashboard.View{Updated: now,
		Clusters: []dashboard.ClusterRow{
			{Name: "member1", Mode: "Push", Origin: "joined", Version: "v1.36.3", Ready: "True", Nodes: "2/3", CPU: "1.5 / 8", Memory: "1.5Gi / 16Gi",
				Taints: []string{"dedicated=batch:NoSchedule"}, Location: "aws/us-east-1"},
			{Name: "member2", Mode: "Push", Origin: "joined", Version: "-", Ready: "False", Reason: "ClusterNotReachable",
				Message: "dial tcp 127.0.0.1:1: connection refused", Nodes: "-", CPU: "-", Memory: "-", Location: "-"},
			{Name: "member3", Mode: "Push", Origin: "joined", Version: "-", Ready: "Unknown", Nodes: "-", CPU: "-", Memory: "-", Location: "-"},
		},
		Templates: []dashboard.TemplateRow{
			{Kind: "ClusterRole", Name: "reader", Binding: "ClusterResourceBinding reader-clusterrole", Scheduled: "Unknown",
				FullyApplied: "Unknown", ClustersReady: "-"},
			{Kind: "ConfigMap", Namespace: "apps", Name: "cfg-configmap", Binding: "ResourceBinding apps/cfg-configmap", Scheduled: "Unknown",
				FullyApplied: "Unknown", ClustersReady: "-",
				Placement: []dashboard.Placement{{Cluster: "member1", Applied: "Unknown", Health: "Unknown", Ready: "-"}}},
			{Kind: "Deployment", Namespace: "shop", Name: "web", Binding: "ResourceBinding shop/web-deployment", Scheduled: "True",
				FullyApplied: "Unknown", ClustersReady: "1/3",
				Placement: []dashboard.Placement{
					{Cluster: "member1", Replicas: "2", Applied: "True", Health: "Healthy", Ready: "1/2"},
					{Cluster: "member2", Replicas: "1", Applied: "False", Health: "Unknown", Ready: "-", Message: "quota exceeded"},
					{Cluster: "member3", Replicas: "1", Applied: "Unknown", Health: "Unknown", Ready: "-"},
				}},
		},
	}
	if d := cmp.Diff(want, v); d != "" {
		t.Errorf("view (-want +got):\n%s", d)
	}
	var states []string
	for _, p := range v.Templates[2].Placement {
		states = append(states, p.State())
	}
	if d := cmp.Diff([]string{"ok", "bad", "pending"}, states); d != "" {
		t.Errorf("states (-want +got):\n%s", d)
	}
	if got := (dashboard.Placement{Applied: "True", Health: "Unhealthy"}).State(); got != "bad" {
		t.Errorf("unhealthy: %s", got)
	}
}

func TestRenderEscapes(t *testing.T) {
	v := dashboard.BuildView([]clusterv1alpha1.Cluster{cluster("member1", metav1.ConditionFalse, "Bad", `<script>alert("x")</script>`)}, nil, nil, now)
	var out bytes.Buffer
	if err := dashboard.RenderFleet(&out, v); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "<script>") || !strings.Contains(out.String(), "&lt;script&gt;") {
		t.Errorf("the message is not escaped:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "No bindings yet.") || !strings.Contains(out.String(), `data-cluster="member1"`) {
		t.Errorf("fragment:\n%s", out.String())
	}
	out.Reset()
	if err := dashboard.RenderPage(&out, "https://127.0.0.1:6443", v); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<!DOCTYPE html>", `new EventSource("events")`, `<div id="fleet">`, "https://127.0.0.1:6443"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestSSE(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{"one", "event: fleet\ndata: one\n\n"},
		{"a\nb\r\nc\n", "event: fleet\ndata: a\ndata: b\ndata: c\ndata: \n\n"},
		{"", "event: fleet\ndata: \n\n"},
	} {
		if got := dashboard.SSE("fleet", tc.data); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.data, got, tc.want)
		}
	}
}
