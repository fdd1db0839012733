package builtin

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const rayClusterYAML = `
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: inference
  namespace: ray
  generation: 3
spec:
  rayVersion: "2.40.0"
  enableInTreeAutoscaling: true
  headGroupSpec:
    rayStartParams: {dashboard-host: 0.0.0.0}
    template:
      spec:
        serviceAccountName: ray-head
        containers:
        - name: ray-head
          image: rayproject/ray:2.40.0
          resources:
            requests: {cpu: "2", memory: 8Gi}
  workerGroupSpecs:
  - groupName: gpu
    replicas: 2
    minReplicas: 1
    maxReplicas: 8
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-worker
          image: rayproject/ray:2.40.0-gpu
          envFrom: [{secretRef: {name: hf-token}}]
          resources:
            limits: {nvidia.com/gpu: 1}
  - groupName: cpu
    replicas: 1
    minReplicas: 0
    maxReplicas: 4
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-worker
          image: rayproject/ray:2.40.0
status:
  state: ready
  readyWorkerReplicas: 3
  availableWorkerReplicas: 3
  desiredWorkerReplicas: 3
  minWorkerReplicas: 1
  maxWorkerReplicas: 12
  desiredCPU: "5"
  desiredMemory: 20Gi
  desiredGPU: "2"
  observedGeneration: 3
  conditions:
  - {type: RayClusterProvisioned, status: "True", reason: AllPodRunningAndReadyFirstTime, message: "", lastTransitionTime: "2026-03-08T10:00:00Z"}
  - {type: HeadPodReady, status: "True", reason: HeadPodRunningAndReady, message: "", lastTransitionTime: "2026-03-08T10:00:00Z"}
`

