package builtin

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

const tfJobYAML = `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: mnist
  namespace: ml
  generation: 1
spec:
  runPolicy: {cleanPodPolicy: None}
  tfReplicaSpecs:
    PS:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: tensorflow
            image: kubeflow/tf-dist-mnist-test:latest
            envFrom: [{configMapRef: {name: mnist-config}}]
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        spec:
          serviceAccountName: trainer
          containers:
          - name: tensorflow
            image: kubeflow/tf-dist-mnist-test:latest
            resources:
              limits: {nvidia.com/gpu: 1}
            envFrom: [{configMapRef: {name: mnist-config}}]
            volumeMounts: [{name: data, mountPath: /data}]
          volumes:
          - name: data
            persistentVolumeClaim: {claimName: mnist-data}
status:
  startTime: "2026-03-04T10:00:00Z"
  lastReconcileTime: "2026-03-04T10:05:00Z"
  replicaStatuses:
    PS: {active: 1}
    Worker: {active: 2}
  conditions:
  - {type: Created, status: "True", reason: TFJobCreated, message: "TFJob ml/mnist is created.", lastUpdateTime: "2026-03-04T10:00:00Z", lastTransitionTime: "2026-03-04T10:00:00Z"}
  - {type: Running, status: "True", reason: TFJobRunning, message: "TFJob ml/mnist is running.", lastUpdateTime: "2026-03-04T10:01:00Z", lastTransitionTime: "2026-03-04T10:01:00Z"}
`

