package customization

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

const builtinDir = "../../config/customizations"

// builtinStore loads every customization of config/customizations into a store, checking
// that the kustomization lists exactly the files there.
func builtinStore(t testing.TB, o Options) *Store {
	t.Helper()
	var k struct {
		Resources []string `json:"resources"`
	}
	raw, err := os.ReadFile(filepath.Join(builtinDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &k); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(builtinDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		if filepath.Base(f) != "kustomization.yaml" {
			names = append(names, filepath.Base(f))
		}
	}
	slices.Sort(names)
	listed := slices.Sorted(slices.Values(k.Resources))
	if !slices.Equal(names, listed) {
		t.Fatalf("kustomization.yaml lists %v; the directory has %v", listed, names)
	}
	store := NewStore(o)
	for _, name := range names {
		raw, err := os.ReadFile(filepath.Join(builtinDir, name))
		if err != nil {
			t.Fatal(err)
		}
		var ric configv1alpha1.ResourceInterpreterCustomization
		if err := yaml.UnmarshalStrict(raw, &ric); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if ric.APIVersion != "config.karmada.io/v1alpha1" || ric.Kind != "ResourceInterpreterCustomization" || !strings.HasPrefix(ric.Name, "zz-flotilla-") {
			t.Errorf("%s: %s %s %q", name, ric.APIVersion, ric.Kind, ric.Name)
		}
		if err := store.Apply(&ric); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	return store
}

func object(t testing.TB, text string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(text), &m); err != nil {
		t.Fatal(err)
	}
	// as the apiserver's JSON would decode it: integers as int64
	raw, _ := json.Marshal(m)
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		t.Fatal(err)
	}
	return u
}

func lookup(t testing.TB, store *Store, obj *unstructured.Unstructured) interpreter.Customization {
	t.Helper()
	c, ok := store.Lookup(obj.GroupVersionKind())
	if !ok {
		t.Fatalf("%s is not customized", obj.GroupVersionKind())
	}
	return c
}

// items are member statuses as the reflected status makes them.
func items(t testing.TB, c interpreter.Customization, members map[string]*unstructured.Unstructured) []workv1alpha2.AggregatedStatusItem {
	t.Helper()
	var out []workv1alpha2.AggregatedStatusItem
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range members {
			if !yield(k) {
				return
			}
		}
	}) {
		item := workv1alpha2.AggregatedStatusItem{ClusterName: name, Applied: true, Health: workv1alpha1.ResourceHealthy}
		if members[name] != nil {
			raw, err := c.ReflectStatus(members[name])
			if err != nil {
				t.Fatal(err)
			}
			item.Status = raw
		}
		out = append(out, item)
	}
	return out
}

