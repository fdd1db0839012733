package customization

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// podTemplate is a pod template with requests, a node selector, a toleration, a priority
// class and references to a ConfigMap, a Secret and a ServiceAccount.
func podTemplate() map[string]any {
	return map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
		"spec": map[string]any{
			"priorityClassName":  "high",
			"serviceAccountName": "runner",
			"nodeSelector":       map[string]any{"zone": "a"},
			"tolerations":        []any{map[string]any{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}},
			"containers": []any{
				map[string]any{
					"name": "app", "image": "app:1",
					"resources": map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "64Mi"}},
					"envFrom":   []any{map[string]any{"configMapRef": map[string]any{"name": "settings"}}},
				},
				map[string]any{
					"name": "sidecar", "image": "side:1",
					"resources": map[string]any{"requests": map[string]any{"cpu": "50m"}},
					"env": []any{map[string]any{"name": "TOKEN", "valueFrom": map[string]any{
						"secretKeyRef": map[string]any{"name": "token", "key": "t"}}}},
				},
			},
		},
	}
}

func TestGetReplicas(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		spec    map[string]any
		want    int32
		wantReq *workv1alpha2.ReplicaRequirements
		wantErr []string
	}{{
		name: "replicas and a requirement table; namespace defaults to the object's",
		src: `function GetReplicas(obj)
  return obj.spec.size, {
    nodeClaim = {nodeSelector = {zone = "a"}, tolerations = {{key = "gpu", operator = "Exists"}}},
    resourceRequest = {cpu = "250m", memory = 1048576},
    priorityClassName = "high",
  }
end`,
		spec: map[string]any{"size": int64(3)},
		want: 3,
		wantReq: &workv1alpha2.ReplicaRequirements{
			NodeClaim: &workv1alpha2.NodeClaim{
				NodeSelector: map[string]string{"zone": "a"},
				Tolerations:  []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}},
			},
			ResourceRequest:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("1Mi")},
			Namespace:         "ns",
			PriorityClassName: "high",
		},
	}, {
		name: "no requirement",
		src:  `function GetReplicas(obj) return obj.spec.size end`,
		spec: map[string]any{"size": int64(0)},
		want: 0,
	}, {
		name: "kube.accuratePodRequirements of the pod template, as Karmada's scripts write it",
		src: `local kube = require("kube")
function GetReplicas(desiredObj)
  replica = desiredObj.spec.size
  requirement = kube.accuratePodRequirements(desiredObj.spec.template)
  return replica, requirement
end`,
		spec: map[string]any{"size": int64(4), "template": withNamespace(podTemplate(), "ns")},
		want: 4,
		wantReq: &workv1alpha2.ReplicaRequirements{
			NodeClaim: &workv1alpha2.NodeClaim{
				NodeSelector: map[string]string{"zone": "a"},
				Tolerations:  []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			},
			ResourceRequest:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("150m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Namespace:         "ns",
			PriorityClassName: "high",
		},
	}, {
		name:    "replicas that are a string",
		src:     `function GetReplicas(obj) return "3" end`,
		wantErr: []string{"replicas returned are a string, not a number"},
	}, {
		name:    "negative replicas",
		src:     `function GetReplicas(obj) return -1 end`,
		wantErr: []string{"-1", "not a whole number"},
	}, {
		name:    "fractional replicas",
		src:     `function GetReplicas(obj) return 2.5 end`,
		wantErr: []string{"2.5", "not a whole number"},
	}, {
		name:    "replicas above int32",
		src:     `function GetReplicas(obj) return 2^31 end`,
		wantErr: []string{"not a whole number in [0, 2147483647]"},
	}, {
		name:    "no result at all",
		src:     `function GetReplicas(obj) end`,
		wantErr: []string{"replicas returned are a nil"},
	}, {
		name:    "a requirement that is a number",
		src:     `function GetReplicas(obj) return 1, 5 end`,
		wantErr: []string{"requirement returned is a number, not a table or nil"},
	}, {
		name:    "a misspelt requirement field",
		src:     `function GetReplicas(obj) return 1, {resourceRequests = {cpu = "1"}} end`,
		wantErr: []string{"requirement", `unknown field "resourceRequests"`},
	}, {
		name:    "a quantity that is not one",
		src:     `function GetReplicas(obj) return 1, {resourceRequest = {cpu = "lots"}} end`,
		wantErr: []string{"requirement", "quantities must match"},
	}, {
		name:    "a run-time error names the line",
		src:     "function GetReplicas(obj)\n  local n = obj.spec.missing.size\n  return n\nend",
		wantErr: []string{`customization "test", replicaResource (GetReplicas) of example.com/v1/App ns/web`, "line 2:", "attempt to index"},
	}, {
		name:    "error() names the line",
		src:     "function GetReplicas(obj)\n\n  error(\"no size\")\nend",
		wantErr: []string{"line 3: no size"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := customized(t, Options{}, scripts{interpreter.OperationGetReplicas: tc.src})
			n, req, err := c.GetReplicas(app(tc.spec, nil))
			if tc.wantErr != nil {
				wantErr(t, err, tc.wantErr...)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n != tc.want {
				t.Errorf("replicas = %d, want %d", n, tc.want)
			}
			if diff := cmp.Diff(tc.wantReq, req, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
				t.Errorf("requirement (-want +got):\n%s", diff)
			}
		})
	}
}

