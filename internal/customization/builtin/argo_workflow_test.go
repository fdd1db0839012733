package builtin

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const workflowYAML = `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  name: etl-7xk2p
  namespace: data
  generation: 6
spec:
  entrypoint: main
  serviceAccountName: etl-runner
  imagePullSecrets: [{name: registry}]
  arguments:
    parameters:
    - name: day
      value: "2026-03-01"
    - name: bucket
      valueFrom: {configMapKeyRef: {name: etl-settings, key: bucket}}
  volumes:
  - name: creds
    secret: {secretName: etl-creds}
  templates:
  - name: main
    dag:
      tasks:
      - {name: extract, template: extract}
      - {name: load, template: load, dependencies: [extract]}
  - name: extract
    container:
      image: shop/etl:2.4
      command: [extract]
      envFrom: [{configMapRef: {name: etl-env}}]
      volumeMounts: [{name: creds, mountPath: /creds}]
  - name: load
    script:
      image: python:3.12
      command: [python]
      source: print("load")
      env:
      - name: TOKEN
        valueFrom: {secretKeyRef: {name: warehouse-token, key: token}}
status:
  phase: Running
  progress: 1/2
  startedAt: "2026-03-01T01:00:00Z"
  finishedAt: null
  estimatedDuration: 300
  conditions:
  - {type: PodRunning, status: "True"}
`

func TestBuiltinArgoWorkflow(t *testing.T) {
	wf := object(t, workflowYAML)
	c := builtinFor(t, wf)
	ops(t, c, opReflect, opAgg, opHealth, opDeps)
	checkHealth(t, c, wf, []healthCase{
		{"running", nil, true},
		{"succeeded", func(u *unstructured.Unstructured) { set(u, "status.phase", "Succeeded") }, true},
		{"pending", func(u *unstructured.Unstructured) { set(u, "status.phase", "Pending") }, true},
		{"failed", func(u *unstructured.Unstructured) { set(u, "status.phase", "Failed") }, false},
		{"error", func(u *unstructured.Unstructured) { set(u, "status.phase", "Error") }, false},
		{"no status", func(u *unstructured.Unstructured) { set(u, "status", nil) }, false},
	})
	if got := keys(reflected(t, c, wf)); !cmp.Equal(got, []string{"conditions", "estimatedDuration", "phase", "progress", "startedAt"}) {
		t.Errorf("reflected fields %v", got)
	}

	done := with(wf, "status.phase", "Succeeded", "status.progress", "2/2", "status.startedAt", "2026-03-01T00:59:00Z", "status.finishedAt", "2026-03-01T01:04:00Z")
	status, err := c.AggregateStatus(wf, items(t, c, members{"eu": wf, "us": done}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"phase": "Running", "progress": "3/4", "startedAt": "2026-03-01T00:59:00Z"}
	if diff := cmp.Diff(want, status); diff != "" {
		t.Errorf("AggregateStatus, one running (-want +got):\n%s", diff)
	}
	failed := with(done, "status.phase", "Failed", "status.message", "child 'load' failed")
	status, _ = c.AggregateStatus(wf, items(t, c, members{"eu": done, "us": failed}))
	want = map[string]any{"phase": "Failed", "progress": "4/4", "startedAt": "2026-03-01T00:59:00Z", "finishedAt": "2026-03-01T01:04:00Z", "message": "us: child 'load' failed"}
	if diff := cmp.Diff(want, status); diff != "" {
		t.Errorf("AggregateStatus, one failed (-want +got):\n%s", diff)
	}
	status, _ = c.AggregateStatus(wf, items(t, c, members{"eu": done, "us": nil}))
	if status["phase"] != "Pending" || status["finishedAt"] != nil {
		t.Errorf("AggregateStatus with a member not reporting = %v", status)
	}

	got, err := c.GetDependencies(wf)
	if err != nil {
		t.Fatal(err)
	}
	want2 := deps("v1 Secret data etl-creds", "v1 Secret data registry", "v1 ServiceAccount data etl-runner",
		"v1 ConfigMap data etl-env", "v1 Secret data warehouse-token", "v1 ConfigMap data etl-settings")
	if diff := cmp.Diff(want2, got); diff != "" {
		t.Errorf("GetDependencies (-want +got):\n%s", diff)
	}
	ref := object(t, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: nightly-abc, namespace: data}
spec:
  workflowTemplateRef: {name: nightly, clusterScope: true}
`)
	if got, err := c.GetDependencies(ref); err != nil || !cmp.Equal(got, deps("argoproj.io/v1alpha1 ClusterWorkflowTemplate - nightly")) {
		t.Errorf("GetDependencies of a cluster template ref = %v, %v", got, err)
	}
}
