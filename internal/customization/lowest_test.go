package customization

import (
	"testing"

	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// TestBuiltinsServeWhatNoOtherScripts: a built-in (ApplyBuiltin) serves an operation only
// when no customization applied with Apply scripts it, whatever the names; Remove and a
// customization of the same name leave it alone.
func TestBuiltinsServeWhatNoOtherScripts(t *testing.T) {
	store := NewStore(Options{})
	// "a" sorts before "z", but a built-in comes after every user customization.
	if err := store.ApplyBuiltin(newRIC("a", scripts{
		interpreter.OperationInterpretHealth: healthIs("false"),
		interpreter.OperationGetReplicas:     replicasAre(7),
	})); err != nil {
		t.Fatal(err)
	}
	c, ok := store.Lookup(gvkApp)
	if !ok {
		t.Fatal("the built-in is not in use")
	}
	if h, err := c.InterpretHealth(app(nil, nil)); err != nil || h {
		t.Fatalf("built-in InterpretHealth = %v, %v; want false", h, err)
	}
	rev := store.Revision(gvkApp)

	if err := store.Apply(newRIC("z", scripts{interpreter.OperationInterpretHealth: healthIs("true")})); err != nil {
		t.Fatal(err)
	}
	c, _ = store.Lookup(gvkApp)
	if h, err := c.InterpretHealth(app(nil, nil)); err != nil || !h {
		t.Errorf("InterpretHealth with a user customization = %v, %v; want the user's true", h, err)
	}
	if n, _, err := c.GetReplicas(app(nil, nil)); err != nil || n != 7 {
		t.Errorf("GetReplicas the user does not script = %v, %v; want the built-in's 7", n, err)
	}
	if store.Revision(gvkApp) == rev {
		t.Error("the revision did not change when a user customization came")
	}

	// A user customization named like the built-in neither replaces nor removes it.
	if err := store.Apply(newRIC("a", scripts{interpreter.OperationGetReplicas: replicasAre(2)})); err != nil {
		t.Fatal(err)
	}
	c, _ = store.Lookup(gvkApp)
	if n, _, err := c.GetReplicas(app(nil, nil)); err != nil || n != 2 {
		t.Errorf("GetReplicas = %v, %v; want the user's 2", n, err)
	}
	store.Remove("a")
	store.Remove("z")
	c, ok = store.Lookup(gvkApp)
	if !ok {
		t.Fatal("removing the user's customizations removed the built-in")
	}
	if n, _, err := c.GetReplicas(app(nil, nil)); err != nil || n != 7 {
		t.Errorf("GetReplicas after the user's went = %v, %v; want the built-in's 7", n, err)
	}
	if h, _ := c.InterpretHealth(app(nil, nil)); h {
		t.Error("InterpretHealth after the user's went is not the built-in's")
	}
	if store.Revision(gvkApp) != rev {
		t.Error("the revision is not the built-in's again")
	}

	// A built-in that does not compile is an error, and not in use.
	if err := store.ApplyBuiltin(newRIC("a", scripts{interpreter.OperationGetReplicas: "function GetReplicas(obj) return end end"})); err == nil {
		t.Error("ApplyBuiltin of a broken script succeeded")
	}
	if _, ok := store.Lookup(gvkApp); ok {
		t.Error("a built-in that does not compile is in use")
	}
}
