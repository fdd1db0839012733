package customization

import (
	"testing"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// TestInterpreterUsesTheStore: a custom kind whose size is spec.size gets its replicas from
// the script, is revised per member, and reports health, through interpreter.Interpreter.
func TestInterpreterUsesTheStore(t *testing.T) {
	var f failures
	store := NewStore(Options{OnFailure: f.record})
	if err := store.Apply(newRIC("app-size", scripts{
		interpreter.OperationGetReplicas: `
function GetReplicas(obj)
  return obj.spec.size, {resourceRequest = {cpu = obj.spec.cpu}}
end`,
		interpreter.OperationReviseReplica: `
function ReviseReplica(obj, desiredReplica)
  obj.spec.size = desiredReplica
  return obj
end`,
		interpreter.OperationInterpretHealth: `
function InterpretHealth(observedObj)
  if observedObj.status == nil then return false end
  return observedObj.status.readyMembers >= observedObj.spec.size
end`,
	})); err != nil {
		t.Fatal(err)
	}
	in := interpreter.Interpreter{Customizations: store}
	template := app(map[string]any{"size": int64(6), "cpu": "500m"}, nil)

	if !in.HasReplicas(template) {
		t.Fatal("HasReplicas = false; the script says App has replicas")
	}
	n, req, err := in.GetReplicas(template)
	if err != nil || n != 6 || req == nil || req.ResourceRequest.Cpu().String() != "500m" || req.Namespace != "ns" {
		t.Fatalf("GetReplicas = %d, %+v, %v; want 6 replicas of 500m CPU in ns", n, req, err)
	}

	// Divided 4 + 2 between two members.
	for _, share := range []int64{4, 2} {
		member, err := in.ReviseReplicas(template, share)
		if err != nil {
			t.Fatal(err)
		}
		if got := member.Object["spec"].(map[string]any)["size"]; got != share {
			t.Errorf("the member's spec.size = %v, want %d", got, share)
		}
		if template.Object["spec"].(map[string]any)["size"] != int64(6) {
			t.Fatal("ReviseReplicas changed the template")
		}
		observed := member.DeepCopy()
		observed.Object["status"] = map[string]any{"readyMembers": share}
		if h := in.Health(observed); h != workv1alpha1.ResourceHealthy {
			t.Errorf("Health with every member ready = %s", h)
		}
		observed.Object["status"] = map[string]any{"readyMembers": share - 1}
		if h := in.Health(observed); h != workv1alpha1.ResourceUnhealthy {
			t.Errorf("Health with one member missing = %s", h)
		}
	}

	// A script failing on an object: Unknown health, reported once.
	broken := template.DeepCopy()
	broken.Object["status"] = map[string]any{"readyMembers": "all"}
	if h := in.Health(broken); h != workv1alpha1.ResourceUnknownHealth {
		t.Errorf("Health when the script fails = %s", h)
	}
	if got := f.list(); len(got) != 1 || got[0].Operation != interpreter.OperationInterpretHealth || got[0].Customization != "app-size" {
		t.Errorf("failures: %+v", got)
	}

	// Operations it does not script keep the interpreter's rules.
	if deps, err := in.GetDependencies(template); err != nil || deps != nil {
		t.Errorf("GetDependencies = %v, %v; want none", deps, err)
	}

	// Without the customization, App is not divided.
	store.Remove("app-size")
	if in.HasReplicas(template) {
		t.Error("HasReplicas = true after the customization was removed")
	}
}
