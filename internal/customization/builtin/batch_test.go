package builtin

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const volcanoJobYAML = `
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: mpi-train
  namespace: hpc
  generation: 1
spec:
  minAvailable: 3
  schedulerName: volcano
  queue: research
  plugins: {ssh: [], svc: []}
  policies:
  - {event: PodEvicted, action: RestartJob}
  volumes:
  - {mountPath: /data, volumeClaimName: training-data}
  tasks:
  - name: master
    replicas: 1
    template:
      spec:
        restartPolicy: OnFailure
        containers:
        - name: master
          image: volcanosh/example-mpi:0.0.3
          envFrom: [{configMapRef: {name: mpi-env}}]
  - name: worker
    replicas: 2
    template:
      spec:
        restartPolicy: OnFailure
        imagePullSecrets: [{name: registry}]
        containers:
        - name: worker
          image: volcanosh/example-mpi:0.0.3
          resources:
            requests: {cpu: "2", memory: 4Gi}
status:
  state: {phase: Running, lastTransitionTime: "2026-03-06T12:00:00Z"}
  minAvailable: 3
  running: 3
  pending: 0
  succeeded: 0
  failed: 0
  retryCount: 0
  taskStatusCount:
    master: {phase: {Running: 1}}
    worker: {phase: {Running: 2}}
`

