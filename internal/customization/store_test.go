package customization

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/flotilla-io/flotilla/internal/interpreter"
)

func healthIs(v string) string {
	return "function InterpretHealth(obj) return " + v + " end"
}

func replicasAre(n int) string {
	return fmt.Sprintf("function GetReplicas(obj) return %d end", n)
}

// TestFirstByNameWinsPerOperation: several customizations of one kind; per operation, the
// first by name that scripts it serves it.
func TestFirstByNameWinsPerOperation(t *testing.T) {
	store := NewStore(Options{})
	for _, ric := range []struct {
		name string
		s    scripts
	}{
		{"c", scripts{interpreter.OperationInterpretHealth: healthIs("false"), interpreter.OperationGetReplicas: replicasAre(3)}},
		{"b", scripts{interpreter.OperationGetReplicas: replicasAre(2)}},
		{"d", scripts{interpreter.OperationReflectStatus: `function ReflectStatus(o) return {by = "d"} end`}},
		{"a", scripts{interpreter.OperationInterpretHealth: healthIs("true")}},
	} {
		if err := store.Apply(newRIC(ric.name, ric.s)); err != nil {
			t.Fatal(err)
		}
	}
	other := newRICFor("z", "example.com/v2", "App", scripts{interpreter.OperationRetain: `function Retain(d, o) return d end`})
	if err := store.Apply(other); err != nil {
		t.Fatal(err)
	}

	c, ok := store.Lookup(gvkApp)
	if !ok {
		t.Fatal("no customization of App")
	}
	for _, op := range interpreter.Operations {
		want := op == interpreter.OperationInterpretHealth || op == interpreter.OperationGetReplicas || op == interpreter.OperationReflectStatus
		if c.Has(op) != want {
			t.Errorf("Has(%s) = %v, want %v", op, c.Has(op), want)
		}
	}
	if healthy, err := c.InterpretHealth(app(nil, nil)); err != nil || !healthy {
		t.Errorf("InterpretHealth = %v, %v; want a's true", healthy, err)
	}
	if n, _, err := c.GetReplicas(app(nil, nil)); err != nil || n != 2 {
		t.Errorf("GetReplicas = %v, %v; want b's 2", n, err)
	}
	if raw, err := c.ReflectStatus(app(nil, nil)); err != nil || string(raw.Raw) != `{"by":"d"}` {
		t.Errorf("ReflectStatus = %v, %v; want d's", raw, err)
	}
	if _, err := c.Retain(app(nil, nil), app(nil, nil)); err == nil {
		t.Error("Retain of App ran v2's script")
	}
	if c2, ok := store.Lookup(gvkApp.GroupVersion().WithKind("Other")); ok || c2 != nil {
		t.Errorf("Lookup(Other) = %v, %v", c2, ok)
	}
	if c2, ok := store.Lookup(schema.GroupVersionKind{Group: "example.com", Version: "v2", Kind: "App"}); !ok || !c2.Has(interpreter.OperationRetain) || c2.Has(interpreter.OperationInterpretHealth) {
		t.Error("App v2 is not customized on its own")
	}

	// Removing a leaves c's health; removing b leaves c's replicas.
	store.Remove("a")
	store.Remove("b")
	store.Remove("nothing")
	c, _ = store.Lookup(gvkApp)
	if healthy, err := c.InterpretHealth(app(nil, nil)); err != nil || healthy {
		t.Errorf("InterpretHealth after removing a = %v, %v; want c's false", healthy, err)
	}
	if n, _, err := c.GetReplicas(app(nil, nil)); err != nil || n != 3 {
		t.Errorf("GetReplicas after removing b = %v, %v; want c's 3", n, err)
	}
	store.Remove("c")
	store.Remove("d")
	if _, ok := store.Lookup(gvkApp); ok {
		t.Error("App is customized after every customization was removed")
	}
	if rev := store.Revision(gvkApp); rev != "" {
		t.Errorf("Revision with no customization = %q, want empty", rev)
	}
}

