package localcluster

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

func usageObject(name string, namespaces []any, container, cpu string) *unstructured.Unstructured {
	u := map[string]any{"usage": map[string]any{"cpu": map[string]any{"value": cpu}}}
	if container != "" {
		u["containerName"] = container
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "ClusterResourceUsage", "metadata": map[string]any{"name": name},
		"spec": map[string]any{"selector": map[string]any{"matchNamespaces": namespaces}, "usages": []any{u}},
	}}
}

func runningPod(ns, name, node string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app"}, {Name: "side"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

func TestMetricsHandler(t *testing.T) {
	pods := fake.NewClientset(
		runningPod("web", "a", "n1", map[string]string{"app": "web"}),
		runningPod("web", "b", "n1", map[string]string{"app": "other"}),
		runningPod("db", "c", "n1", map[string]string{"app": "db"}),
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "pending", Labels: map[string]string{"app": "web"}}, Status: corev1.PodStatus{Phase: corev1.PodPending}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}},
	)
	scheme := runtime.NewScheme()
	usage := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{ClusterResourceUsageGVR: "ClusterResourceUsageList"},
		usageObject("load", []any{"web"}, "app", "200m"))
	h := &metricsHandler{pods: pods, usage: usage, now: func() time.Time { return time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC) }}

	get := func(path string, out any) int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if out != nil && rec.Code == 200 {
			if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
		}
		return rec.Code
	}
	rl := &metav1.APIResourceList{}
	if get("/apis/metrics.k8s.io/v1beta1", rl); len(rl.APIResources) != 2 || rl.GroupVersion != "metrics.k8s.io/v1beta1" {
		t.Fatalf("discovery: %+v", rl)
	}
	list := &metricsv1beta1.PodMetricsList{}
	get("/apis/metrics.k8s.io/v1beta1/namespaces/web/pods?labelSelector=app%3Dweb", list)
	if len(list.Items) != 1 || list.Items[0].Name != "a" {
		t.Fatalf("selected pods: %+v", list.Items)
	}
	c := list.Items[0].Containers
	if q := c[0].Usage[corev1.ResourceCPU]; q.Cmp(resource.MustParse("200m")) != 0 || c[0].Name != "app" {
		t.Fatalf("app usage: %+v", c)
	}
	if q := c[1].Usage[corev1.ResourceCPU]; !q.IsZero() {
		t.Fatalf("side container is not selected: %+v", c)
	}
	pm := &metricsv1beta1.PodMetrics{}
	if code := get("/apis/metrics.k8s.io/v1beta1/namespaces/db/pods/c", pm); code != 200 || pm.Name != "c" {
		t.Fatalf("get: %d %+v", code, pm)
	}
	if code := get("/apis/metrics.k8s.io/v1beta1/namespaces/db/pods/absent", nil); code != 404 {
		t.Fatalf("absent pod: %d", code)
	}
	if code := get("/apis/metrics.k8s.io/v1beta1/namespaces/web/pods?labelSelector=app%3D%3D%3D", nil); code != 400 {
		t.Fatalf("bad selector: %d", code)
	}
	nodes := &metricsv1beta1.NodeMetricsList{}
	get("/apis/metrics.k8s.io/v1beta1/nodes", nodes)
	if len(nodes.Items) != 1 {
		t.Fatalf("nodes: %+v", nodes)
	}
	if q := nodes.Items[0].Usage[corev1.ResourceCPU]; q.Cmp(resource.MustParse("400m")) != 0 {
		t.Fatalf("node usage is its running pods' (a and b in web): %s", q.String())
	}
}

func FuzzPodUsage(f *testing.F) {
	f.Add("web", "app", "200m")
	f.Add("", "", "1.5")
	f.Add("x", "y", "not a quantity")
	f.Fuzz(func(t *testing.T, ns, container, value string) {
		out := PodUsage([]unstructured.Unstructured{*usageObject("u", []any{ns}, container, value)}, ns, "p", container)
		if _, ok := out[corev1.ResourceCPU]; !ok {
			t.Fatal("cpu is always reported")
		}
	})
}
