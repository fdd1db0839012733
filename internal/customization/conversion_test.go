package customization

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// The rules between Lua results and JSON, as Karmada documents and does them (see
// convert.go), each through a real script. Every case writes into spec a value made by the
// script, and the test compares the resulting spec's JSON.
func TestConversionRules(t *testing.T) {
	tests := []struct {
		name     string
		desired  string // the desired object's spec, as JSON
		observed string // the observed object's spec, as JSON ("" for none)
		lua      string // statements run in Retain(d, o) before return d
		want     string // d.spec as JSON after the call
		wantErr  string
	}{
		// nil
		{name: "nil: a field assigned nil is absent, not null", desired: `{"a":1,"b":2}`,
			lua: `d.spec.a = nil`, want: `{"b":2}`},
		{name: "nil: a new field assigned nil is absent", desired: `{"b":2}`,
			lua: `d.spec.x = nil`, want: `{"b":2}`},
		{name: "nil: a constructor's nil field is absent", desired: `{}`,
			lua: `d.spec = {a = nil, b = 1}`, want: `{"b":1}`},
		{name: "nested nil: a table whose only field is nil is an empty table (left out)", desired: `{"b":2}`,
			lua: `d.spec.x = {z = nil}`, want: `{"b":2}`},
		{name: "nested nil: a table holding only left-out tables is still there, empty", desired: `{"b":2}`,
			lua: `d.spec.x = {y = {z = nil}}`, want: `{"b":2,"x":{}}`},
		{name: "nested nil: nil deep in kept fields", desired: `{"x":{"y":{"z":1,"w":2}}}`,
			lua: `d.spec.x.y.z = nil`, want: `{"x":{"y":{"w":2}}}`},
		{name: "nil: a list's trailing nil shortens it", desired: `{}`,
			lua: `d.spec.l = {1, 2, nil}`, want: `{"l":[1,2]}`},
		{name: "nil: a list's last element removed", desired: `{"l":[1,2,3]}`,
			lua: `d.spec.l[3] = nil`, want: `{"l":[1,2]}`},
		{name: "nil: a hole in a list is an error", desired: `{}`,
			lua: `d.spec.l = {1, nil, 3}`, wantErr: "spec.l: the list has a hole (index 2 of 3 is nil)"},

		// empty tables
		{name: "empty: a script-made empty table with nothing at its path is left out", desired: `{"b":2}`,
			lua: `d.spec.x = {}`, want: `{"b":2}`},
		{name: "empty: where the desired object has an empty object, {}", desired: `{"affinity":{}}`,
			lua: `d.spec.affinity = {}`, want: `{"affinity":{}}`},
		{name: "empty: where the desired object has an empty list, []", desired: `{"tolerations":[]}`,
			lua: `d.spec.tolerations = {}`, want: `{"tolerations":[]}`},
		{name: "empty: the observed object counts too", desired: `{}`, observed: `{"ports":[]}`,
			lua: `d.spec.ports = {}`, want: `{"ports":[]}`},
		{name: "empty: an empty object wins over an empty list at the same path", desired: `{"x":{}}`, observed: `{"x":[]}`,
			lua: `d.spec.x = {}`, want: `{"x":{}}`},
		{name: "empty: paths leave list indexes out", desired: `{"containers":[{"name":"a","resources":{}}]}`,
			lua:  `d.spec.containers = {{name = "b", resources = {}}, {name = "c", resources = {}}}`,
			want: `{"containers":[{"name":"b","resources":{}},{"name":"c","resources":{}}]}`},
		{name: "empty: the path must match, not just the name", desired: `{"a":{"x":{}}}`,
			lua: `d.spec.b = {x = {}}`, want: `{"a":{"x":{}},"b":{}}`},
		{name: "empty: a script-made empty list element with nothing at its path is left out", desired: `{}`,
			lua: `d.spec.l = {{}, "x", {}}`, want: `{"l":["x"]}`},
		{name: "empty: an empty object made from the object stays an object", desired: `{"o":{}}`,
			lua: `d.spec.moved = d.spec.o`, want: `{"o":{},"moved":{}}`},
		{name: "empty: an empty list made from the object stays a list", desired: `{"l":[]}`,
			lua: `d.spec.moved = d.spec.l`, want: `{"l":[],"moved":[]}`},
		{name: "empty: a list the script emptied stays a list", desired: `{"l":[1]}`,
			lua: `table.remove(d.spec.l)`, want: `{"l":[]}`},
		{name: "empty: an object the script emptied stays an object", desired: `{"o":{"k":"v"}}`,
			lua: `d.spec.o.k = nil`, want: `{"o":{}}`},
		{name: "empty: a script-made table filled later is what it holds", desired: `{}`,
			lua: `local t = {} t[1] = "a" d.spec.l = t local m = {} m.k = 1 d.spec.m = m`, want: `{"l":["a"],"m":{"k":1}}`},

		// array vs map
		{name: "array: keys 1..n are a list", desired: `{}`,
			lua: `d.spec.l = {"a", "b", "c"}`, want: `{"l":["a","b","c"]}`},
		{name: "array: explicit keys 1..n are a list", desired: `{}`,
			lua: `d.spec.l = {[2] = "b", [1] = "a"}`, want: `{"l":["a","b"]}`},
		{name: "map: string keys are an object", desired: `{}`,
			lua: `d.spec.m = {a = 1, ["b-c"] = true}`, want: `{"m":{"a":1,"b-c":true}}`},
		{name: "map: numeric strings are object keys", desired: `{}`,
			lua: `d.spec.m = {["1"] = "x"}`, want: `{"m":{"1":"x"}}`},
		{name: "mixed keys are an error", desired: `{}`,
			lua: `d.spec.x = {1, a = 2}`, wantErr: "spec.x: the table mixes list items and object fields"},
		{name: "key 0 is an error", desired: `{}`,
			lua: `d.spec.x = {[0] = 1}`, wantErr: "spec.x: a table key 0 (number) cannot be converted"},
		{name: "fractional keys are an error", desired: `{}`,
			lua: `d.spec.x = {[1.5] = 1}`, wantErr: "a table key 1.5 (number) cannot be converted"},
		{name: "boolean keys are an error", desired: `{}`,
			lua: `d.spec.x = {[true] = 1}`, wantErr: "a table key true (boolean) cannot be converted"},
		{name: "functions are an error", desired: `{}`,
			lua: `d.spec.f = print`, wantErr: "spec.f: a function cannot be converted"},

		// integer vs float
		{name: "integer: whole numbers are integers", desired: `{}`,
			lua: `d.spec.n = {3, 3.0, -7, 2^40, 10/2, 0 * -1}`, want: `{"n":[3,3,-7,1099511627776,5,0]}`},
		{name: "float: other numbers are floats", desired: `{}`,
			lua: `d.spec.n = {2.5, 7/2, 0.1, -1e-3}`, want: `{"n":[2.5,3.5,0.1,-0.001]}`},
		{name: "float: whole numbers beyond int64 stay floats", desired: `{}`,
			lua: `d.spec.n = 1e300`, want: `{"n":1e+300}`},
		{name: "integer: the object's integers stay integers", desired: `{"replicas":3}`,
			lua: `d.spec.replicas = d.spec.replicas + 1`, want: `{"replicas":4}`},
		{name: "NaN is an error", desired: `{}`,
			lua: `d.spec.n = 0/0`, wantErr: "spec.n: NaN is not a JSON number"},
		{name: "infinity is an error", desired: `{}`,
			lua: `d.spec.n = 1/0`, wantErr: "spec.n: +Inf is not a JSON number"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := customized(t, Options{}, scripts{interpreter.OperationRetain: "function Retain(d, o)\n" + tc.lua + "\nreturn d end"})
			desired := app(specOf(t, tc.desired), nil)
			var observed *unstructured.Unstructured
			if tc.observed != "" {
				observed = app(specOf(t, tc.observed), nil)
			}
			out, err := c.Retain(desired, observed)
			if tc.wantErr != "" {
				wantErr(t, err, tc.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(out.Object["spec"])
			var gotV, wantV any
			_ = json.Unmarshal(got, &gotV)
			if err := json.Unmarshal([]byte(tc.want), &wantV); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantV, gotV); diff != "" {
				t.Errorf("spec %s (-want +got):\n%s", got, diff)
			}
		})
	}
}

