package builtin

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

const (
	opReplicas = interpreter.OperationGetReplicas
	opRevise   = interpreter.OperationReviseReplica
	opRetain   = interpreter.OperationRetain
	opReflect  = interpreter.OperationReflectStatus
	opAgg      = interpreter.OperationAggregateStatus
	opHealth   = interpreter.OperationInterpretHealth
	opDeps     = interpreter.OperationInterpretDependency
)

const advancedStatefulSetYAML = `
apiVersion: apps.kruise.io/v1beta1
kind: StatefulSet
metadata:
  name: db
  namespace: shop
  generation: 4
spec:
  replicas: 3
  serviceName: db-headless
  podManagementPolicy: Parallel
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      readinessGates: [{conditionType: InPlaceUpdateReady}]
      containers:
      - name: postgres
        image: postgres:16
        resources:
          requests: {cpu: 500m, memory: 2Gi}
        env:
        - name: POSTGRES_PASSWORD
          valueFrom: {secretKeyRef: {name: db-auth, key: password}}
        volumeMounts: [{name: data, mountPath: /var/lib/postgresql/data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 20Gi}}
  updateStrategy:
    type: RollingUpdate
    rollingUpdate:
      podUpdatePolicy: InPlaceIfPossible
      partition: 1
      maxUnavailable: 1
status:
  observedGeneration: 4
  replicas: 3
  readyReplicas: 3
  availableReplicas: 3
  currentReplicas: 1
  updatedReplicas: 2
  updatedReadyReplicas: 2
  updatedAvailableReplicas: 2
  currentRevision: db-6c8f
  updateRevision: db-7d9a
  labelSelector: app=db
`