func withNamespace(template map[string]any, ns string) map[string]any {
	template["metadata"].(map[string]any)["namespace"] = ns
	return template
}

func TestReviseReplica(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		wantSize any
		wantErr  []string
	}{{
		name:     "sets the size",
		src:      `function ReviseReplica(obj, replicas) obj.spec.size = replicas return obj end`,
		wantSize: int64(5),
	}, {
		name:    "returns nothing",
		src:     `function ReviseReplica(obj, replicas) obj.spec.size = replicas end`,
		wantErr: []string{"the object returned is a nil, not a table"},
	}, {
		name:    "returns the replicas",
		src:     `function ReviseReplica(obj, replicas) return replicas end`,
		wantErr: []string{"the object returned is a number, not a table"},
	}, {
		name:    "returns a list",
		src:     `function ReviseReplica(obj, replicas) return {obj} end`,
		wantErr: []string{"the object returned is a list, not an object"},
	}, {
		name:    "renames the object",
		src:     `function ReviseReplica(obj, replicas) obj.metadata.name = "other" return obj end`,
		wantErr: []string{`metadata.name "other", not "web"`, "may not make it another object"},
	}, {
		name:    "changes its kind",
		src:     `function ReviseReplica(obj, replicas) obj.kind = "ClusterRoleBinding" return obj end`,
		wantErr: []string{`kind "ClusterRoleBinding", not "App"`},
	}, {
		name:    "moves it to another namespace",
		src:     `function ReviseReplica(obj, replicas) obj.metadata.namespace = "kube-system" return obj end`,
		wantErr: []string{`metadata.namespace "kube-system", not "ns"`},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := customized(t, Options{}, scripts{interpreter.OperationReviseReplica: tc.src})
			in := app(map[string]any{"size": int64(9), "tags": []any{}}, nil)
			out, err := c.ReviseReplica(in, 5)
			if tc.wantErr != nil {
				wantErr(t, err, tc.wantErr...)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := out.Object["spec"].(map[string]any)["size"]; got != tc.wantSize {
				t.Errorf("spec.size = %#v, want %#v", got, tc.wantSize)
			}
			if tags, ok := out.Object["spec"].(map[string]any)["tags"].([]any); !ok || len(tags) != 0 {
				t.Errorf("spec.tags = %#v, want the empty list it was", out.Object["spec"].(map[string]any)["tags"])
			}
			if in.Object["spec"].(map[string]any)["size"] != int64(9) {
				t.Error("the input object was changed")
			}
		})
	}
}

func TestRetain(t *testing.T) {
	src := `function Retain(desiredObj, observedObj)
  if observedObj == nil then return desiredObj end
  desiredObj.spec.paused = observedObj.spec.paused
  if observedObj.metadata.annotations ~= nil then
    desiredObj.metadata.annotations = desiredObj.metadata.annotations or {}
    desiredObj.metadata.annotations["member/owned"] = observedObj.metadata.annotations["member/owned"]
  end
  return desiredObj
end`
	c := customized(t, Options{}, scripts{interpreter.OperationRetain: src})
	desired := app(map[string]any{"size": int64(3), "paused": false}, nil)
	observed := app(map[string]any{"size": int64(3), "paused": true}, map[string]any{"ready": int64(1)})
	observed.SetAnnotations(map[string]string{"member/owned": "yes"})
	out, err := c.Retain(desired, observed)
	if err != nil {
		t.Fatal(err)
	}
	want := app(map[string]any{"size": int64(3), "paused": true}, nil)
	want.SetAnnotations(map[string]string{"member/owned": "yes"})
	if diff := cmp.Diff(want.Object, out.Object); diff != "" {
		t.Errorf("Retain (-want +got):\n%s", diff)
	}

	out, err = c.Retain(desired, nil)
	if err != nil || !cmp.Equal(out.Object, desired.Object) {
		t.Errorf("Retain(desired, nil) = %v, %v; want desired", out, err)
	}

	bad := customized(t, Options{}, scripts{interpreter.OperationRetain: `function Retain(d, o) return o.status end`})
	_, err = bad.Retain(desired, observed)
	wantErr(t, err, "retention (Retain)", `apiVersion "", not "example.com/v1"`)
}