func specOf(t *testing.T, text string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		t.Fatal(err)
	}
	return normalizedMap(m)
}

// normalizedMap turns JSON's float64 whole numbers into int64, as unstructured objects hold them.
func normalizedMap(m map[string]any) map[string]any {
	n, _ := normalized(m)
	return n.(map[string]any)
}

// Integers come back as int64, not float64: what the typed results and the API server expect.
func TestConversionNumberTypes(t *testing.T) {
	c := customized(t, Options{}, scripts{interpreter.OperationRetain: `function Retain(d, o) d.spec = {i = 3, f = 2.5} return d end`})
	out, err := c.Retain(app(nil, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	spec := out.Object["spec"].(map[string]any)
	if _, ok := spec["i"].(int64); !ok {
		t.Errorf("3 came back as a %T", spec["i"])
	}
	if _, ok := spec["f"].(float64); !ok {
		t.Errorf("2.5 came back as a %T", spec["f"])
	}
}

// The references are the operation's objects, as Karmada's: ReviseReplica's object, and for
// the operations whose result is not the object (status, requirements, dependencies), none:
// a script-made empty table there is left out.
func TestConversionReferencesByOperation(t *testing.T) {
	c := customized(t, Options{}, scripts{
		interpreter.OperationReviseReplica:       `function ReviseReplica(d, n) d.spec.affinity = {} d.spec.extra = {} return d end`,
		interpreter.OperationReflectStatus:       `function ReflectStatus(o) return {conditions = {}, ready = o.status.ready} end`,
		interpreter.OperationGetReplicas:         `function GetReplicas(d) return 1, {nodeClaim = {}, resourceRequest = {cpu = "1"}} end`,
		interpreter.OperationInterpretDependency: `function GetDependencies(d) return {{}} end`,
	})
	obj := app(map[string]any{"affinity": map[string]any{}}, map[string]any{"ready": int64(1), "conditions": []any{}})
	out, err := c.ReviseReplica(obj, 2)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"affinity": map[string]any{}}, out.Object["spec"]); diff != "" {
		t.Errorf("ReviseReplica spec (-want +got):\n%s", diff)
	}
	st, err := c.ReflectStatus(obj)
	if err != nil || string(st.Raw) != `{"ready":1}` {
		t.Errorf("ReflectStatus = %s, %v; want {\"ready\":1}", st.Raw, err)
	}
	_, req, err := c.GetReplicas(obj)
	if err != nil || req.NodeClaim != nil || req.ResourceRequest.Cpu().String() != "1" {
		t.Errorf("GetReplicas requirement = %+v, %v", req, err)
	}
	deps, err := c.GetDependencies(obj)
	if err != nil || len(deps) != 0 {
		t.Errorf("GetDependencies of {{}} = %v, %v; want none", deps, err)
	}
}

