package customization

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// flinkLike is a two-component workload, shaped as a FlinkDeployment: a job manager and
// task managers, each with its own pod template and resources.
func flinkLike() *unstructured.Unstructured {
	pod := func(cpu, memory string) map[string]any {
		return map[string]any{"spec": map[string]any{
			"nodeSelector": map[string]any{"pool": "stream"},
			"containers": []any{map[string]any{"name": "flink-main-container", "resources": map[string]any{
				"requests": map[string]any{"cpu": cpu, "memory": memory}}}},
		}}
	}
	return app(map[string]any{
		"jobManager":  map[string]any{"replicas": int64(1), "podTemplate": pod("1", "2Gi")},
		"taskManager": map[string]any{"replicas": int64(3), "podTemplate": pod("2", "4Gi")},
	}, nil)
}

// The script of Karmada's documentation for such a workload, as a user would write it.
const flinkComponents = `local kube = require("kube")
function GetComponents(obj)
  components = {}
  if obj.spec.jobManager ~= nil then
    jm = {}
    jm.name = "jobmanager"
    jm.replicas = obj.spec.jobManager.replicas or 1
    jm.replicaRequirements = kube.accuratePodRequirements(obj.spec.jobManager.podTemplate)
    table.insert(components, jm)
  end
  if obj.spec.taskManager ~= nil then
    tm = {}
    tm.name = "taskmanager"
    tm.replicas = obj.spec.taskManager.replicas
    tm.replicaRequirements = kube.accuratePodRequirements(obj.spec.taskManager.podTemplate)
    table.insert(components, tm)
  end
  return components
end`

func requirements(cpu, memory string) *workv1alpha2.ComponentReplicaRequirements {
	return &workv1alpha2.ComponentReplicaRequirements{
		NodeClaim: &workv1alpha2.NodeClaim{NodeSelector: map[string]string{"pool": "stream"}},
		ResourceRequest: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(cpu),
			corev1.ResourceMemory: resource.MustParse(memory),
		},
	}
}

func TestGetComponents(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		want    []workv1alpha2.Component
		wantErr []string
	}{{
		name: "Karmada's documented FlinkDeployment script",
		src:  flinkComponents,
		want: []workv1alpha2.Component{
			{Name: "jobmanager", Replicas: 1, ReplicaRequirements: requirements("1", "2Gi")},
			{Name: "taskmanager", Replicas: 3, ReplicaRequirements: requirements("2", "4Gi")},
		},
	}, {
		name: "requirements written by hand; none",
		src: `function GetComponents(obj)
  return {
    {name = "head", replicas = 1, replicaRequirements = {resourceRequest = {cpu = "2"}, priorityClassName = "high"}},
    {name = "worker", replicas = 0},
  }
end`,
		want: []workv1alpha2.Component{
			{Name: "head", Replicas: 1, ReplicaRequirements: &workv1alpha2.ComponentReplicaRequirements{
				ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}, PriorityClassName: "high"}},
			{Name: "worker", Replicas: 0},
		},
	}, {
		name: "no components",
		src:  `function GetComponents(obj) return {} end`,
		want: []workv1alpha2.Component{},
	}, {
		name:    "nil",
		src:     `function GetComponents(obj) return nil end`,
		wantErr: []string{"the components returned are a nil, not a list"},
	}, {
		name:    "an object",
		src:     `function GetComponents(obj) return {name = "a", replicas = 1} end`,
		wantErr: []string{"the components returned are an object, not a list"},
	}, {
		name:    "a component that is not a table",
		src:     `function GetComponents(obj) return {"a"} end`,
		wantErr: []string{"component 1: is a string, not a table"},
	}, {
		name:    "no name",
		src:     `function GetComponents(obj) return {{replicas = 1}} end`,
		wantErr: []string{"component 1: name is a nil, not a string"},
	}, {
		name:    "an empty name",
		src:     `function GetComponents(obj) return {{name = "", replicas = 1}} end`,
		wantErr: []string{"component 1 has no name"},
	}, {
		name:    "a long name",
		src:     `function GetComponents(obj) return {{name = string.rep("x", 33), replicas = 1}} end`,
		wantErr: []string{"longer than 32 characters"},
	}, {
		name:    "a name used twice",
		src:     `function GetComponents(obj) return {{name = "a", replicas = 1}, {name = "a", replicas = 2}} end`,
		wantErr: []string{`component 2: the name "a" is used twice`},
	}, {
		name:    "no replicas",
		src:     `function GetComponents(obj) return {{name = "a"}} end`,
		wantErr: []string{"component 1 (a): replicas are a nil, not a number"},
	}, {
		name:    "fractional replicas",
		src:     `function GetComponents(obj) return {{name = "a", replicas = 1.5}} end`,
		wantErr: []string{"component 1 (a): replicas 1.5 are not a whole number"},
	}, {
		name:    "negative replicas",
		src:     `function GetComponents(obj) return {{name = "a", replicas = -1}} end`,
		wantErr: []string{"replicas -1 are not in [0, 2147483647]"},
	}, {
		name:    "a misspelt field",
		src:     `function GetComponents(obj) return {{name = "a", replica = 1}} end`,
		wantErr: []string{`component 1 (a): unknown field "replica"`},
	}, {
		name:    "a misspelt requirement",
		src:     `function GetComponents(obj) return {{name = "a", replicas = 1, replicaRequirements = {resourceRequests = {cpu = "1"}}}} end`,
		wantErr: []string{"replicaRequirements", `unknown field "resourceRequests"`},
	}, {
		name:    "requirements that are not a table",
		src:     `function GetComponents(obj) return {{name = "a", replicas = 1, replicaRequirements = "big"}} end`,
		wantErr: []string{"replicaRequirements are a string, not a table"},
	}, {
		name:    "too many",
		src:     `function GetComponents(obj) local l = {} for i = 1, 33 do l[i] = {name = "c" .. i, replicas = 1} end return l end`,
		wantErr: []string{"33 components returned, more than 32"},
	}, {
		name:    "a script error names the line",
		src:     "function GetComponents(obj)\n  return obj.spec.missing.replicas\nend",
		wantErr: []string{`customization "test", componentResource (GetComponents)`, "line 2:"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := customized(t, Options{}, scripts{interpreter.OperationGetComponents: tc.src})
			got, err := c.GetComponents(flinkLike())
			if tc.wantErr != nil {
				wantErr(t, err, tc.wantErr...)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("GetComponents (-want +got):\n%s", diff)
			}
		})
	}
}