// TestApplyReplacesAndRevision: Apply replaces a customization of the same name, and the
// revision changes whenever a script of the kind does, not otherwise.
func TestApplyReplacesAndRevision(t *testing.T) {
	store := NewStore(Options{})
	if rev := store.Revision(gvkApp); rev != "" {
		t.Fatalf("Revision of an empty store = %q", rev)
	}
	apply := func(name string, s scripts) {
		t.Helper()
		if err := store.Apply(newRIC(name, s)); err != nil {
			t.Fatal(err)
		}
	}
	health := func() bool {
		t.Helper()
		c, ok := store.Lookup(gvkApp)
		if !ok {
			t.Fatal("no customization")
		}
		h, err := c.InterpretHealth(app(nil, nil))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}

	apply("x", scripts{interpreter.OperationInterpretHealth: healthIs("true")})
	rev1 := store.Revision(gvkApp)
	c1, _ := store.Lookup(gvkApp)
	if rev1 == "" || c1.Revision() != rev1 || !health() {
		t.Fatalf("revision %q (customization's %q), health %v", rev1, c1.Revision(), health())
	}

	apply("x", scripts{interpreter.OperationInterpretHealth: healthIs("true")})
	if rev := store.Revision(gvkApp); rev != rev1 {
		t.Errorf("re-applying the same scripts changed the revision: %q -> %q", rev1, rev)
	}

	apply("x", scripts{interpreter.OperationInterpretHealth: healthIs("false")})
	rev2 := store.Revision(gvkApp)
	if rev2 == rev1 || health() {
		t.Errorf("replacing x: revision %q -> %q, health %v; want a new revision and false", rev1, rev2, health())
	}
	if h, _ := c1.InterpretHealth(app(nil, nil)); !h {
		t.Error("a customization looked up before the change changed under its caller")
	}

	apply("y", scripts{interpreter.OperationRetain: `function Retain(d, o) return d end`})
	rev3 := store.Revision(gvkApp)
	if rev3 == rev2 {
		t.Error("adding a customization of the kind did not change the revision")
	}
	store.Remove("y")
	if rev := store.Revision(gvkApp); rev != rev2 {
		t.Errorf("removing y: revision %q, want back to %q", rev, rev2)
	}

	// A version that does not compile takes the name out of use; the kind's other
	// customizations stay.
	apply("w", scripts{interpreter.OperationGetReplicas: replicasAre(1)})
	err := store.Apply(newRIC("x", scripts{interpreter.OperationInterpretHealth: "function InterpretHealth(o) return end end"}))
	wantErr(t, err, `customization "x"`, "healthInterpretation: line 1")
	c, ok := store.Lookup(gvkApp)
	if !ok || c.Has(interpreter.OperationInterpretHealth) || !c.Has(interpreter.OperationGetReplicas) {
		t.Errorf("after a bad version of x: customized %v, health %v; want only w's replicas", ok, ok && c.Has(interpreter.OperationInterpretHealth))
	}
	store.Remove("w")
	if _, ok := store.Lookup(gvkApp); ok {
		t.Error("still customized")
	}

	// Retargeting a customization moves it.
	apply("x", scripts{interpreter.OperationInterpretHealth: healthIs("true")})
	if err := store.Apply(newRICFor("x", "example.com/v1", "Other", scripts{interpreter.OperationInterpretHealth: healthIs("true")})); err != nil {
		t.Fatal(err)
	}
	if _, ok := store.Lookup(gvkApp); ok {
		t.Error("App is still customized after x moved to Other")
	}
	if _, ok := store.Lookup(gvkApp.GroupVersion().WithKind("Other")); !ok {
		t.Error("Other is not customized")
	}

	wantErr(t, store.Apply(nil), "no customization")
	wantErr(t, store.Apply(newRIC("", scripts{interpreter.OperationInterpretHealth: healthIs("true")})), "no name")
}

// TestOnFailure: every run-time failure reaches the caller and OnFailure, naming the
// customization, the operation and the object.
func TestOnFailure(t *testing.T) {
	var f failures
	store := NewStore(Options{OnFailure: f.record})
	if err := store.Apply(newRIC("flaky", scripts{
		interpreter.OperationInterpretHealth: `function InterpretHealth(o) return o.status.ready > 0 end`,
		interpreter.OperationGetReplicas:     `function GetReplicas(o) return "many" end`,
	})); err != nil {
		t.Fatal(err)
	}
	c, _ := store.Lookup(gvkApp)
	if _, err := c.InterpretHealth(app(nil, map[string]any{"ready": int64(1)})); err != nil {
		t.Fatal(err)
	}
	if len(f.list()) != 0 {
		t.Fatalf("OnFailure called on success: %v", f.list())
	}
	_, healthErr := c.InterpretHealth(app(nil, nil))
	_, _, replicasErr := c.GetReplicas(app(nil, nil))
	got := f.list()
	if len(got) != 2 {
		t.Fatalf("OnFailure got %d failures, want 2: %v", len(got), got)
	}
	for i, want := range []struct {
		op  interpreter.Operation
		err error
	}{{interpreter.OperationInterpretHealth, healthErr}, {interpreter.OperationGetReplicas, replicasErr}} {
		if got[i].Customization != "flaky" || got[i].Operation != want.op || got[i].Object != "example.com/v1/App ns/web" || !errors.Is(got[i].Err, want.err) || want.err == nil {
			t.Errorf("failure %d = %+v; want flaky, %s, example.com/v1/App ns/web and the caller's error %v", i, got[i], want.op, want.err)
		}
	}

	// The object of a cluster-scoped kind; a nil object.
	obj := app(nil, nil)
	obj.SetNamespace("")
	_, _ = c.InterpretHealth(obj)
	_, err := c.InterpretHealth(nil)
	wantErr(t, err, "no object")
	got = f.list()
	if got[2].Object != "example.com/v1/App web" || got[3].Object != "<nil>" {
		t.Errorf("objects: %q, %q", got[2].Object, got[3].Object)
	}
}