func TestBuiltinKruiseAdvancedStatefulSet(t *testing.T) {
	sts := object(t, advancedStatefulSetYAML)
	c := builtinFor(t, sts)
	ops(t, c, opReplicas, opRevise, opReflect, opAgg, opHealth, opDeps)

	n, req, err := c.GetReplicas(sts)
	if err != nil || n != 3 {
		t.Fatalf("GetReplicas = %d, %v", n, err)
	}
	want := &workv1alpha2.ReplicaRequirements{ResourceRequest: quantities(map[string]string{"cpu": "500m", "memory": "2Gi"}), Namespace: "shop"}
	if diff := cmp.Diff(want, req, quantityEqual); diff != "" {
		t.Errorf("requirement (-want +got):\n%s", diff)
	}
	revised, err := c.ReviseReplica(sts, 1)
	if err != nil || !cmp.Equal(revised.Object, with(sts, "spec.replicas", int64(1)).Object) {
		t.Errorf("ReviseReplica changed more than spec.replicas: %v", err)
	}

	checkHealth(t, c, sts, []healthCase{
		{"all available, all above the partition updated", nil, true},
		{"one not available", func(u *unstructured.Unstructured) { set(u, "status.availableReplicas", int64(2)) }, false},
		{"one above the partition not updated", func(u *unstructured.Unstructured) { set(u, "status.updatedReplicas", int64(1)) }, false},
		{"no partition, not all updated", func(u *unstructured.Unstructured) { set(u, "spec.updateStrategy.rollingUpdate.partition", nil) }, false},
		{"an older generation", func(u *unstructured.Unstructured) { set(u, "status.observedGeneration", int64(3)) }, false},
		{"no availableReplicas, all ready", func(u *unstructured.Unstructured) { set(u, "status.availableReplicas", nil) }, true},
		{"no status", func(u *unstructured.Unstructured) { set(u, "status", nil) }, false},
	})

	other := with(sts, "status.currentRevision", "db-0000")
	status, err := c.AggregateStatus(sts, items(t, c, members{"eu": sts, "us": other}))
	if err != nil {
		t.Fatal(err)
	}
	wantStatus := map[string]any{"replicas": int64(6), "readyReplicas": int64(6), "availableReplicas": int64(6), "currentReplicas": int64(2),
		"updatedReplicas": int64(4), "updatedReadyReplicas": int64(4), "updatedAvailableReplicas": int64(4),
		"updateRevision": "db-7d9a", "labelSelector": "app=db", "observedGeneration": int64(4)}
	if diff := cmp.Diff(wantStatus, status); diff != "" {
		t.Errorf("AggregateStatus (-want +got):\n%s", diff)
	}
	status, _ = c.AggregateStatus(sts, items(t, c, members{"eu": sts, "us": with(sts, "status.observedGeneration", int64(3))}))
	if _, ok := status["observedGeneration"]; ok {
		t.Errorf("observedGeneration with a lagging member: %v", status)
	}

	got, err := c.GetDependencies(sts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(deps("v1 Secret shop db-auth", "v1 Service shop db-headless"), got); diff != "" {
		t.Errorf("GetDependencies (-want +got):\n%s", diff)
	}
}

const advancedDaemonSetYAML = `
apiVersion: apps.kruise.io/v1alpha1
kind: DaemonSet
metadata:
  name: log-agent
  namespace: observability
  generation: 2
spec:
  selector:
    matchLabels: {app: log-agent}
  template:
    metadata:
      labels: {app: log-agent}
    spec:
      serviceAccountName: log-agent
      tolerations: [{operator: Exists}]
      containers:
      - name: fluent-bit
        image: fluent/fluent-bit:3.0
        volumeMounts: [{name: config, mountPath: /fluent-bit/etc}]
      volumes:
      - name: config
        configMap: {name: fluent-bit-config}
  updateStrategy:
    type: RollingUpdate
    rollingUpdate:
      rollingUpdateType: Surging
      maxSurge: 1
      partition: 0
status:
  observedGeneration: 2
  desiredNumberScheduled: 5
  currentNumberScheduled: 5
  numberMisscheduled: 0
  numberReady: 5
  numberAvailable: 5
  updatedNumberScheduled: 5
  daemonSetHash: 5b7f9d
`

func TestBuiltinKruiseAdvancedDaemonSet(t *testing.T) {
	ds := object(t, advancedDaemonSetYAML)
	c := builtinFor(t, ds)
	ops(t, c, opReflect, opAgg, opHealth, opDeps)
	checkHealth(t, c, ds, []healthCase{
		{"rolled out", nil, true},
		{"one not available", func(u *unstructured.Unstructured) { set(u, "status.numberAvailable", int64(4)) }, false},
		{"one not updated", func(u *unstructured.Unstructured) { set(u, "status.updatedNumberScheduled", int64(4)) }, false},
		{"one not updated, behind a partition of 1", func(u *unstructured.Unstructured) {
			set(u, "status.updatedNumberScheduled", int64(4))
			set(u, "spec.updateStrategy.rollingUpdate.partition", int64(1))
		}, true},
		{"an older generation", func(u *unstructured.Unstructured) { set(u, "status.observedGeneration", int64(1)) }, false},
	})
	status, err := c.AggregateStatus(ds, items(t, c, members{"eu": ds, "us": with(ds, "status.desiredNumberScheduled", int64(3), "status.numberAvailable", int64(2))}))
	if err != nil {
		t.Fatal(err)
	}
	if status["desiredNumberScheduled"] != int64(8) || status["numberAvailable"] != int64(7) || status["daemonSetHash"] != "5b7f9d" || status["observedGeneration"] != int64(2) {
		t.Errorf("AggregateStatus = %v", status)
	}
	got, err := c.GetDependencies(ds)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(deps("v1 ConfigMap observability fluent-bit-config", "v1 ServiceAccount observability log-agent"), got); diff != "" {
		t.Errorf("GetDependencies (-want +got):\n%s", diff)
	}
}

const broadcastJobYAML = `
apiVersion: apps.kruise.io/v1alpha1
kind: BroadcastJob
metadata:
  name: image-prewarm
  namespace: ops
  generation: 1
spec:
  parallelism: 10
  completionPolicy:
    type: Always
    activeDeadlineSeconds: 600
  template:
    spec:
      restartPolicy: Never
      imagePullSecrets: [{name: registry}]
      containers:
      - name: pull
        image: shop/api:2.0
        command: ["true"]
status:
  active: 0
  succeeded: 6
  failed: 0
  desired: 6
  phase: completed
  startTime: "2026-03-01T10:00:00Z"
  completionTime: "2026-03-01T10:02:00Z"
  conditions:
  - {type: Complete, status: "True", lastProbeTime: "2026-03-01T10:02:00Z", lastTransitionTime: "2026-03-01T10:02:00Z"}
`

func TestBuiltinKruiseBroadcastJob(t *testing.T) {
	job := object(t, broadcastJobYAML)
	c := builtinFor(t, job)
	ops(t, c, opReflect, opAgg, opHealth, opDeps)
	checkHealth(t, c, job, []healthCase{
		{"completed", nil, true},
		{"running", func(u *unstructured.Unstructured) { set(u, "status.phase", "running") }, true},
		{"failed phase", func(u *unstructured.Unstructured) { set(u, "status.phase", "failed") }, false},
		{"Failed condition", func(u *unstructured.Unstructured) {
			set(u, "status.phase", "running")
			_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": "Failed", "status": "True"}}, "status", "conditions")
		}, false},
		{"no status", func(u *unstructured.Unstructured) { set(u, "status", nil) }, false},
	})
	running := with(job, "status.phase", "running", "status.active", int64(2), "status.succeeded", int64(1), "status.completionTime", nil, "status.startTime", "2026-03-01T09:59:00Z")
	status, err := c.AggregateStatus(job, items(t, c, members{"eu": job, "us": running}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"active": int64(2), "succeeded": int64(7), "failed": int64(0), "desired": int64(12), "phase": "running", "startTime": "2026-03-01T09:59:00Z"}
	if diff := cmp.Diff(want, status); diff != "" {
		t.Errorf("AggregateStatus, one running (-want +got):\n%s", diff)
	}
	status, _ = c.AggregateStatus(job, items(t, c, members{"eu": job, "us": job}))
	if status["phase"] != "completed" || status["completionTime"] != "2026-03-01T10:02:00Z" {
		t.Errorf("AggregateStatus, all completed = %v", status)
	}
	got, _ := c.GetDependencies(job)
	if diff := cmp.Diff(deps("v1 Secret ops registry"), got); diff != "" {
		t.Errorf("GetDependencies (-want +got):\n%s", diff)
	}
}

const advancedCronJobYAML = `
apiVersion: apps.kruise.io/v1alpha1
kind: AdvancedCronJob
metadata:
  name: nightly-report
  namespace: reports
  generation: 1
spec:
  schedule: "0 2 * * *"
  concurrencyPolicy: Forbid
  template:
    jobTemplate:
      spec:
        template:
          spec:
            restartPolicy: OnFailure
            containers:
            - name: report
              image: shop/report:1.1
              envFrom: [{secretRef: {name: report-db}}]
status:
  type: Job
  lastScheduleTime: "2026-03-02T02:00:00Z"
  active:
  - {apiVersion: batch/v1, kind: Job, name: nightly-report-28520520, namespace: reports, uid: 5c1e}
`

func TestBuiltinKruiseAdvancedCronJob(t *testing.T) {
	cj := object(t, advancedCronJobYAML)
	c := builtinFor(t, cj)
	ops(t, c, opReflect, opAgg, opHealth, opDeps)
	checkHealth(t, c, cj, []healthCase{
		{"scheduled", nil, true},
		{"not read yet", func(u *unstructured.Unstructured) { set(u, "status", nil) }, false},
	})
	later := with(cj, "status.lastScheduleTime", "2026-03-02T02:00:05Z", "status.active", nil)
	status, err := c.AggregateStatus(cj, items(t, c, members{"eu": cj, "us": later}))
	if err != nil {
		t.Fatal(err)
	}
	if status["lastScheduleTime"] != "2026-03-02T02:00:05Z" || status["type"] != "Job" || len(status["active"].([]any)) != 1 {
		t.Errorf("AggregateStatus = %v", status)
	}
	got, _ := c.GetDependencies(cj)
	if diff := cmp.Diff(deps("v1 Secret reports report-db"), got); diff != "" {
		t.Errorf("GetDependencies (-want +got):\n%s", diff)
	}
	bcj := cj.DeepCopy()
	tmpl, _, _ := unstructured.NestedMap(bcj.Object, "spec", "template", "jobTemplate")
	set(bcj, "spec.template.jobTemplate", nil)
	_ = unstructured.SetNestedMap(bcj.Object, tmpl, "spec", "template", "broadcastJobTemplate")
	if got, _ := c.GetDependencies(bcj); !cmp.Equal(got, deps("v1 Secret reports report-db")) {
		t.Errorf("GetDependencies with a broadcastJobTemplate = %v", got)
	}
}

const sidecarSetYAML = `
apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata:
  name: mesh-proxy
  generation: 3
spec:
  selector:
    matchLabels: {mesh: enabled}
  containers:
  - name: proxy
    image: envoyproxy/envoy:v1.30
    podInjectPolicy: BeforeAppContainer
  updateStrategy:
    type: RollingUpdate
    maxUnavailable: 2
    partition: 10%
status:
  observedGeneration: 3
  matchedPods: 20
  updatedPods: 18
  readyPods: 20
  updatedReadyPods: 18
  latestRevision: 7f6d
`

func TestBuiltinKruiseSidecarSet(t *testing.T) {
	ss := object(t, sidecarSetYAML)
	c := builtinFor(t, ss)
	ops(t, c, opReflect, opAgg, opHealth)
	checkHealth(t, c, ss, []healthCase{
		{"updated up to a 10% partition", nil, true},
		{"one more behind", func(u *unstructured.Unstructured) { set(u, "status.updatedPods", int64(17)) }, false},
		{"a partition of 1 pod", func(u *unstructured.Unstructured) { set(u, "spec.updateStrategy.partition", int64(1)) }, false},
		{"NotUpdate", func(u *unstructured.Unstructured) {
			set(u, "spec.updateStrategy.type", "NotUpdate")
			set(u, "status.updatedPods", int64(0))
		}, true},
		{"paused", func(u *unstructured.Unstructured) {
			set(u, "spec.updateStrategy.paused", true)
			set(u, "status.updatedPods", int64(0))
		}, true},
		{"an older generation", func(u *unstructured.Unstructured) { set(u, "status.observedGeneration", int64(2)) }, false},
	})
	status, err := c.AggregateStatus(ss, items(t, c, members{"eu": ss, "us": ss}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"matchedPods": int64(40), "updatedPods": int64(36), "readyPods": int64(40), "updatedReadyPods": int64(36), "latestRevision": "7f6d", "observedGeneration": int64(3)}
	if diff := cmp.Diff(want, status); diff != "" {
		t.Errorf("AggregateStatus (-want +got):\n%s", diff)
	}
}

const unitedDeploymentYAML = `
apiVersion: apps.kruise.io/v1alpha1
kind: UnitedDeployment
metadata:
  name: checkout
  namespace: shop
  generation: 5
spec:
  replicas: 6
  revisionHistoryLimit: 5
  selector:
    matchLabels: {app: checkout}
  template:
    cloneSetTemplate:
      metadata:
        labels: {app: checkout}
      spec:
        selector:
          matchLabels: {app: checkout}
        template:
          metadata:
            labels: {app: checkout}
          spec:
            containers:
            - name: checkout
              image: shop/checkout:3.2
              resources:
                requests: {cpu: 250m, memory: 512Mi}
              envFrom: [{configMapRef: {name: checkout-env}}]
  topology:
    subsets:
    - name: zone-a
      nodeSelectorTerm:
        matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [zone-a]}]
      replicas: 50%
    - name: zone-b
      nodeSelectorTerm:
        matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [zone-b]}]
status:
  observedGeneration: 5
  replicas: 6
  readyReplicas: 6
  updatedReplicas: 6
  updatedReadyReplicas: 6
  currentRevision: checkout-8d7c
  subsetReplicas: {zone-a: 3, zone-b: 3}
`

func TestBuiltinKruiseUnitedDeployment(t *testing.T) {
	ud := object(t, unitedDeploymentYAML)
	c := builtinFor(t, ud)
	ops(t, c, opReplicas, opRevise, opReflect, opAgg, opHealth, opDeps)
	n, req, err := c.GetReplicas(ud)
	if err != nil || n != 6 {
		t.Fatalf("GetReplicas = %d, %v", n, err)
	}
	want := &workv1alpha2.ReplicaRequirements{ResourceRequest: quantities(map[string]string{"cpu": "250m", "memory": "512Mi"}), Namespace: "shop"}
	if diff := cmp.Diff(want, req, quantityEqual); diff != "" {
		t.Errorf("requirement (-want +got):\n%s", diff)
	}
	revised, err := c.ReviseReplica(ud, 4)
	if err != nil || !cmp.Equal(revised.Object, with(ud, "spec.replicas", int64(4)).Object) {
		t.Errorf("ReviseReplica changed more than spec.replicas: %v", err)
	}
	checkHealth(t, c, ud, []healthCase{
		{"all ready and updated", nil, true},
		{"one not ready", func(u *unstructured.Unstructured) { set(u, "status.readyReplicas", int64(5)) }, false},
		{"one not updated", func(u *unstructured.Unstructured) { set(u, "status.updatedReplicas", int64(5)) }, false},
		{"one held back by a manual partition", func(u *unstructured.Unstructured) {
			set(u, "status.updatedReplicas", int64(5))
			set(u, "spec.updateStrategy.manualUpdate.partitions", map[string]any{"zone-a": int64(1)})
		}, true},
	})
	status, err := c.AggregateStatus(ud, items(t, c, members{"eu": ud, "us": with(ud, "status.readyReplicas", int64(4))}))
	if err != nil {
		t.Fatal(err)
	}
	wantStatus := map[string]any{"replicas": int64(12), "readyReplicas": int64(10), "updatedReplicas": int64(12), "updatedReadyReplicas": int64(12), "currentRevision": "checkout-8d7c", "observedGeneration": int64(5)}
	if diff := cmp.Diff(wantStatus, status); diff != "" {
		t.Errorf("AggregateStatus (-want +got):\n%s", diff)
	}
	got, _ := c.GetDependencies(ud)
	if diff := cmp.Diff(deps("v1 ConfigMap shop checkout-env"), got); diff != "" {
		t.Errorf("GetDependencies (-want +got):\n%s", diff)
	}
	// A StatefulSet template is read too, with its tolerations.
	sts := ud.DeepCopy()
	tmpl, _, _ := unstructured.NestedMap(sts.Object, "spec", "template", "cloneSetTemplate")
	set(sts, "spec.template.cloneSetTemplate", nil)
	_ = unstructured.SetNestedMap(sts.Object, tmpl, "spec", "template", "advancedStatefulSetTemplate")
	_ = unstructured.SetNestedSlice(sts.Object, []any{map[string]any{"key": "dedicated", "operator": "Exists"}}, "spec", "template", "advancedStatefulSetTemplate", "spec", "template", "spec", "tolerations")
	_, req, err = c.GetReplicas(sts)
	if err != nil || req == nil || req.NodeClaim == nil || !cmp.Equal(req.NodeClaim.Tolerations, []corev1.Toleration{{Key: "dedicated", Operator: "Exists"}}) {
		t.Errorf("GetReplicas of an advancedStatefulSetTemplate = %+v, %v", req, err)
	}
}