func TestBuiltinVolcanoJob(t *testing.T) {
	job := object(t, volcanoJobYAML)
	c := builtinFor(t, job)
	ops(t, c, opReflect, opAgg, opHealth, opDeps)
	checkHealth(t, c, job, []healthCase{
		{"running", nil, true},
		{"pending (waiting for the gang)", func(u *unstructured.Unstructured) { set(u, "status.state.phase", "Pending") }, true},
		{"completed", func(u *unstructured.Unstructured) { set(u, "status.state.phase", "Completed") }, true},
		{"failed", func(u *unstructured.Unstructured) { set(u, "status.state.phase", "Failed") }, false},
		{"terminated", func(u *unstructured.Unstructured) { set(u, "status.state.phase", "Terminated") }, false},
		{"no phase yet", func(u *unstructured.Unstructured) { set(u, "status.state", nil) }, false},
	})
	done := with(job, "status.state.phase", "Completed", "status.state.lastTransitionTime", "2026-03-06T13:00:00Z", "status.running", int64(0), "status.succeeded", int64(3),
		"status.taskStatusCount", map[string]any{"master": map[string]any{"phase": map[string]any{"Succeeded": int64(1)}}, "worker": map[string]any{"phase": map[string]any{"Succeeded": int64(2)}}})
	status, err := c.AggregateStatus(job, items(t, c, members{"eu": job, "us": done}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"state":        map[string]any{"phase": "Running", "lastTransitionTime": "2026-03-06T12:00:00Z"},
		"minAvailable": int64(6), "pending": int64(0), "running": int64(3), "succeeded": int64(3), "failed": int64(0), "terminating": int64(0), "unknown": int64(0), "retryCount": int64(0),
		"taskStatusCount": map[string]any{
			"master": map[string]any{"phase": map[string]any{"Running": int64(1), "Succeeded": int64(1)}},
			"worker": map[string]any{"phase": map[string]any{"Running": int64(2), "Succeeded": int64(2)}},
		},
	}
	if diff := cmp.Diff(want, status); diff != "" {
		t.Errorf("AggregateStatus (-want +got):\n%s", diff)
	}
	status, _ = c.AggregateStatus(job, items(t, c, members{"eu": done, "us": done}))
	if status["state"].(map[string]any)["phase"] != "Completed" {
		t.Errorf("AggregateStatus, all completed = %v", status)
	}
	got, _ := c.GetDependencies(job)
	if diff := cmp.Diff(deps("v1 ConfigMap hpc mpi-env", "v1 Secret hpc registry", "v1 PersistentVolumeClaim hpc training-data"), got); diff != "" {
		t.Errorf("GetDependencies (-want +got):\n%s", diff)
	}
}

const flinkDeploymentYAML = `
apiVersion: flink.apache.org/v1beta1
kind: FlinkDeployment
metadata:
  name: clickstream
  namespace: streaming
  generation: 2
spec:
  image: flink:1.19
  flinkVersion: v1_19
  serviceAccount: flink
  flinkConfiguration:
    taskmanager.numberOfTaskSlots: "2"
    state.savepoints.dir: s3://flink/savepoints
  jobManager:
    replicas: 1
    resource: {memory: 2048m, cpu: 1}
  taskManager:
    resource: {memory: 4096m, cpu: 2}
    podTemplate:
      spec:
        containers:
        - name: flink-main-container
          envFrom: [{secretRef: {name: s3-credentials}}]
  podTemplate:
    spec:
      volumes:
      - name: log-config
        configMap: {name: flink-log-config}
      containers:
      - name: flink-main-container
        volumeMounts: [{name: log-config, mountPath: /opt/flink/log-config}]
  job:
    jarURI: local:///opt/flink/usrlib/clickstream.jar
    parallelism: 4
    upgradeMode: savepoint
    state: running
status:
  lifecycleState: STABLE
  jobManagerDeploymentStatus: READY
  observedGeneration: 2
  jobStatus:
    jobName: clickstream
    jobId: 8a3c61e0d0a84f0e
    state: RUNNING
    startTime: "1741262400000"
    updateTime: "1741262460000"
  taskManager: {replicas: 2, labelSelector: "component=taskmanager,app=clickstream"}
  reconciliationStatus: {state: DEPLOYED}
`

func TestBuiltinFlinkDeployment(t *testing.T) {
	fd := object(t, flinkDeploymentYAML)
	c := builtinFor(t, fd)
	ops(t, c, opReflect, opAgg, opHealth, opDeps)
	checkHealth(t, c, fd, []healthCase{
		{"stable and running", nil, true},
		{"job manager deploying", func(u *unstructured.Unstructured) { set(u, "status.jobManagerDeploymentStatus", "DEPLOYING") }, false},
		{"job manager in error", func(u *unstructured.Unstructured) { set(u, "status.jobManagerDeploymentStatus", "ERROR") }, false},
		{"lifecycle failed", func(u *unstructured.Unstructured) { set(u, "status.lifecycleState", "FAILED") }, false},
		{"job failed", func(u *unstructured.Unstructured) { set(u, "status.jobStatus.state", "FAILED") }, false},
		{"suspended on purpose", func(u *unstructured.Unstructured) {
			set(u, "status.lifecycleState", "SUSPENDED")
			set(u, "status.jobManagerDeploymentStatus", "MISSING")
			set(u, "status.jobStatus.state", "FINISHED")
		}, true},
		{"no status", func(u *unstructured.Unstructured) { set(u, "status", nil) }, false},
	})
	upgrading := with(fd, "status.lifecycleState", "UPGRADING", "status.jobManagerDeploymentStatus", "DEPLOYING", "status.jobStatus.state", "RECONCILING",
		"status.error", "savepoint in progress", "status.taskManager.replicas", int64(0))
	status, err := c.AggregateStatus(fd, items(t, c, members{"eu": fd, "us": upgrading}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"lifecycleState": "UPGRADING", "jobManagerDeploymentStatus": "DEPLOYING", "error": "us: savepoint in progress", "taskManager": map[string]any{"replicas": int64(2)}}
	if diff := cmp.Diff(want, status); diff != "" {
		t.Errorf("AggregateStatus (-want +got):\n%s", diff)
	}
	status, _ = c.AggregateStatus(fd, items(t, c, members{"eu": fd, "us": fd}))
	if status["lifecycleState"] != "STABLE" || status["jobStatus"].(map[string]any)["state"] != "RUNNING" {
		t.Errorf("AggregateStatus, all stable = %v", status)
	}
	status, _ = c.AggregateStatus(fd, items(t, c, members{"eu": fd, "us": with(fd, "status.jobStatus.state", "FAILED")}))
	if status["jobStatus"].(map[string]any)["state"] != "FAILED" {
		t.Errorf("AggregateStatus, one job failed = %v", status)
	}
	got, _ := c.GetDependencies(fd)
	if diff := cmp.Diff(deps("v1 ServiceAccount streaming flink", "v1 ConfigMap streaming flink-log-config", "v1 Secret streaming s3-credentials"), got); diff != "" {
		t.Errorf("GetDependencies (-want +got):\n%s", diff)
	}
}

const sparkApplicationYAML = `
apiVersion: sparkoperator.k8s.io/v1beta2
kind: SparkApplication
metadata:
  name: spark-pi
  namespace: analytics
  generation: 1
spec:
  type: Scala
  mode: cluster
  image: spark:3.5.3
  mainClass: org.apache.spark.examples.SparkPi
  mainApplicationFile: local:///opt/spark/examples/jars/spark-examples.jar
  sparkVersion: 3.5.3
  sparkConfigMap: spark-conf
  imagePullSecrets: [registry]
  volumes:
  - name: scratch
    persistentVolumeClaim: {claimName: spark-scratch}
  driver:
    cores: 1
    memory: 512m
    serviceAccount: spark-driver
    configMaps: [{name: app-config, path: /etc/app}]
    envFrom: [{secretRef: {name: warehouse-creds}}]
  executor:
    instances: 4
    cores: 1
    memory: 1g
    secrets: [{name: gcp-sa, path: /etc/gcp, secretType: GCPServiceAccount}]
status:
  sparkApplicationId: spark-5c1f3e2a
  submissionAttempts: 1
  executionAttempts: 1
  lastSubmissionAttemptTime: "2026-03-07T06:00:00Z"
  applicationState: {state: RUNNING}
  driverInfo: {podName: spark-pi-driver, webUIPort: 4040}
  executorState: {spark-pi-exec-1: RUNNING, spark-pi-exec-2: RUNNING}
`

func TestBuiltinSparkApplication(t *testing.T) {
	app := object(t, sparkApplicationYAML)
	c := builtinFor(t, app)
	ops(t, c, opReflect, opAgg, opHealth, opDeps)
	checkHealth(t, c, app, []healthCase{
		{"running", nil, true},
		{"completed", func(u *unstructured.Unstructured) { set(u, "status.applicationState.state", "COMPLETED") }, true},
		{"submitted", func(u *unstructured.Unstructured) { set(u, "status.applicationState.state", "SUBMITTED") }, true},
		{"failed", func(u *unstructured.Unstructured) { set(u, "status.applicationState.state", "FAILED") }, false},
		{"submission failed", func(u *unstructured.Unstructured) { set(u, "status.applicationState.state", "SUBMISSION_FAILED") }, false},
		{"no state yet", func(u *unstructured.Unstructured) { set(u, "status", nil) }, false},
	})
	if got := keys(reflected(t, c, app)); !cmp.Equal(got, []string{"applicationState", "executionAttempts", "lastSubmissionAttemptTime", "sparkApplicationId", "submissionAttempts"}) {
		t.Errorf("reflected fields %v", got)
	}
	failed := with(app, "status.applicationState", map[string]any{"state": "FAILED", "errorMessage": "driver container failed with ExitCode: 1"},
		"status.submissionAttempts", int64(2), "status.lastSubmissionAttemptTime", "2026-03-07T06:05:00Z", "status.terminationTime", "2026-03-07T06:09:00Z")
	status, err := c.AggregateStatus(app, items(t, c, members{"eu": app, "us": failed}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"applicationState": map[string]any{"state": "FAILED", "errorMessage": "us: driver container failed with ExitCode: 1"},
		"submissionAttempts": int64(3), "executionAttempts": int64(2), "lastSubmissionAttemptTime": "2026-03-07T06:05:00Z"}
	if diff := cmp.Diff(want, status); diff != "" {
		t.Errorf("AggregateStatus (-want +got):\n%s", diff)
	}
	got, _ := c.GetDependencies(app)
	if diff := cmp.Diff(deps("v1 ServiceAccount analytics spark-driver", "v1 ConfigMap analytics app-config", "v1 Secret analytics warehouse-creds",
		"v1 Secret analytics gcp-sa", "v1 ConfigMap analytics spark-conf", "v1 Secret analytics registry", "v1 PersistentVolumeClaim analytics spark-scratch"), got); diff != "" {
		t.Errorf("GetDependencies (-want +got):\n%s", diff)
	}
}
