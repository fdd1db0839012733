package argohealth

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// fromYAML builds an object from YAML, decoded the way the apiserver decodes JSON.
func fromYAML(t testing.TB, y string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatalf("bad test YAML: %v", err)
	}
	var m map[string]any
	if err := utiljson.Unmarshal(j, &m); err != nil {
		t.Fatalf("bad test YAML: %v", err)
	}
	return &unstructured.Unstructured{Object: m}
}

// TestHealth checks Health on single objects.
func TestHealth(t *testing.T) {
	for _, tt := range []struct {
		obj, want string
	}{
		{`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 2}, spec: {replicas: 2}, status: {observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 2}}`, Healthy},
		{`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 2}, spec: {replicas: 2, paused: true}}`, Suspended},
		{`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 3}, spec: {replicas: 2}, status: {observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 2}}`, Progressing},
		{`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 2}, spec: {replicas: 2}, status: {observedGeneration: 2, replicas: 3, updatedReplicas: 2, availableReplicas: 2}}`, Progressing},
		{`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 2}, spec: {replicas: 2}, status: {observedGeneration: 2, conditions: [{type: Progressing, status: "False", reason: ProgressDeadlineExceeded}]}}`, Degraded},
		{`{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: s, generation: 1}, spec: {replicas: 1}, status: {observedGeneration: 1, readyReplicas: 1, currentRevision: a, updateRevision: b}}`, Progressing},
		{`{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: s, generation: 1}, spec: {replicas: 1, updateStrategy: {type: OnDelete}}, status: {observedGeneration: 1, readyReplicas: 1}}`, Healthy},
		{`{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: d, generation: 1}, spec: {updateStrategy: {type: OnDelete}}, status: {observedGeneration: 1, desiredNumberScheduled: 2}}`, Healthy},
		{`{apiVersion: batch/v1, kind: Job, metadata: {name: j}, status: {conditions: [{type: Failed, status: "False"}, {type: Complete, status: "True"}]}}`, Degraded},
		{`{apiVersion: batch/v1, kind: Job, metadata: {name: j}, status: {conditions: [{type: Suspended, status: "True"}]}}`, Suspended},
		{`{apiVersion: batch/v1, kind: Job, metadata: {name: j}, status: {conditions: [{type: FailureTarget, status: "True"}]}}`, Progressing},
		{`{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {type: ClusterIP}}`, Healthy},
		{`{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: i}}`, Progressing},
		{`{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: p}}`, Unknown},
		{`{apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: p}, status: {conditions: [{type: DisruptionAllowed, status: "False", reason: SyncFailed}]}}`, Degraded},
		{`{apiVersion: batch/v1, kind: CronJob, metadata: {name: c}, status: {active: [{name: j}], lastScheduleTime: "2026-01-01T00:00:00Z"}}`, Progressing},
		{`{apiVersion: batch/v1, kind: CronJob, metadata: {name: c}, status: {lastScheduleTime: "2026-01-01T00:00:00Z"}}`, Degraded},
	} {
		got, err := Health(fromYAML(t, tt.obj))
		if err != nil || got != tt.want {
			t.Errorf("Health(%s) = %s, %v; want %s", tt.obj, got, err, tt.want)
		}
	}
}
