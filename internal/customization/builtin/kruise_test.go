package builtin

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

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
	cs := object(t, cloneSetYAML)
	c := builtinFor(t, cs)

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