// TestConcurrentUse runs every operation from many goroutines while customizations are
// applied and removed (go test -race).
func TestConcurrentUse(t *testing.T) {
	store := NewStore(Options{IdleStates: 2})
	full := scripts{
		interpreter.OperationGetReplicas:     `function GetReplicas(o) return o.spec.size, {resourceRequest = {cpu = "1"}} end`,
		interpreter.OperationReviseReplica:   `function ReviseReplica(o, n) o.spec.size = n return o end`,
		interpreter.OperationInterpretHealth: `function InterpretHealth(o) calls = (calls or 0) + 1 return calls == 1 end`,
		interpreter.OperationReflectStatus:   `function ReflectStatus(o) return o.status end`,
	}
	if err := store.Apply(newRIC("main", full)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				c, ok := store.Lookup(gvkApp)
				if !ok {
					t.Error("main is gone")
					return
				}
				obj := app(map[string]any{"size": int64(i)}, map[string]any{"ready": int64(g)})
				n, _, err := c.GetReplicas(obj)
				if err != nil || int(n) != i {
					t.Errorf("GetReplicas = %d, %v; want %d", n, err, i)
				}
				out, err := c.ReviseReplica(obj, int64(g))
				if err != nil || out.Object["spec"].(map[string]any)["size"] != int64(g) {
					t.Errorf("ReviseReplica = %v, %v", out, err)
				}
				// Every call has its own globals: calls is always 1.
				if h, err := c.InterpretHealth(obj); err != nil || !h {
					t.Errorf("InterpretHealth = %v, %v; a call saw another's globals", h, err)
				}
				if _, err := c.ReflectStatus(obj); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 50; i++ {
			name := fmt.Sprintf("side-%d", i%3)
			if err := store.Apply(newRIC(name, scripts{interpreter.OperationRetain: fmt.Sprintf("function Retain(d, o) return d end -- %d", i)})); err != nil {
				t.Error(err)
			}
			_ = store.Revision(gvkApp)
			if i%2 == 0 {
				store.Remove(name)
			}
		}
	}()
	wg.Wait()
}

// TestDeclaredAndBuiltinViews: the Declared view has the operations customizations applied
// with Apply serve, the Builtins view those only built-ins serve; both have the kind's
// revision, so that layering them (interpreter.Layers) joins it once.
func TestDeclaredAndBuiltinViews(t *testing.T) {
	store := NewStore(Options{})
	if err := store.ApplyBuiltin(newRIC("builtin", scripts{interpreter.OperationInterpretHealth: healthIs("false"), interpreter.OperationGetReplicas: replicasAre(9)})); err != nil {
		t.Fatal(err)
	}
	if err := store.Apply(newRIC("user", scripts{interpreter.OperationGetReplicas: replicasAre(2)})); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		view interpreter.Customizations
		has  map[interpreter.Operation]bool
	}{
		{"declared", store.Declared(), map[interpreter.Operation]bool{interpreter.OperationGetReplicas: true}},
		{"builtins", store.Builtins(), map[interpreter.Operation]bool{interpreter.OperationInterpretHealth: true}},
	} {
		c, ok := tc.view.Lookup(gvkApp)
		if !ok {
			t.Fatalf("%s: no customization of App", tc.name)
		}
		for _, op := range interpreter.Operations {
			if c.Has(op) != tc.has[op] {
				t.Errorf("%s: Has(%s) = %v", tc.name, op, c.Has(op))
			}
		}
		if c.Revision() != store.Revision(gvkApp) {
			t.Errorf("%s: revision %q, want the kind's %q", tc.name, c.Revision(), store.Revision(gvkApp))
		}
	}
	layered := interpreter.Interpreter{Customizations: interpreter.Layers{store.Declared(), nil, store.Builtins()}}
	if n, _, err := layered.GetReplicas(app(nil, nil)); err != nil || n != 2 {
		t.Errorf("GetReplicas = %v, %v; want the user's 2", n, err)
	}
	if layered.Revision(gvkApp) != store.Revision(gvkApp) {
		t.Errorf("layered revision %q, want %q", layered.Revision(gvkApp), store.Revision(gvkApp))
	}
	if _, ok := store.Declared().Lookup(schema.GroupVersionKind{Group: "x", Version: "v1", Kind: "Y"}); ok {
		t.Error("a kind with no customization")
	}
}
