package interpreter

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
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

var quantityEqual = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

func resources(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func TestGetReplicas(t *testing.T) {
	tests := []struct {
		name     string
		obj      string
		replicas int32
		req      *workv1alpha2.ReplicaRequirements
	}{
		{
			name: "Deployment with requests and node claim",
			obj: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: d, namespace: ns}
spec:
  replicas: 3
  template:
    spec:
      priorityClassName: high
      nodeSelector: {disk: ssd}
      tolerations: [{key: gpu, operator: Exists, effect: NoSchedule}]
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a]}]}]
      containers:
      - {name: a, resources: {requests: {cpu: 100m, memory: 64Mi}}}
      - {name: b, resources: {requests: {cpu: 200m}}}`,
			replicas: 3,
			req: &workv1alpha2.ReplicaRequirements{
				Namespace:         "ns",
				PriorityClassName: "high",
				ResourceRequest:   resources("cpu", "300m", "memory", "64Mi"),
				NodeClaim: &workv1alpha2.NodeClaim{
					NodeSelector: map[string]string{"disk": "ssd"},
					Tolerations:  []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
					HardNodeAffinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
						MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}},
					}}},
				},
			},
		},
		{
			name: "unset replicas default to 1; a limit stands in for a missing request",
			obj: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: s, namespace: ns}
spec: {template: {spec: {containers: [{name: a, resources: {limits: {cpu: "1", memory: 1Gi}, requests: {memory: 512Mi}}}]}}}`,
			replicas: 1,
			req:      &workv1alpha2.ReplicaRequirements{Namespace: "ns", ResourceRequest: resources("cpu", "1", "memory", "512Mi")},
		},
		{
			name: "init containers count at their max; sidecars add; overhead adds",
			obj: `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: r, namespace: ns}
spec:
  replicas: 0
  template:
    spec:
      overhead: {cpu: 10m}
      initContainers:
      - {name: big-init, resources: {requests: {cpu: "2", memory: 1Gi}}}
      - {name: sidecar, restartPolicy: Always, resources: {requests: {cpu: 100m}}}
      containers:
      - {name: a, resources: {requests: {cpu: 500m, memory: 128Mi}}}`,
			replicas: 0,
			// cpu: max(init 2, containers 500m + sidecar 100m) + overhead 10m; memory: max(1Gi, 128Mi).
			req: &workv1alpha2.ReplicaRequirements{Namespace: "ns", ResourceRequest: resources("cpu", "2010m", "memory", "1Gi")},
		},
		{
			name: "pod-level requests win",
			obj: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: d, namespace: ns}
