package builtin

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla-io/flotilla/internal/interpreter"
)

const helmReleaseYAML = `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: apps
  generation: 4
spec:
  interval: 10m
  chart:
    spec:
      chart: podinfo
      version: "6.x"
      sourceRef: {kind: HelmRepository, name: podinfo, namespace: flux-system}
  valuesFrom:
  - {kind: ConfigMap, name: podinfo-values}
  - {kind: Secret, name: podinfo-secrets, valuesKey: secrets.yaml}
  values:
    replicaCount: 2
    ingress: {enabled: false}
status:
  observedGeneration: 4
  lastAttemptedRevision: 6.5.4
  lastAttemptedGeneration: 4
  conditions:
  - {type: Ready, status: "True", reason: InstallSucceeded, message: "Helm install succeeded", observedGeneration: 4, lastTransitionTime: "2026-01-03T09:00:00Z"}
  - {type: Released, status: "True", reason: InstallSucceeded, message: "Helm install succeeded", observedGeneration: 4, lastTransitionTime: "2026-01-03T09:00:00Z"}
  history:
  - {name: podinfo, namespace: apps, version: 1, chartName: podinfo, chartVersion: 6.5.4, appVersion: 6.5.4, status: deployed, digest: "sha256:abc"}
`

func TestBuiltinFluxHelmRelease(t *testing.T) {
	hr := object(t, helmReleaseYAML)
	c := builtinFor(t, hr)
	if c.Has(interpreter.OperationGetReplicas) || c.Has(interpreter.OperationReviseReplica) {
		t.Error("a HelmRelease has replicas")
	}

	raw, err := c.ReflectStatus(hr)
	if err != nil {
		t.Fatal(err)
	}
	var reflected map[string]any
	_ = json.Unmarshal(raw.Raw, &reflected)
	if reflected["lastAttemptedRevision"] != "6.5.4" || reflected["generation"] != float64(4) || len(reflected["conditions"].([]any)) != 2 ||
		!cmp.Equal(reflected["release"], map[string]any{"version": float64(1), "chartName": "podinfo", "chartVersion": "6.5.4", "appVersion": "6.5.4", "status": "deployed"}) {
		t.Errorf("ReflectStatus = %s", raw.Raw)
	}

	health := []struct {
		name   string
		change func(s map[string]any)
		want   bool
	}{
		{"ready", func(map[string]any) {}, true},
		{"not ready", func(s map[string]any) { condition(s, "Ready")["status"] = "False" }, false},
		{"ready for an older spec", func(s map[string]any) { condition(s, "Ready")["observedGeneration"] = int64(3) }, false},
		{"not yet observed (-1)", func(s map[string]any) { s["observedGeneration"] = int64(-1) }, false},
		{"no Ready condition", func(s map[string]any) { s["conditions"] = []any{} }, false},
	}
	for _, h := range health {
		obj := hr.DeepCopy()
		h.change(obj.Object["status"].(map[string]any))
		if got, err := c.InterpretHealth(obj); err != nil || got != h.want {
			t.Errorf("InterpretHealth(%s) = %v, %v; want %v", h.name, got, err, h.want)
		}
	}

	status, err := c.AggregateStatus(hr, items(t, c, map[string]*unstructured.Unstructured{"m1": hr, "m2": hr}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"observedGeneration":  int64(4),
		"lastAppliedRevision": "6.5.4",
		"conditions": []any{map[string]any{
			"type": "Ready", "status": "True", "reason": "ReadyInAllClusters", "message": "ready in all 2 clusters",
			"lastTransitionTime": "2026-01-03T09:00:00Z", "observedGeneration": int64(4),
		}},
	}
	if diff := cmp.Diff(want, status); diff != "" {
		t.Errorf("AggregateStatus, all ready (-want +got):\n%s", diff)
	}

	failed := hr.DeepCopy()
	ready := condition(failed.Object["status"].(map[string]any), "Ready")
	ready["status"], ready["reason"], ready["message"], ready["lastTransitionTime"] = "False", "UpgradeFailed", "Helm upgrade failed: timed out", "2026-01-04T09:00:00Z"
	failed.Object["status"].(map[string]any)["history"].([]any)[0].(map[string]any)["chartVersion"] = "6.5.3"
	status, err = c.AggregateStatus(hr, items(t, c, map[string]*unstructured.Unstructured{"m1": hr, "m2": failed, "m3": nil}))
	if err != nil {
		t.Fatal(err)
	}
	want = map[string]any{"conditions": []any{map[string]any{
		"type": "Ready", "status": "False", "reason": "NotReadyInClusters",
		"message":            "1 of 3 clusters not ready: m2: Helm upgrade failed: timed out",
		"lastTransitionTime": "2026-01-04T09:00:00Z",
	}}}
	if diff := cmp.Diff(want, status); diff != "" {
		t.Errorf("AggregateStatus, one failed, one unknown (-want +got):\n%s", diff)
	}
	status, err = c.AggregateStatus(hr, items(t, c, map[string]*unstructured.Unstructured{"m1": hr, "m3": nil}))
	if err != nil || condition(status, "Ready")["status"] != "Unknown" || condition(status, "Ready")["message"] != "1 of 2 clusters ready; waiting for m3" {
		t.Errorf("AggregateStatus, one unknown = %v, %v", status, err)
	}
	if status, err := c.AggregateStatus(hr, nil); err != nil || len(status) != 0 {
		t.Errorf("AggregateStatus of no members = %v, %v; want an empty status", status, err)
	}

	got, err := c.GetDependencies(hr)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(deps("source.toolkit.fluxcd.io/v1 HelmRepository flux-system podinfo", "v1 ConfigMap apps podinfo-values", "v1 Secret apps podinfo-secrets"), got); diff != "" {
		t.Errorf("GetDependencies (-want +got):\n%s", diff)
	}
	oci := hr.DeepCopy()
	delete(oci.Object["spec"].(map[string]any), "chart")
	oci.Object["spec"].(map[string]any)["chartRef"] = map[string]any{"kind": "OCIRepository", "name": "podinfo"}
	oci.Object["spec"].(map[string]any)["kubeConfig"] = map[string]any{"secretRef": map[string]any{"name": "remote"}}
	oci.Object["spec"].(map[string]any)["serviceAccountName"] = "helm"
	got, err = c.GetDependencies(oci)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(deps("source.toolkit.fluxcd.io/v1beta2 OCIRepository apps podinfo", "v1 ConfigMap apps podinfo-values", "v1 Secret apps podinfo-secrets", "v1 Secret apps remote", "v1 ServiceAccount apps helm"), got); diff != "" {
		t.Errorf("GetDependencies with a chartRef (-want +got):\n%s", diff)
	}
}

const kustomizationYAML = `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
  generation: 9
spec:
  interval: 5m
  path: ./clusters/production
  prune: true
  sourceRef: {kind: GitRepository, name: fleet}
  decryption: {provider: sops, secretRef: {name: sops-age}}
  postBuild:
    substitute: {region: eu}
    substituteFrom:
    - {kind: ConfigMap, name: cluster-vars}
    - {kind: Secret, name: cluster-secrets, optional: true}
status:
  observedGeneration: 9
  lastAppliedRevision: main@sha1:4f1e2a
  lastAttemptedRevision: main@sha1:4f1e2a
  conditions:
  - {type: Ready, status: "True", reason: ReconciliationSucceeded, message: "Applied revision: main@sha1:4f1e2a", observedGeneration: 9, lastTransitionTime: "2026-01-05T12:00:00Z"}
  inventory:
    entries:
    - {id: apps_web_apps_Deployment, v: v1}
`

func TestBuiltinFluxKustomization(t *testing.T) {
	ks := object(t, kustomizationYAML)
	c := builtinFor(t, ks)
	if c.Has(interpreter.OperationGetReplicas) {
		t.Error("a Kustomization has replicas")
	}

	raw, err := c.ReflectStatus(ks)
	if err != nil {
		t.Fatal(err)
	}
	var reflected map[string]any
	_ = json.Unmarshal(raw.Raw, &reflected)
	if got := keys(reflected); !slices.Equal(got, []string{"conditions", "generation", "lastAppliedRevision", "lastAttemptedRevision", "observedGeneration"}) {
		t.Errorf("reflected fields %v", got)
	}

	if ok, err := c.InterpretHealth(ks); err != nil || !ok {
		t.Errorf("InterpretHealth = %v, %v; want healthy", ok, err)
	}
	stale := ks.DeepCopy()
	_ = unstructured.SetNestedField(stale.Object, int64(10), "metadata", "generation")
	if ok, err := c.InterpretHealth(stale); err != nil || ok {
		t.Errorf("InterpretHealth of a spec not yet seen = %v, %v; want unhealthy", ok, err)
	}

	behind := ks.DeepCopy()
	_ = unstructured.SetNestedField(behind.Object, "main@sha1:0000aa", "status", "lastAppliedRevision")
	status, err := c.AggregateStatus(ks, items(t, c, map[string]*unstructured.Unstructured{"eu": ks, "us": behind}))
	if err != nil {
		t.Fatal(err)
	}
	if status["lastAppliedRevision"] != nil || status["observedGeneration"] != int64(9) || condition(status, "Ready")["status"] != "True" {
		t.Errorf("AggregateStatus with members on different revisions = %v", status)
	}
	status, err = c.AggregateStatus(ks, items(t, c, map[string]*unstructured.Unstructured{"eu": ks, "us": ks}))
	if err != nil || status["lastAppliedRevision"] != "main@sha1:4f1e2a" {
		t.Errorf("AggregateStatus on one revision = %v, %v", status, err)
	}

	got, err := c.GetDependencies(ks)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(deps("source.toolkit.fluxcd.io/v1 GitRepository flux-system fleet", "v1 Secret flux-system sops-age", "v1 ConfigMap flux-system cluster-vars", "v1 Secret flux-system cluster-secrets"), got); diff != "" {
		t.Errorf("GetDependencies (-want +got):\n%s", diff)
	}
}