func quantities(q map[string]string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range q {
		out[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return out
}

func deps(refs ...string) []configv1alpha1.DependentObjectReference {
	var out []configv1alpha1.DependentObjectReference
	for _, r := range refs { // apiVersion kind namespace name
		f := strings.Fields(r)
		out = append(out, configv1alpha1.DependentObjectReference{APIVersion: f[0], Kind: f[1], Namespace: f[2], Name: f[3]})
	}
	return out
}

var quantityEqual = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

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
	store := builtinStore(t, Options{})
	rollout := object(t, rolloutYAML)
	c := lookup(t, store, rollout)

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
	if got := slices.Sorted(keys(reflected)); !slices.Equal(got, []string{"availableReplicas", "conditions", "generation", "observedGeneration", "phase", "readyReplicas", "replicas", "updatedReplicas"}) {
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

func keys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

const cloneSetYAML = `
apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata:
  name: api
  namespace: shop
  generation: 7
spec:
  replicas: 4
  selector:
    matchLabels: {app: api}
  template:
    metadata:
      labels: {app: api}
    spec:
      priorityClassName: business
      tolerations:
      - {key: dedicated, operator: Equal, value: api, effect: NoSchedule}
      containers:
      - name: api
        image: shop/api:2.0
        resources:
          requests: {cpu: "1", memory: 1Gi}
        envFrom: [{configMapRef: {name: api-env}}]
      imagePullSecrets: [{name: registry}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 10Gi}}
  updateStrategy:
    type: InPlaceIfPossible
    partition: 1
    maxUnavailable: 20%
status:
  observedGeneration: 7
  replicas: 4
  readyReplicas: 4
  availableReplicas: 4
  updatedReplicas: 3
  updatedReadyReplicas: 3
  expectedUpdatedReplicas: 3
  updateRevision: api-7b9c
  currentRevision: api-5f6d
  labelSelector: app=api
`

func TestBuiltinKruiseCloneSet(t *testing.T) {
	store := builtinStore(t, Options{})
	cs := object(t, cloneSetYAML)
	c := lookup(t, store, cs)

	n, req, err := c.GetReplicas(cs)
	if err != nil || n != 4 {
		t.Fatalf("GetReplicas = %d, %v", n, err)
	}
	want := &workv1alpha2.ReplicaRequirements{
		NodeClaim:         &workv1alpha2.NodeClaim{Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: "Equal", Value: "api", Effect: "NoSchedule"}}},
		ResourceRequest:   quantities(map[string]string{"cpu": "1", "memory": "1Gi"}),
		Namespace:         "shop",
		PriorityClassName: "business",
	}
	if diff := cmp.Diff(want, req, quantityEqual); diff != "" {
		t.Errorf("requirement (-want +got):\n%s", diff)
	}

	revised, err := c.ReviseReplica(cs, 1)
	if err != nil {
		t.Fatal(err)
	}
	wantRevised := cs.DeepCopy()
	_ = unstructured.SetNestedField(wantRevised.Object, int64(1), "spec", "replicas")
	if diff := cmp.Diff(wantRevised.Object, revised.Object); diff != "" {
		t.Errorf("ReviseReplica (-want +got):\n%s", diff)
	}

	other := cs.DeepCopy()
	_ = unstructured.SetNestedField(other.Object, "api-0000", "status", "currentRevision")
	status, err := c.AggregateStatus(cs, items(t, c, map[string]*unstructured.Unstructured{"m1": cs, "m2": other}))
	if err != nil {
		t.Fatal(err)
	}
	wantStatus := map[string]any{
		"replicas": int64(8), "readyReplicas": int64(8), "availableReplicas": int64(8), "updatedReplicas": int64(6),
		"updatedReadyReplicas": int64(6), "expectedUpdatedReplicas": int64(6), "observedGeneration": int64(7),
		"updateRevision": "api-7b9c", "labelSelector": "app=api",
	}
	if diff := cmp.Diff(wantStatus, status); diff != "" {
		t.Errorf("AggregateStatus (-want +got):\n%s", diff)
	}

	for _, h := range []struct {
		name   string
		change func(s map[string]any)
		want   bool
	}{
		{"healthy with a partition", func(map[string]any) {}, true},
		{"not all updated", func(s map[string]any) { s["updatedReplicas"] = int64(2) }, false},
		{"not all available", func(s map[string]any) { s["availableReplicas"] = int64(3) }, false},
		{"an older generation", func(s map[string]any) { s["observedGeneration"] = int64(6) }, false},
		{"no partition, all updated", func(s map[string]any) { delete(s, "expectedUpdatedReplicas"); s["updatedReplicas"] = int64(4) }, true},
		{"no partition, not all updated", func(s map[string]any) { delete(s, "expectedUpdatedReplicas") }, false},
	} {
		obj := cs.DeepCopy()
		h.change(obj.Object["status"].(map[string]any))
		if got, err := c.InterpretHealth(obj); err != nil || got != h.want {
			t.Errorf("InterpretHealth(%s) = %v, %v; want %v", h.name, got, err, h.want)
		}
	}

	got, err := c.GetDependencies(cs)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(deps("v1 ConfigMap shop api-env", "v1 Secret shop registry"), got); diff != "" {
		t.Errorf("GetDependencies (-want +got):\n%s", diff)
	}
}

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
	store := builtinStore(t, Options{})
	hr := object(t, helmReleaseYAML)
	c := lookup(t, store, hr)
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

// condition returns the condition of the type in a status, nil if there is none.
func condition(status map[string]any, typ string) map[string]any {
	list, _ := status["conditions"].([]any)
	for _, c := range list {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
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
	store := builtinStore(t, Options{})
	ks := object(t, kustomizationYAML)
	c := lookup(t, store, ks)
	if c.Has(interpreter.OperationGetReplicas) {
		t.Error("a Kustomization has replicas")
	}

	raw, err := c.ReflectStatus(ks)
	if err != nil {
		t.Fatal(err)
	}
	var reflected map[string]any
	_ = json.Unmarshal(raw.Raw, &reflected)
	if got := slices.Sorted(keys(reflected)); !slices.Equal(got, []string{"conditions", "generation", "lastAppliedRevision", "lastAttemptedRevision", "observedGeneration"}) {
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

// TestBuiltinsThroughTheInterpreter: the interpreter uses the built-in customizations.
func TestBuiltinsThroughTheInterpreter(t *testing.T) {
	in := interpreter.Interpreter{Customizations: builtinStore(t, Options{})}
	rollout := object(t, rolloutYAML)
	if !in.HasReplicas(rollout) {
		t.Error("a Rollout has no replicas")
	}
	if h := in.Health(rollout); h != workv1alpha1.ResourceHealthy {
		t.Errorf("Health(Rollout) = %s", h)
	}
	hr := object(t, helmReleaseYAML)
	if in.HasReplicas(hr) {
		t.Error("a HelmRelease has replicas")
	}
	raw, err := in.ReflectStatus(hr)
	if err != nil || raw == nil {
		t.Errorf("ReflectStatus(HelmRelease) = %v, %v", raw, err)
	}
}