func TestComponentsCompile(t *testing.T) {
	store := NewStore(Options{})
	err := store.Apply(newRIC("bad", scripts{interpreter.OperationGetComponents: `function GetComponent(obj) return {} end`}))
	wantErr(t, err, "componentResource: the script does not define function GetComponents")
	err = store.Apply(newRIC("syntax", scripts{interpreter.OperationGetComponents: "function GetComponents(obj)\n  return {\nend"}))
	wantErr(t, err, "componentResource: line 3")
}

// TestInterpreterComponents: interpreter.Interpreter serves Components from the store, and
// nothing for kinds without a componentResource script.
func TestInterpreterComponents(t *testing.T) {
	store := NewStore(Options{})
	if err := store.Apply(newRIC("flink", scripts{interpreter.OperationGetComponents: flinkComponents})); err != nil {
		t.Fatal(err)
	}
	in := interpreter.Interpreter{Customizations: store}
	obj := flinkLike()
	if !in.HasComponents(obj) || !in.Customized(gvkApp, interpreter.OperationGetComponents) {
		t.Fatal("HasComponents = false; App's customization scripts componentResource")
	}
	got, err := in.Components(obj)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range got {
		names = append(names, c.Name+"="+string(rune('0'+c.Replicas)))
	}
	if strings.Join(names, ",") != "jobmanager=1,taskmanager=3" {
		t.Errorf("Components = %v", names)
	}
	if in.HasReplicas(obj) {
		t.Error("HasReplicas = true; only componentResource is scripted")
	}

	deploy := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "d", "namespace": "ns"}, "spec": map[string]any{"replicas": int64(2)}}}
	if in.HasComponents(deploy) {
		t.Error("HasComponents(Deployment) = true")
	}
	if got, err := in.Components(deploy); got != nil || err != nil {
		t.Errorf("Components(Deployment) = %v, %v; want nil, nil", got, err)
	}
	if got, err := (interpreter.Interpreter{}).Components(obj); got != nil || err != nil {
		t.Errorf("Components without customizations = %v, %v", got, err)
	}
}

// TestServing: the store names the customization that serves each operation of a kind, the
// first by name.
func TestServing(t *testing.T) {
	store := NewStore(Options{})
	for _, ric := range []*configv1alpha1.ResourceInterpreterCustomization{
		newRIC("b", scripts{interpreter.OperationRetain: `function Retain(d, o) return d end`,
			interpreter.OperationGetComponents: `function GetComponents(o) return {} end`}),
		newRIC("a", scripts{interpreter.OperationRetain: `function Retain(d, o) return d end`}),
	} {
		if err := store.Apply(ric); err != nil {
			t.Fatal(err)
		}
	}
	for op, want := range map[interpreter.Operation]string{
		interpreter.OperationRetain:          "a",
		interpreter.OperationGetComponents:   "b",
		interpreter.OperationInterpretHealth: "",
		interpreter.Operation("nonsense"):    "",
	} {
		if got := store.Serving(gvkApp, op); got != want {
			t.Errorf("Serving(%s) = %q, want %q", op, got, want)
		}
	}
	if got := store.Serving(gvkApp.GroupKind().WithVersion("v2"), interpreter.OperationRetain); got != "" {
		t.Errorf("Serving of another version = %q", got)
	}
}