func TestReflectStatus(t *testing.T) {
	status := map[string]any{
		"ready": int64(2), "phase": "Running", "internal": "x",
		"conditions": []any{map[string]any{"type": "Ready", "status": "True"}},
	}
	tests := []struct {
		name    string
		src     string
		want    string // JSON; "" for nil
		wantErr []string
	}{{
		name: "picks fields",
		src:  `function ReflectStatus(obj) return {ready = obj.status.ready, phase = obj.status.phase, conditions = obj.status.conditions} end`,
		want: `{"conditions":[{"status":"True","type":"Ready"}],"phase":"Running","ready":2}`,
	}, {
		name: "nil: nothing to reflect",
		src:  `function ReflectStatus(obj) return nil end`,
	}, {
		name: "an empty table is an empty status; script-made empty fields are left out",
		src:  `function ReflectStatus(obj) return {conditions = {}} end`,
		want: `{}`,
	}, {
		name: "the whole status",
		src:  `function ReflectStatus(obj) return obj.status end`,
		want: `{"conditions":[{"status":"True","type":"Ready"}],"internal":"x","phase":"Running","ready":2}`,
	}, {
		name: "fractions stay fractions, whole numbers are integers",
		src:  `function ReflectStatus(obj) return {ratio = obj.status.ready / 4, doubled = obj.status.ready * 2.0} end`,
		want: `{"doubled":4,"ratio":0.5}`,
	}, {
		name:    "a string",
		src:     `function ReflectStatus(obj) return "Running" end`,
		wantErr: []string{"the status returned is a string, not a table"},
	}, {
		name:    "a list",
		src:     `function ReflectStatus(obj) return {1, 2} end`,
		wantErr: []string{"the status returned is a list, not an object"},
	}, {
		name:    "a function inside",
		src:     `function ReflectStatus(obj) return {f = print} end`,
		wantErr: []string{"f: a function cannot be converted"},
	}, {
		name:    "NaN",
		src:     `function ReflectStatus(obj) return {x = 0/0} end`,
		wantErr: []string{"x: NaN is not a JSON number"},
	}, {
		name:    "infinity",
		src:     `function ReflectStatus(obj) return {x = {1, 1/0}} end`,
		wantErr: []string{"x[2]: +Inf is not a JSON number"},
	}, {
		name:    "mixed keys",
		src:     `function ReflectStatus(obj) return {x = {1, 2, name = "a"}} end`,
		wantErr: []string{"x: the table mixes list items and object fields"},
	}, {
		name:    "a hole in a list",
		src:     `function ReflectStatus(obj) return {x = {1, nil, 3}} end`,
		wantErr: []string{"x: the list has a hole (index 2 of 3 is nil)"},
	}, {
		name:    "a table that contains itself",
		src:     `function ReflectStatus(obj) local t = {} t.self = t return t end`,
		wantErr: []string{"nested more than 100 levels deep"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := customized(t, Options{}, scripts{interpreter.OperationReflectStatus: tc.src})
			raw, err := c.ReflectStatus(app(nil, status))
			if tc.wantErr != nil {
				wantErr(t, err, tc.wantErr...)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if raw != nil {
				got = string(raw.Raw)
			}
			if got != tc.want {
				t.Errorf("ReflectStatus = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestAggregateStatus(t *testing.T) {
	sum := `function AggregateStatus(desiredObj, statusItems)
  if desiredObj.status == nil then desiredObj.status = {} end
  local ready, healthy, clusters = 0, 0, {}
  for i = 1, #(statusItems or {}) do
    local item = statusItems[i]
    if item.status ~= nil and item.status.ready ~= nil then
      ready = ready + item.status.ready
    end
    if item.applied and item.health == "Healthy" then healthy = healthy + 1 end
    table.insert(clusters, item.clusterName)
  end
  desiredObj.status.ready = ready
  desiredObj.status.healthyClusters = healthy
  desiredObj.status.clusters = clusters
  return desiredObj
end`
	items := []workv1alpha2.AggregatedStatusItem{
		{ClusterName: "m1", Applied: true, Health: workv1alpha1.ResourceHealthy, Status: &runtime.RawExtension{Raw: []byte(`{"ready":2}`)}},
		{ClusterName: "m2", Applied: true, Health: workv1alpha1.ResourceUnhealthy, Status: &runtime.RawExtension{Raw: []byte(`{"ready":1}`)}},
		{ClusterName: "m3", Applied: false, AppliedMessage: "denied"},
	}
	tests := []struct {
		name    string
		src     string
		items   []workv1alpha2.AggregatedStatusItem
		want    map[string]any
		wantErr []string
	}{{
		name:  "sums",
		src:   sum,
		items: items,
		want:  map[string]any{"ready": int64(3), "healthyClusters": int64(1), "clusters": []any{"m1", "m2", "m3"}, "old": "x"},
	}, {
		name: "no items: a script-made empty list is left out",
		src:  sum,
		want: map[string]any{"ready": int64(0), "healthyClusters": int64(0), "old": "x"},
	}, {
		name: "no items: statusItems is nil, as in Karmada",
		src:  `function AggregateStatus(d, items) d.status = {isNil = items == nil, kind = type(items)} return d end`,
		want: map[string]any{"isNil": true, "kind": "nil"},
	}, {
		name:  "an empty list of items is nil too",
		src:   `function AggregateStatus(d, items) d.status = {isNil = items == nil} return d end`,
		items: []workv1alpha2.AggregatedStatusItem{},
		want:  map[string]any{"isNil": true},
	}, {
		name:  "items: a list",
		src:   `function AggregateStatus(d, items) d.status = {isNil = items == nil, n = #items} return d end`,
		items: items,
		want:  map[string]any{"isNil": false, "n": int64(3)},
	}, {
		name:    "Karmada's scripts fail without the nil check, as in Karmada",
		src:     `function AggregateStatus(d, items) d.status = {n = #items} return d end`,
		wantErr: []string{"line 1:", "__len undefined"},
	}, {
		name:  "the items as the script sees them",
		src:   `function AggregateStatus(d, items) d.status = {first = items[3]} return d end`,
		items: items,
		want:  map[string]any{"first": map[string]any{"clusterName": "m3", "applied": false, "appliedMessage": "denied", "health": ""}},
	}, {
		name: "no status",
		src:  `function AggregateStatus(d, items) d.status = nil return d end`,
	}, {
		name:    "returns nothing",
		src:     `function AggregateStatus(d, items) end`,
		wantErr: []string{"the object returned is a nil, not a table"},
	}, {
		name:    "a status that is not an object",
		src:     `function AggregateStatus(d, items) d.status = "ok" return d end`,
		wantErr: []string{"the status of the object returned is a string, not an object"},
	}, {
		name:    "a member status that is not JSON",
		src:     sum,
		items:   []workv1alpha2.AggregatedStatusItem{{ClusterName: "m9", Status: &runtime.RawExtension{Raw: []byte(`{`)}}},
		wantErr: []string{"the status of cluster m9"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := customized(t, Options{}, scripts{interpreter.OperationAggregateStatus: tc.src})
			status, err := c.AggregateStatus(app(nil, map[string]any{"old": "x"}), tc.items)
			if tc.wantErr != nil {
				wantErr(t, err, tc.wantErr...)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, status); diff != "" {
				t.Errorf("AggregateStatus (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInterpretHealth(t *testing.T) {
	tests := []struct {
		src     string
		want    bool
		wantErr []string
	}{
		{src: `function InterpretHealth(obj) return obj.status.ready >= obj.spec.size end`, want: true},
		{src: `function InterpretHealth(obj) return obj.status.ready > obj.spec.size end`, want: false},
		{src: `function InterpretHealth(obj) return nil end`, want: false},
		{src: `function InterpretHealth(obj) end`, want: false},
		{src: `function InterpretHealth(obj) return "yes" end`, wantErr: []string{"the health returned is a string, not a boolean"}},
		{src: `function InterpretHealth(obj) return 1 end`, wantErr: []string{"the health returned is a number, not a boolean"}},
		{src: `function InterpretHealth(obj) return obj.status.missing.ready end`, wantErr: []string{"line 1:", "attempt to index"}},
	}
	for _, tc := range tests {
		t.Run(tc.src, func(t *testing.T) {
			c := health(t, Options{}, tc.src)
			got, err := c.InterpretHealth(app(map[string]any{"size": int64(2)}, map[string]any{"ready": int64(2)}))
			if tc.wantErr != nil {
				wantErr(t, err, tc.wantErr...)
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("InterpretHealth = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestGetDependencies(t *testing.T) {
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	tests := []struct {
		name    string
		src     string
		want    []configv1alpha1.DependentObjectReference
		wantErr []string
	}{{
		name: "by name and by selector; namespace defaults to the object's, an explicit one is kept",
		src: `function GetDependencies(obj)
  return {
    {apiVersion = "v1", kind = "ConfigMap", name = obj.spec.config},
    {apiVersion = "v1", kind = "Secret", namespace = "shared", name = "tls"},
    {apiVersion = "rbac.authorization.k8s.io/v1", kind = "ClusterRole", namespace = "", name = "reader"},
    {apiVersion = "v1", kind = "ConfigMap", labelSelector = {matchLabels = {app = "web"}}},
    {apiVersion = "v1", kind = "ConfigMap", name = obj.spec.config},
  }
end`,
		want: []configv1alpha1.DependentObjectReference{
			{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "settings"},
			{APIVersion: "v1", Kind: "Secret", Namespace: "shared", Name: "tls"},
			{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "reader"},
			{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", LabelSelector: selector},
		},
	}, {
		name: "Karmada's style: a table filled in a loop, empty when there is nothing",
		src: `function GetDependencies(desiredObj)
  refs = {}
  local idx = 1
  for _, name in ipairs(desiredObj.spec.secrets or {}) do
    dependObj = {}
    dependObj.apiVersion = 'v1'
    dependObj.kind = 'Secret'
    dependObj.name = name
    dependObj.namespace = desiredObj.metadata.namespace
    refs[idx] = dependObj
    idx = idx + 1
  end
  return refs
end`,
	}, {
		name: "kube.getPodDependencies",
		src: `local kube = require("kube")
function GetDependencies(obj)
  return kube.getPodDependencies(obj.spec.template, obj.metadata.namespace)
end`,
		want: []configv1alpha1.DependentObjectReference{
			{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "settings"},
			{APIVersion: "v1", Kind: "Secret", Namespace: "ns", Name: "token"},
			{APIVersion: "v1", Kind: "ServiceAccount", Namespace: "ns", Name: "runner"},
		},
	}, {
		name: "nil: none",
		src:  `function GetDependencies(obj) return nil end`,
	}, {
		name:    "no apiVersion",
		src:     `function GetDependencies(obj) return {{kind = "ConfigMap", name = "a"}} end`,
		wantErr: []string{"dependency 1 (<nil>/ConfigMap a): apiVersion is required"},
	}, {
		name:    "no kind",
		src:     `function GetDependencies(obj) return {{apiVersion = "v1", name = "a"}, {apiVersion = "v1", name = "b"}} end`,
		wantErr: []string{"dependency 1 (v1/<nil> a): kind is required"},
	}, {
		name:    "name and selector",
		src:     `function GetDependencies(obj) return {{apiVersion = "v1", kind = "Secret", name = "a"}, {apiVersion = "v1", kind = "Secret", name = "b", labelSelector = {matchLabels = {a = "b"}}}} end`,
		wantErr: []string{"dependency 2 (v1/Secret b): name and labelSelector are mutually exclusive"},
	}, {
		name:    "neither name nor selector",
		src:     `function GetDependencies(obj) return {{apiVersion = "v1", kind = "Secret"}} end`,
		wantErr: []string{"dependency 1 (v1/Secret): one of name and labelSelector is required"},
	}, {
		name:    "a misspelt field",
		src:     `function GetDependencies(obj) return {{apiVersion = "v1", kind = "Secret", name = "a", namesapce = "x"}} end`,
		wantErr: []string{"dependency 1 (v1/Secret a)", `unknown field "namesapce"`},
	}, {
		name:    "a selector that is its labels (matchLabels forgotten)",
		src:     `function GetDependencies(obj) return {{apiVersion = "v1", kind = "Secret", labelSelector = {app = "web"}}} end`,
		wantErr: []string{"dependency 1 (v1/Secret)", `unknown field "app"`},
	}, {
		name:    "a bad selector operator",
		src:     `function GetDependencies(obj) return {{apiVersion = "v1", kind = "Secret", labelSelector = {matchExpressions = {{key = "a", operator = "Near"}}}}} end`,
		wantErr: []string{"dependency 1 (v1/Secret): labelSelector", "Near"},
	}, {
		name:    "an entry that is a string",
		src:     `function GetDependencies(obj) return {"v1/Secret/a"} end`,
		wantErr: []string{"dependency 1: is a string, not a table"},
	}, {
		name:    "a string",
		src:     `function GetDependencies(obj) return "none" end`,
		wantErr: []string{"the dependencies returned are a string, not a list"},
	}, {
		name:    "an object",
		src:     `function GetDependencies(obj) return {apiVersion = "v1", kind = "Secret", name = "a"} end`,
		wantErr: []string{"the dependencies returned are an object, not a list"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := customized(t, Options{}, scripts{interpreter.OperationInterpretDependency: tc.src})
			deps, err := c.GetDependencies(app(map[string]any{"config": "settings", "template": podTemplate()}, nil))
			if tc.wantErr != nil {
				wantErr(t, err, tc.wantErr...)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, deps); diff != "" {
				t.Errorf("GetDependencies (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCompileErrors: Apply and Compile name the operation and the line.
func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name    string
		s       scripts
		wantErr []string
	}{{
		name:    "syntax error",
		s:       scripts{interpreter.OperationGetReplicas: "function GetReplicas(obj)\n  return obj.spec.size +\nend"},
		wantErr: []string{"replicaResource: line 3 (column 3) near 'end': syntax error"},
	}, {
		name:    "unfinished function",
		s:       scripts{interpreter.OperationInterpretHealth: "function InterpretHealth(obj)\n  if obj then\n    return true\n"},
		wantErr: []string{"healthInterpretation: at the end of the script"},
	}, {
		name:    "unfinished string",
		s:       scripts{interpreter.OperationReflectStatus: "function ReflectStatus(obj)\n  return \"x\nend"},
		wantErr: []string{"statusReflection: line 3", "unterminated string"},
	}, {
		name:    "missing function",
		s:       scripts{interpreter.OperationRetain: `function retain(d, o) return d end`},
		wantErr: []string{"retention: the script does not define function Retain"},
	}, {
		name:    "a local function is not the operation's",
		s:       scripts{interpreter.OperationRetain: `local function Retain(d, o) return d end`},
		wantErr: []string{"retention: the script does not define function Retain"},
	}, {
		name:    "the wrong operation's function",
		s:       scripts{interpreter.OperationAggregateStatus: `function ReflectStatus(o) return o.status end`},
		wantErr: []string{"statusAggregation: the script does not define function AggregateStatus"},
	}, {
		name:    "empty",
		s:       scripts{interpreter.OperationAggregateStatus: " \n"},
		wantErr: []string{"statusAggregation: the script is empty"},
	}, {
		name:    "no scripts",
		s:       scripts{},
		wantErr: []string{"no script is set"},
	}, {
		name:    "too long",
		s:       scripts{interpreter.OperationInterpretHealth: "function InterpretHealth(o) return true end\n" + strings.Repeat("-- padding\n", 7000)},
		wantErr: []string{"above the limit of 65536"},
	}, {
		name: "every error at once",
		s: scripts{
			interpreter.OperationGetReplicas:     "function GetReplicas(o) return o.spec.size end",
			interpreter.OperationInterpretHealth: "function InterpretHealth(o)\n return ==\nend",
			interpreter.OperationReviseReplica:   "function Revise(o, n) return o end",
		},
		wantErr: []string{"healthInterpretation: line 2", "replicaRevision: the script does not define function ReviseReplica"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ric := newRIC("bad", tc.s)
			wantErr(t, Compile(ric.Spec), tc.wantErr...)
			store := NewStore(Options{})
			err := store.Apply(ric)
			wantErr(t, err, append([]string{`customization "bad"`}, tc.wantErr...)...)
			if _, ok := store.Lookup(gvkApp); ok {
				t.Error("a customization that does not compile is in use")
			}
		})
	}

	bad := newRICFor("t", "a/b/c", "X", scripts{interpreter.OperationInterpretHealth: "function InterpretHealth(o) return true end"})
	wantErr(t, Compile(bad.Spec), "target")
	bad = newRICFor("t", "v1", "", scripts{interpreter.OperationInterpretHealth: "function InterpretHealth(o) return true end"})
	wantErr(t, Compile(bad.Spec), "target: apiVersion and kind are required")
}