spec: {replicas: 2, template: {spec: {resources: {requests: {cpu: "4"}}, containers: [{name: a, resources: {requests: {cpu: "1", memory: 1Gi}}}]}}}`,
			replicas: 2,
			req:      &workv1alpha2.ReplicaRequirements{Namespace: "ns", ResourceRequest: resources("cpu", "4", "memory", "1Gi")},
		},
		{
			name:     "Job uses parallelism",
			obj:      `{apiVersion: batch/v1, kind: Job, metadata: {name: j, namespace: ns}, spec: {parallelism: 4, completions: 8, template: {spec: {containers: [{name: a}]}}}}`,
			replicas: 4,
			req:      &workv1alpha2.ReplicaRequirements{Namespace: "ns"},
		},
		{
			name:     "Job parallelism defaults to 1",
			obj:      `{apiVersion: batch/v1, kind: Job, metadata: {name: j, namespace: ns}, spec: {}}`,
			replicas: 1,
			req:      &workv1alpha2.ReplicaRequirements{Namespace: "ns"},
		},
		{
			name:     "Pod is one replica",
			obj:      `{apiVersion: v1, kind: Pod, metadata: {name: p, namespace: ns}, spec: {containers: [{name: a, resources: {requests: {cpu: 1}}}]}}`,
			replicas: 1,
			req:      &workv1alpha2.ReplicaRequirements{Namespace: "ns", ResourceRequest: resources("cpu", "1")},
		},
		{name: "DaemonSet", obj: `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: d}, spec: {template: {spec: {containers: [{name: a}]}}}}`},
		{name: "CronJob", obj: `{apiVersion: batch/v1, kind: CronJob, metadata: {name: c}, spec: {jobTemplate: {spec: {parallelism: 3}}}}`},
		{name: "Service", obj: `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {replicas: 3}}`},
		{name: "ConfigMap", obj: `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}`},
		// Unknown kinds are not divided: a 3-node database split 1+1+1 is three broken ones.
		{name: "custom resource with spec.replicas is not divided", obj: `{apiVersion: example.com/v1, kind: App, metadata: {name: a}, spec: {replicas: 5}}`},
		{name: "custom resource without replicas", obj: `{apiVersion: example.com/v1, kind: App, metadata: {name: a}, spec: {}}`},
		{name: "custom resource with string replicas", obj: `{apiVersion: example.com/v1, kind: App, metadata: {name: a}, spec: {replicas: "5"}}`},
		{name: "custom Deployment of another group is a custom resource", obj: `{apiVersion: example.com/v1, kind: Deployment, metadata: {name: a}, spec: {replicas: 2}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			replicas, req, err := Interpreter{}.GetReplicas(fromYAML(t, tt.obj))
			if err != nil {
				t.Fatal(err)
			}
			if replicas != tt.replicas {
				t.Errorf("replicas = %d, want %d", replicas, tt.replicas)
			}
			if diff := cmp.Diff(tt.req, req, quantityEqual); diff != "" {
				t.Errorf("requirements mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGetReplicasErrors(t *testing.T) {
	for obj, want := range map[string]string{
		`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {replicas: "3"}}`:                                                          "spec.replicas: want an integer, got a string",
		`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {replicas: -1}}`:                                                           "spec.replicas: -1 is out of range",
		`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {replicas: 4294967296}}`:                                                   "out of range",
		`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {replicas: 1.5}}`:                                                          "want an integer, got a number",
		`{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {parallelism: [1]}}`:                                                             "spec.parallelism: want an integer, got a list",
		`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {template: {spec: "oops"}}}`:                                               "spec.template.spec: want an object, got a string",
		`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {template: {spec: {containers: [{resources: 1}]}}}}`:                       "spec.template.spec:",
		`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: "oops"}`:                                                                   "spec.replicas:",
		`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {template: {spec: {containers: [{resources: {requests: {cpu: lots}}}]}}}}`: "spec.template.spec:",
	} {
		_, _, err := Interpreter{}.GetReplicas(fromYAML(t, obj))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("GetReplicas(%s) error = %v, want one containing %q", obj, err, want)
		}
	}
}

func TestReviseReplicas(t *testing.T) {
	tests := []struct {
		name     string
		obj      string
		replicas int64
		want     string
	}{
		{"Deployment", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {replicas: 4}}`, 1,
			`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {replicas: 1}}`},
		{"StatefulSet without replicas", `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: s}, spec: {}}`, 3,
			`{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: s}, spec: {replicas: 3}}`},
		{"ReplicaSet to zero", `{apiVersion: apps/v1, kind: ReplicaSet, metadata: {name: r}, spec: {replicas: 2}}`, 0,
			`{apiVersion: apps/v1, kind: ReplicaSet, metadata: {name: r}, spec: {replicas: 0}}`},
		{"Job scales completions up to whole pods", `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {parallelism: 3, completions: 10}}`, 1,
			`{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {parallelism: 1, completions: 4}}`},
		{"Job even split", `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {parallelism: 2, completions: 10}}`, 1,
			`{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {parallelism: 1, completions: 5}}`},
		{"Job without completions", `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {parallelism: 4}}`, 2,
			`{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {parallelism: 2}}`},
		{"Job with default parallelism", `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {completions: 3}}`, 1,
			`{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {parallelism: 1, completions: 3}}`},
		{"Job with zero parallelism keeps completions", `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {parallelism: 0, completions: 3}}`, 0,
			`{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {parallelism: 0, completions: 3}}`},
		{"Pod unchanged", `{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {}}`, 5,
			`{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {}}`},
		{"DaemonSet unchanged", `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: d}, spec: {}}`, 5,
			`{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: d}, spec: {}}`},
		{"custom resource with replicas unchanged", `{apiVersion: example.com/v1, kind: App, metadata: {name: a}, spec: {replicas: 6}}`, 2,
			`{apiVersion: example.com/v1, kind: App, metadata: {name: a}, spec: {replicas: 6}}`},
		{"custom resource without replicas unchanged", `{apiVersion: example.com/v1, kind: App, metadata: {name: a}, spec: {}}`, 2,
			`{apiVersion: example.com/v1, kind: App, metadata: {name: a}, spec: {}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := fromYAML(t, tt.obj)
			pristine := obj.DeepCopy()
			got, err := Interpreter{}.ReviseReplicas(obj, tt.replicas)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(fromYAML(t, tt.want).Object, got.Object); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(pristine.Object, obj.Object); diff != "" {
				t.Errorf("ReviseReplicas changed its input (-before +after):\n%s", diff)
			}
		})
	}
}

func TestReviseReplicasErrors(t *testing.T) {
	tests := []struct {
		obj      string
		replicas int64
		want     string
	}{
		{`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {}}`, -1, "replicas -1 is out of range"},
		{`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {}}`, 1 << 31, "out of range"},
		{`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: "oops"}`, 1, "spec.replicas:"},
		{`{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {completions: "x"}}`, 1, "spec.completions: want an integer"},
		{`{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {parallelism: 1, completions: 2147483647}}`, 2, "above 2147483647"},
	}
	for _, tt := range tests {
		got, err := Interpreter{}.ReviseReplicas(fromYAML(t, tt.obj), tt.replicas)
		if err == nil || !strings.Contains(err.Error(), tt.want) || got != nil {
			t.Errorf("ReviseReplicas(%s, %d) = %v, %v; want nil and an error containing %q", tt.obj, tt.replicas, got, err, tt.want)
		}
	}
}
