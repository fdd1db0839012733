package builtin

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

const rolloutYAML = `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata:
  name: web
  namespace: shop
  generation: 3
spec:
  replicas: 5
  revisionHistoryLimit: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      serviceAccountName: web
      nodeSelector: {pool: general}
      containers:
      - name: web
        image: shop/web:1.4
        ports: [{containerPort: 8080}]
        resources:
          requests: {cpu: 200m, memory: 256Mi}
        env:
        - name: DB_PASSWORD
          valueFrom: {secretKeyRef: {name: web-db, key: password}}
        volumeMounts: [{name: config, mountPath: /etc/web}]
      volumes:
      - name: config
        configMap: {name: web-config}
  strategy:
    canary:
      stableService: web-stable
      canaryService: web-canary
      steps:
      - setWeight: 20
      - pause: {}
      - setWeight: 60
      - pause: {duration: 10m}
status:
  replicas: 5
  readyReplicas: 5
  updatedReplicas: 5
  availableReplicas: 5
  phase: Healthy
  observedGeneration: "3"
  currentPodHash: 6d4f8c
  stableRS: 6d4f8c
  conditions:
  - {type: Available, status: "True", reason: AvailableReason, lastTransitionTime: "2026-01-02T10:00:00Z"}
  - {type: Healthy, status: "True", reason: RolloutHealthy, lastTransitionTime: "2026-01-02T10:00:00Z"}
`

func TestBuiltinArgoRollout(t *testing.T) {
	rollout := object(t, rolloutYAML)
	c := builtinFor(t, rollout)

	n, req, err := c.GetReplicas(rollout)
	if err != nil || n != 5 {
		t.Fatalf("GetReplicas = %d, %v", n, err)
	}
	want := &workv1alpha2.ReplicaRequirements{
		NodeClaim:       &workv1alpha2.NodeClaim{NodeSelector: map[string]string{"pool": "general"}},
		ResourceRequest: quantities(map[string]string{"cpu": "200m", "memory": "256Mi"}),
		Namespace:       "shop",
	}
	if diff := cmp.Diff(want, req, quantityEqual); diff != "" {
		t.Errorf("requirement (-want +got):\n%s", diff)
	}
	unset := rollout.DeepCopy()
	unstructured.RemoveNestedField(unset.Object, "spec", "replicas")
	unstructured.RemoveNestedField(unset.Object, "spec", "template")
	_ = unstructured.SetNestedMap(unset.Object, map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web-base"}, "spec", "workloadRef")
	if n, req, err := c.GetReplicas(unset); err != nil || n != 1 || req != nil {
		t.Errorf("GetReplicas without replicas and template = %d, %v, %v; want 1 and no requirement", n, req, err)
	}

	revised, err := c.ReviseReplica(rollout, 2)
	if err != nil {
		t.Fatal(err)
	}
	wantRevised := rollout.DeepCopy()
	_ = unstructured.SetNestedField(wantRevised.Object, int64(2), "spec", "replicas")
	if diff := cmp.Diff(wantRevised.Object, revised.Object); diff != "" {
		t.Errorf("ReviseReplica changed more than spec.replicas (-want +got):\n%s", diff)
	}

	raw, err := c.ReflectStatus(rollout)
	if err != nil {
		t.Fatal(err)
	}
	var reflected map[string]any
	_ = json.Unmarshal(raw.Raw, &reflected)
	if got := keys(reflected); !slices.Equal(got, []string{"availableReplicas", "conditions", "generation", "observedGeneration", "phase", "readyReplicas", "replicas", "updatedReplicas"}) {
		t.Errorf("reflected fields %v", got)
	}

	// Aggregation: sums, the worst phase, observedGeneration once every member is current.
	lagging := rollout.DeepCopy()
	_ = unstructured.SetNestedField(lagging.Object, "2", "status", "observedGeneration")
	_ = unstructured.SetNestedField(lagging.Object, "Progressing", "status", "phase")
	_ = unstructured.SetNestedField(lagging.Object, int64(1), "status", "readyReplicas")
	status, err := c.AggregateStatus(rollout, items(t, c, map[string]*unstructured.Unstructured{"m1": rollout, "m2": lagging}))
	if err != nil {
		t.Fatal(err)
	}
	wantStatus := map[string]any{"replicas": int64(10), "readyReplicas": int64(6), "updatedReplicas": int64(10), "availableReplicas": int64(10), "phase": "Progressing"}
	if diff := cmp.Diff(wantStatus, status); diff != "" {
		t.Errorf("AggregateStatus with a lagging member (-want +got):\n%s", diff)
	}
	status, err = c.AggregateStatus(rollout, items(t, c, map[string]*unstructured.Unstructured{"m1": rollout, "m2": rollout}))
	if err != nil || status["observedGeneration"] != "3" || status["phase"] != "Healthy" {
		t.Errorf("AggregateStatus with current members = %v, %v; want observedGeneration \"3\", phase Healthy", status, err)
	}
	status, err = c.AggregateStatus(rollout, items(t, c, map[string]*unstructured.Unstructured{"m1": rollout, "m2": nil}))
	if err != nil || status["observedGeneration"] != nil || status["phase"] != "Progressing" || status["replicas"] != int64(5) {
		t.Errorf("AggregateStatus with a member without status = %v, %v", status, err)
	}

	for _, h := range []struct {
		name   string
		change func(u *unstructured.Unstructured)
		want   bool
	}{
		{"healthy", func(*unstructured.Unstructured) {}, true},
		{"paused", func(u *unstructured.Unstructured) { u.Object["status"].(map[string]any)["phase"] = "Paused" }, false},
		{"degraded", func(u *unstructured.Unstructured) { u.Object["status"].(map[string]any)["phase"] = "Degraded" }, false},
		{"an older generation", func(u *unstructured.Unstructured) { u.Object["status"].(map[string]any)["observedGeneration"] = "2" }, false},
		{"no status", func(u *unstructured.Unstructured) { delete(u.Object, "status") }, false},
		{"no phase, available", func(u *unstructured.Unstructured) { delete(u.Object["status"].(map[string]any), "phase") }, true},
	} {
		obj := rollout.DeepCopy()
		h.change(obj)
		if got, err := c.InterpretHealth(obj); err != nil || got != h.want {
			t.Errorf("InterpretHealth(%s) = %v, %v; want %v", h.name, got, err, h.want)
		}
	}

	got, err := c.GetDependencies(rollout)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(deps("v1 ConfigMap shop web-config", "v1 Secret shop web-db", "v1 ServiceAccount shop web", "v1 Service shop web-stable", "v1 Service shop web-canary"), got); diff != "" {
		t.Errorf("GetDependencies (-want +got):\n%s", diff)
	}
	got, err = c.GetDependencies(unset)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(deps("apps/v1 Deployment shop web-base", "v1 Service shop web-stable", "v1 Service shop web-canary"), got); diff != "" {
		t.Errorf("GetDependencies with a workloadRef (-want +got):\n%s", diff)
	}
}