func TestBuiltinRayCluster(t *testing.T) {
	rc := object(t, rayClusterYAML)
	c := builtinFor(t, rc)
	ops(t, c, opRetain, opReflect, opAgg, opHealth, opDeps)
	checkHealth(t, c, rc, []healthCase{
		{"provisioned, head ready", nil, true},
		{"head not ready", func(u *unstructured.Unstructured) {
			condition(u.Object["status"].(map[string]any), "HeadPodReady")["status"] = "False"
		}, false},
		{"a replica failure", func(u *unstructured.Unstructured) {
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			_ = unstructured.SetNestedSlice(u.Object, append(conds, map[string]any{"type": "RayClusterReplicaFailure", "status": "True"}), "status", "conditions")
		}, false},
		{"no conditions, state ready", func(u *unstructured.Unstructured) { set(u, "status.conditions", nil) }, true},
		{"no conditions, state failed", func(u *unstructured.Unstructured) {
			set(u, "status.conditions", nil)
			set(u, "status.state", "failed")
		}, false},
		{"suspended on purpose", func(u *unstructured.Unstructured) {
			set(u, "spec.suspend", true)
			set(u, "status", nil)
		}, true},
	})

	// The member's autoscaler scaled the gpu group to 5 and marks a worker to delete.
	observed := rc.DeepCopy()
	groups, _, _ := unstructured.NestedSlice(observed.Object, "spec", "workerGroupSpecs")
	groups[0].(map[string]any)["replicas"] = int64(5)
	groups[0].(map[string]any)["scaleStrategy"] = map[string]any{"workersToDelete": []any{"inference-gpu-x7k2"}}
	_ = unstructured.SetNestedSlice(observed.Object, groups, "spec", "workerGroupSpecs")
	retained, err := c.Retain(rc.DeepCopy(), observed)
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(retained.Object["spec"], observed.Object["spec"]) {
		t.Errorf("Retain with autoscaling did not keep the member's worker replicas:\n%s", cmp.Diff(observed.Object["spec"], retained.Object["spec"]))
	}
	fixed := with(rc, "spec.enableInTreeAutoscaling", false)
	if retained, err := c.Retain(fixed.DeepCopy(), observed); err != nil || !cmp.Equal(retained.Object, fixed.Object) {
		t.Errorf("Retain without autoscaling changed the template: %v", err)
	}

	scaling := with(rc, "status.state", nil, "status.readyWorkerReplicas", int64(1), "status.desiredCPU", "500m", "status.observedGeneration", int64(2))
	status, err := c.AggregateStatus(rc, items(t, c, members{"eu": rc, "us": scaling}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"readyWorkerReplicas": int64(4), "availableWorkerReplicas": int64(6), "desiredWorkerReplicas": int64(6), "minWorkerReplicas": int64(2),
		"maxWorkerReplicas": int64(24), "desiredCPU": "5500m", "desiredMemory": "40Gi", "desiredGPU": "4"}
	if diff := cmp.Diff(want, status); diff != "" {
		t.Errorf("AggregateStatus (-want +got):\n%s", diff)
	}
	status, _ = c.AggregateStatus(rc, items(t, c, members{"eu": rc, "us": rc}))
	if status["state"] != "ready" || status["observedGeneration"] != int64(3) {
		t.Errorf("AggregateStatus, all ready = %v", status)
	}
	got, _ := c.GetDependencies(rc)
	if diff := cmp.Diff(deps("v1 ServiceAccount ray ray-head", "v1 Secret ray hf-token"), got); diff != "" {
		t.Errorf("GetDependencies (-want +got):\n%s", diff)
	}
}

const rayJobYAML = `
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: batch-embed
  namespace: ray
  generation: 1
spec:
  entrypoint: python /home/ray/embed.py
  shutdownAfterJobFinishes: true
  ttlSecondsAfterFinished: 600
  rayClusterSpec:
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers:
          - name: ray-head
            image: rayproject/ray:2.40.0
            volumeMounts: [{name: code, mountPath: /home/ray}]
          volumes:
          - name: code
            configMap: {name: embed-code}
    workerGroupSpecs:
    - groupName: workers
      replicas: 2
      rayStartParams: {}
      template:
        spec:
          containers: [{name: ray-worker, image: rayproject/ray:2.40.0}]
  submitterPodTemplate:
    spec:
      restartPolicy: Never
      containers:
      - name: submitter
        image: rayproject/ray:2.40.0
        envFrom: [{secretRef: {name: submit-token}}]
status:
  jobId: batch-embed-7kq2x
  rayClusterName: batch-embed-raycluster-5zt8l
  jobStatus: RUNNING
  jobDeploymentStatus: Running
  startTime: "2026-03-08T11:00:00Z"
  observedGeneration: 1
`

func TestBuiltinRayJob(t *testing.T) {
	rj := object(t, rayJobYAML)
	c := builtinFor(t, rj)
	ops(t, c, opReflect, opAgg, opHealth, opDeps)
	checkHealth(t, c, rj, []healthCase{
		{"running", nil, true},
		{"succeeded", func(u *unstructured.Unstructured) {
			set(u, "status.jobStatus", "SUCCEEDED")
			set(u, "status.jobDeploymentStatus", "Complete")
		}, true},
		{"job failed", func(u *unstructured.Unstructured) { set(u, "status.jobStatus", "FAILED") }, false},
		{"deployment failed", func(u *unstructured.Unstructured) {
			set(u, "status.jobStatus", nil)
			set(u, "status.jobDeploymentStatus", "Failed")
		}, false},
		{"not taken up", func(u *unstructured.Unstructured) { set(u, "status", nil) }, false},
	})
	done := with(rj, "status.jobStatus", "SUCCEEDED", "status.jobDeploymentStatus", "Complete", "status.endTime", "2026-03-08T11:30:00Z",
		"status.succeeded", int64(1), "status.failed", int64(0), "status.message", "Job finished successfully.")
	status, err := c.AggregateStatus(rj, items(t, c, members{"eu": rj, "us": done}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"jobStatus": "RUNNING", "jobDeploymentStatus": "Running", "startTime": "2026-03-08T11:00:00Z",
		"succeeded": int64(1), "failed": int64(0), "message": "us: Job finished successfully."}
	if diff := cmp.Diff(want, status); diff != "" {
		t.Errorf("AggregateStatus (-want +got):\n%s", diff)
	}
	status, _ = c.AggregateStatus(rj, items(t, c, members{"eu": done, "us": done}))
	if status["jobStatus"] != "SUCCEEDED" || status["jobDeploymentStatus"] != "Complete" || status["endTime"] != "2026-03-08T11:30:00Z" {
		t.Errorf("AggregateStatus, all done = %v", status)
	}
	got, _ := c.GetDependencies(rj)
	if diff := cmp.Diff(deps("v1 ConfigMap ray embed-code", "v1 Secret ray submit-token"), got); diff != "" {
		t.Errorf("GetDependencies (-want +got):\n%s", diff)
	}
}

const rayServiceYAML = `
apiVersion: ray.io/v1
kind: RayService
metadata:
  name: llm
  namespace: serving
  generation: 4
spec:
  serveConfigV2: |
    applications:
    - name: llm
      import_path: serve_app:app
  rayClusterConfig:
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers:
          - name: ray-head
            image: rayproject/ray-llm:2.40.0
            envFrom: [{secretRef: {name: hf-token}}]
    workerGroupSpecs:
    - groupName: gpu
      replicas: 2
      rayStartParams: {}
      template:
        spec:
          containers:
          - name: ray-worker
            image: rayproject/ray-llm:2.40.0
            envFrom: [{secretRef: {name: hf-token}}]
status:
  observedGeneration: 4
  numServeEndpoints: 3
  conditions:
  - {type: Ready, status: "True", reason: NonZeroServeEndpoints, message: "Number of serve endpoints is greater than 0", lastTransitionTime: "2026-03-08T12:00:00Z"}
  - {type: UpgradeInProgress, status: "False", reason: NoPendingCluster, message: "", lastTransitionTime: "2026-03-08T12:00:00Z"}
  activeServiceStatus:
    rayClusterName: llm-raycluster-b6hvx
`

func TestBuiltinRayService(t *testing.T) {
	rs := object(t, rayServiceYAML)
	c := builtinFor(t, rs)
	ops(t, c, opReflect, opAgg, opHealth, opDeps)
	checkHealth(t, c, rs, []healthCase{
		{"ready", nil, true},
		{"not ready", func(u *unstructured.Unstructured) {
			condition(u.Object["status"].(map[string]any), "Ready")["status"] = "False"
		}, false},
		{"older KubeRay: Running", func(u *unstructured.Unstructured) {
			set(u, "status.conditions", nil)
			set(u, "status.serviceStatus", "Running")
		}, true},
		{"no status", func(u *unstructured.Unstructured) { set(u, "status", nil) }, false},
	})
	down := rs.DeepCopy()
	ready := condition(down.Object["status"].(map[string]any), "Ready")
	ready["status"], ready["reason"], ready["message"], ready["lastTransitionTime"] = "False", "ZeroServeEndpoints", "no serve endpoints", "2026-03-08T13:00:00Z"
	set(down, "status.numServeEndpoints", int64(0))
	status, err := c.AggregateStatus(rs, items(t, c, members{"eu": rs, "us": down}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"numServeEndpoints": int64(3), "observedGeneration": int64(4), "conditions": []any{map[string]any{"type": "Ready", "status": "False",
		"reason": "NotReadyInClusters", "message": "1 of 2 clusters not ready: us: no serve endpoints", "lastTransitionTime": "2026-03-08T13:00:00Z"}}}
	if diff := cmp.Diff(want, status); diff != "" {
		t.Errorf("AggregateStatus (-want +got):\n%s", diff)
	}
	got, _ := c.GetDependencies(rs)
	if diff := cmp.Diff(deps("v1 Secret serving hf-token"), got); diff != "" {
		t.Errorf("GetDependencies (-want +got):\n%s", diff)
	}
}
