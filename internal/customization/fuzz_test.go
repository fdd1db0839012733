package customization

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

const fuzzTimeout = 50 * time.Millisecond

// FuzzScript runs arbitrary script text, as every operation's script and as the body of
// InterpretHealth, on an arbitrary JSON object: no call may panic, and each returns within
// about twice the time budget.
func FuzzScript(f *testing.F) {
	for _, seed := range []struct{ script, obj string }{
		{`function GetReplicas(o) return o.spec.size, {resourceRequest = {cpu = o.spec.cpu}} end`, `{"spec":{"size":3,"cpu":"1"}}`},
		{`function ReviseReplica(o, n) o.spec.size = n return o end`, `{"spec":{"size":3}}`},
		{`function Retain(d, o) d.spec = o and o.spec return d end`, `{"spec":{"a":[1,{}]}}`},
		{`function ReflectStatus(o) return o.status end`, `{"status":{"x":[[],{}]}}`},
		{`function AggregateStatus(d, items) d.status = {n = #items, first = items[1]} return d end`, `{}`},
		{`function InterpretHealth(o) return o.status.ready == o.spec.size end`, `{"spec":{"size":1},"status":{"ready":1}}`},
		{`function GetDependencies(o) return {{apiVersion = "v1", kind = "Secret", name = o.spec.s}} end`, `{"spec":{"s":"x"}}`},
		{`local kube = require("kube") function GetReplicas(o) return 1, kube.accuratePodRequirements(o.spec.template) end`, `{"spec":{"template":{"spec":{"containers":[{"resources":{"requests":{"cpu":"x"}}}]}}}}`},
		{`local kube = require("kube") function GetDependencies(o) return kube.getPodDependencies(o.spec, 5) end`, `{"spec":[1]}`},
		{`local kube = require("kube") function GetComponents(o) return {{name = "a", replicas = o.spec.n, replicaRequirements = kube.accuratePodRequirements(o.spec.t)}} end`, `{"spec":{"n":2,"t":{"spec":{}}}}`},
		{`function GetComponents(o) return {{name = o.spec.n, replicas = 1, replicaRequirements = {}}, {}} end`, `{"spec":{"n":"x"}}`},
		{`function Retain(d, o) d.spec.e = {} d.spec.l = {{}, {x = {}}} return d end`, `{"spec":{"e":[],"l":[{"x":{}}]}}`},
		{`function ReflectStatus(o) return {t = os.time(), d = os.date("!%c", o.spec.t), q = require("kube").getResourceQuantity(o.spec.q)} end`, `{"spec":{"t":0,"q":"1Gi"}}`},
		{`while true do end`, `{}`},
		{`local s = "x" while true do s = s .. s end`, `{}`},
		{`local t = {} while true do t[#t+1] = {} end`, `{}`},
		{`return string.find(string.rep("a", 3000), ".-.-.-b")`, `{}`},
		{`local function f() return f() end return f()`, `{}`},
		{`local function f() return 1 + f() end return f()`, `{}`},
		{`return string.format("%99.99f", 1e308) .. string.rep(("x"):rep(99), 99)`, `{}`},
		{`local t = setmetatable({}, {}) return t`, `{}`},
		{`return {[{}] = 1}`, `{}`},
		{`function ReflectStatus(o) local t = {} t[1] = t return {t = t} end`, `{}`},
		{`function InterpretHealth(o) return o end`, `{"metadata":{"name":"x"}}`},
		{`function GetReplicas(o) return 0/0 end`, `[1]`},
		{"function InterpretHealth(o)\n  return ((((o\nend", `null`},
		{`x = ... local a, b, c, d = ... return a(b, c, d)`, `{}`},
	} {
		f.Add(seed.script, seed.obj)
	}
	f.Fuzz(func(t *testing.T, script, objJSON string) {
		var x any
		if err := utiljson.Unmarshal([]byte(objJSON), &x); err != nil {
			x = objJSON
		}
		m, ok := x.(map[string]any)
		if !ok {
			m = map[string]any{"spec": x}
		}
		m["apiVersion"], m["kind"] = "example.com/v1", "App"
		if md, ok := m["metadata"].(map[string]any); ok {
			md["name"], md["namespace"] = "fuzz", "ns"
		} else {
			m["metadata"] = map[string]any{"name": "fuzz", "namespace": "ns"}
		}
		obj := &unstructured.Unstructured{Object: m}

		s := scripts{}
		for _, op := range interpreter.Operations {
			s[op] = script
		}
		body := "function InterpretHealth(obj)\n" + script + "\nend"
		for _, src := range []scripts{s, {interpreter.OperationInterpretHealth: body}} {
			store := NewStore(Options{Timeout: fuzzTimeout})
			ric := newRIC("fuzz", src)
			if err := Compile(ric.Spec); err != nil {
				// Apply keeps only what compiles: try each script alone.
				for op, one := range src {
					_ = store.Apply(newRIC(string(op), scripts{op: one}))
				}
			} else if err := store.Apply(ric); err != nil {
				t.Fatalf("Compile passed but Apply failed: %v", err)
			}
			c, ok := store.Lookup(gvkApp)
			if !ok {
				continue
			}
			run(t, c, obj)
		}
	})
}

// run calls every operation c has on obj; each must return (its time budget stops it).
func run(t *testing.T, c interpreter.Customization, obj *unstructured.Unstructured) {
	items := []workv1alpha2.AggregatedStatusItem{
		{ClusterName: "m1", Applied: true, Health: workv1alpha1.ResourceHealthy, Status: &runtime.RawExtension{Raw: []byte(`{"ready":1,"conditions":[]}`)}},
		{ClusterName: "m2"},
	}
	calls := map[interpreter.Operation]func(){
		interpreter.OperationGetReplicas:         func() { _, _, _ = c.GetReplicas(obj) },
		interpreter.OperationReviseReplica:       func() { _, _ = c.ReviseReplica(obj, 2) },
		interpreter.OperationRetain:              func() { _, _ = c.Retain(obj, obj) },
		interpreter.OperationReflectStatus:       func() { _, _ = c.ReflectStatus(obj) },
		interpreter.OperationAggregateStatus:     func() { _, _ = c.AggregateStatus(obj, items); _, _ = c.AggregateStatus(obj, nil) },
		interpreter.OperationInterpretHealth:     func() { _, _ = c.InterpretHealth(obj) },
		interpreter.OperationInterpretDependency: func() { _, _ = c.GetDependencies(obj) },
		interpreter.OperationGetComponents:       func() { _, _ = c.GetComponents(obj) },
	}
	for _, op := range interpreter.Operations {
		if !c.Has(op) {
			continue
		}
		// What this catches is a call its time budget never stops (see runaway).
		callWithin(t, string(op), calls[op])
	}
}