func TestBuiltinKubeflowTrainingJobs(t *testing.T) {
	tf := object(t, tfJobYAML)
	c := builtinFor(t, tf)
	ops(t, c, opReflect, opAgg, opHealth, opDeps)

	succeeded := func(u *unstructured.Unstructured) *unstructured.Unstructured {
		o := u.DeepCopy()
		conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
		conds[1].(map[string]any)["status"] = "False"
		conds = append(conds, map[string]any{"type": "Succeeded", "status": "True", "reason": "TFJobSucceeded", "message": "done",
			"lastUpdateTime": "2026-03-04T11:00:00Z", "lastTransitionTime": "2026-03-04T11:00:00Z"})
		_ = unstructured.SetNestedSlice(o.Object, conds, "status", "conditions")
		set(o, "status.completionTime", "2026-03-04T11:00:00Z")
		set(o, "status.replicaStatuses", map[string]any{"PS": map[string]any{"succeeded": int64(1)}, "Worker": map[string]any{"succeeded": int64(2)}})
		return o
	}
	failed := func(u *unstructured.Unstructured) *unstructured.Unstructured {
		o := u.DeepCopy()
		conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
		conds[1].(map[string]any)["status"] = "False"
		conds = append(conds, map[string]any{"type": "Failed", "status": "True", "reason": "TFJobFailed", "message": "Worker 1 exited with code 137",
			"lastUpdateTime": "2026-03-04T10:30:00Z", "lastTransitionTime": "2026-03-04T10:30:00Z"})
		_ = unstructured.SetNestedSlice(o.Object, conds, "status", "conditions")
		return o
	}
	checkHealth(t, c, tf, []healthCase{
		{"running", nil, true},
		{"succeeded", func(u *unstructured.Unstructured) { u.Object = succeeded(u).Object }, true},
		{"failed", func(u *unstructured.Unstructured) { u.Object = failed(u).Object }, false},
		{"not created yet", func(u *unstructured.Unstructured) { set(u, "status", nil) }, false},
	})

	status, err := c.AggregateStatus(tf, items(t, c, members{"eu": tf, "us": succeeded(tf)}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"startTime":       "2026-03-04T10:00:00Z",
		"replicaStatuses": map[string]any{"PS": map[string]any{"active": int64(1), "succeeded": int64(1), "failed": int64(0)}, "Worker": map[string]any{"active": int64(2), "succeeded": int64(2), "failed": int64(0)}},
		"conditions": []any{map[string]any{"type": "Running", "status": "True", "reason": "RunningInClusters", "message": "running in 1 of 2 clusters",
			"lastTransitionTime": "2026-03-04T10:01:00Z", "lastUpdateTime": "2026-03-04T10:01:00Z"}},
	}
	if diff := cmp.Diff(want, status); diff != "" {
		t.Errorf("AggregateStatus, one running, one succeeded (-want +got):\n%s", diff)
	}
	status, _ = c.AggregateStatus(tf, items(t, c, members{"eu": succeeded(tf), "us": succeeded(tf)}))
	if cond := condition(status, "Succeeded"); cond == nil || status["completionTime"] != "2026-03-04T11:00:00Z" {
		t.Errorf("AggregateStatus, all succeeded = %v", status)
	}
	status, _ = c.AggregateStatus(tf, items(t, c, members{"eu": succeeded(tf), "us": failed(tf)}))
	if cond := condition(status, "Failed"); cond == nil || cond["message"] != "1 of 2 clusters failed: us: Worker 1 exited with code 137" || status["completionTime"] != nil {
		t.Errorf("AggregateStatus, one failed = %v", status)
	}

	got, err := c.GetDependencies(tf)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(deps("v1 ConfigMap ml mnist-config", "v1 PersistentVolumeClaim ml mnist-data", "v1 ServiceAccount ml trainer"), got); diff != "" {
		t.Errorf("GetDependencies (-want +got):\n%s", diff)
	}

	// PyTorchJob and MPIJob read their own replica specs the same way.
	pt := object(t, `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: bert, namespace: ml, generation: 1}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers: [{name: pytorch, image: shop/bert:1, envFrom: [{secretRef: {name: hf-token}}]}]
    Worker:
      replicas: 3
      template:
        spec:
          containers: [{name: pytorch, image: shop/bert:1, envFrom: [{secretRef: {name: hf-token}}]}]
status:
  conditions:
  - {type: Created, status: "True", lastTransitionTime: "2026-03-04T10:00:00Z"}
`)
	pc := builtinFor(t, pt)
	ops(t, pc, opReflect, opAgg, opHealth, opDeps)
	if got, err := pc.GetDependencies(pt); err != nil || !cmp.Equal(got, deps("v1 Secret ml hf-token")) {
		t.Errorf("PyTorchJob GetDependencies = %v, %v", got, err)
	}
	if h, err := pc.InterpretHealth(pt); err != nil || !h {
		t.Errorf("PyTorchJob InterpretHealth (created) = %v, %v", h, err)
	}
	status, err = pc.AggregateStatus(pt, items(t, pc, members{"eu": pt, "us": pt}))
	if cond := condition(status, "Created"); err != nil || cond == nil || cond["message"] != "created in 2 clusters" || cond["lastTransitionTime"] != "2026-03-04T10:00:00Z" {
		t.Errorf("PyTorchJob AggregateStatus, created = %v, %v", status, err)
	}
	mpi := object(t, `
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: allreduce, namespace: hpc, generation: 1}
spec:
  slotsPerWorker: 1
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers: [{name: launcher, image: mpioperator/mpi-pi:openmpi}]
    Worker:
      replicas: 4
      template:
        spec:
          containers: [{name: worker, image: mpioperator/mpi-pi:openmpi}]
          volumes: [{name: hosts, configMap: {name: allreduce-hosts}}]
`)
	mc := builtinFor(t, mpi)
	if got, err := mc.GetDependencies(mpi); err != nil || !cmp.Equal(got, deps("v1 ConfigMap hpc allreduce-hosts")) {
		t.Errorf("MPIJob GetDependencies = %v, %v", got, err)
	}
}

const notebookYAML = `
apiVersion: kubeflow.org/v1
kind: Notebook
metadata:
  name: alice-lab
  namespace: kubeflow-alice
  generation: 1
spec:
  template:
    spec:
      serviceAccountName: default-editor
      containers:
      - name: alice-lab
        image: kubeflownotebookswg/jupyter-scipy:v1.9.0
        resources:
          requests: {cpu: 500m, memory: 1Gi}
        volumeMounts: [{name: workspace, mountPath: /home/jovyan}]
      volumes:
      - name: workspace
        persistentVolumeClaim: {claimName: alice-lab-workspace}
status:
  readyReplicas: 1
  containerState:
    running: {startedAt: "2026-03-05T09:00:00Z"}
  conditions:
  - {type: Ready, status: "True", lastProbeTime: "2026-03-05T09:01:00Z"}
`

func TestBuiltinKubeflowNotebook(t *testing.T) {
	nb := object(t, notebookYAML)
	c := builtinFor(t, nb)
	ops(t, c, opReplicas, opReflect, opAgg, opHealth, opDeps)
	n, req, err := c.GetReplicas(nb)
	want := &workv1alpha2.ReplicaRequirements{ResourceRequest: quantities(map[string]string{"cpu": "500m", "memory": "1Gi"}), Namespace: "kubeflow-alice"}
	if err != nil || n != 1 || !cmp.Equal(want, req, quantityEqual) {
		t.Errorf("GetReplicas = %d, %+v, %v", n, req, err)
	}
	checkHealth(t, c, nb, []healthCase{
		{"ready", nil, true},
		{"starting", func(u *unstructured.Unstructured) { set(u, "status.readyReplicas", int64(0)) }, false},
		{"stopped on purpose", func(u *unstructured.Unstructured) {
			set(u, "status.readyReplicas", int64(0))
			u.SetAnnotations(map[string]string{"kubeflow-resource-stopped": "2026-03-05T18:00:00Z"})
		}, true},
		{"no status", func(u *unstructured.Unstructured) { set(u, "status", nil) }, false},
	})
	status, err := c.AggregateStatus(nb, items(t, c, members{"eu": nb, "us": nil}))
	if err != nil {
		t.Fatal(err)
	}
	if status["readyReplicas"] != int64(1) || status["containerState"] == nil || len(status["conditions"].([]any)) != 1 {
		t.Errorf("AggregateStatus = %v", status)
	}
	got, _ := c.GetDependencies(nb)
	if diff := cmp.Diff(deps("v1 PersistentVolumeClaim kubeflow-alice alice-lab-workspace", "v1 ServiceAccount kubeflow-alice default-editor"), got); diff != "" {
		t.Errorf("GetDependencies (-want +got):\n%s", diff)
	}
}