// TestEmptyShapes: the paths of the references' empty values, list indexes left out.
func TestEmptyShapes(t *testing.T) {
	ref := map[string]any{
		"spec": map[string]any{
			"aa": map[string]any{}, "bb": []any{}, "cc": []any{"x"},
			"dd":   map[string]any{"ee": map[string]any{}},
			"list": []any{map[string]any{"ff": []any{}}, map[string]any{"gg": map[string]any{}}},
		},
		"status": nil,
	}
	other := map[string]any{"spec": map[string]any{"hh": []any{}}}
	got := emptyShapesOf(1000, ref, nil, other)
	want := emptyShapes{
		objects: map[string]bool{"spec.aa": true, "spec.dd.ee": true, "spec.list.gg": true},
		lists:   map[string]bool{"spec.bb": true, "spec.list.ff": true, "spec.hh": true},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(emptyShapes{})); diff != "" {
		t.Errorf("emptyShapesOf (-want +got):\n%s", diff)
	}
	// The top level itself is no path, and the walk stops at the limit.
	if got := emptyShapesOf(1000, map[string]any{}, []any{}); got.objects != nil || got.lists != nil {
		t.Errorf("empty references: %+v", got)
	}
	if got := emptyShapesOf(1, ref); got.objects != nil || got.lists != nil {
		t.Errorf("a limit of 1 visited more than the top level: %+v", got)
	}
}
