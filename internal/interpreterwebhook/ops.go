package interpreterwebhook

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

var _ interpreter.Customization = (*kindHooks)(nil)

func (k *kindHooks) must(op interpreter.Operation) (*Hook, configv1alpha1.InterpreterOperation, error) {
	h := k.hook(op)
	p, ok := ProtocolOperation(op)
	if h == nil || !ok {
		return nil, "", fmt.Errorf("no interpreter webhook interprets %s of %s", op, k.gvk)
	}
	return h, p, nil
}

// GetReplicas asks InterpretReplica.
func (k *kindHooks) GetReplicas(obj *unstructured.Unstructured) (int32, *workv1alpha2.ReplicaRequirements, error) {
	h, p, err := k.must(interpreter.OperationGetReplicas)
	if err != nil {
		return 0, nil, err
	}
	r, err := h.call(request{op: p, obj: obj})
	if err != nil {
		return 0, nil, err
	}
	return *r.Replicas, r.ReplicaRequirements, nil
}

// ReviseReplica asks ReviseReplica and applies the patch.
func (k *kindHooks) ReviseReplica(obj *unstructured.Unstructured, replicas int64) (*unstructured.Unstructured, error) {
	h, p, err := k.must(interpreter.OperationReviseReplica)
	if err != nil {
		return nil, err
	}
	if replicas < 0 || replicas > 1<<31-1 {
		return nil, fmt.Errorf("replicas %d out of range", replicas)
	}
	n := int32(replicas)
	return h.patched(request{op: p, obj: obj, replicas: &n})
}

// Retain asks Retain (object: desired, observedObject: observed) and applies the patch to
// desired.
func (k *kindHooks) Retain(desired, observed *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	h, p, err := k.must(interpreter.OperationRetain)
	if err != nil {
		return nil, err
	}
	if observed == nil {
		return nil, errors.New("no observed object")
	}
	return h.patched(request{op: p, obj: desired, observed: observed})
}

// patched calls the webhook and applies its patch to the request's object.
func (h *Hook) patched(r request) (*unstructured.Unstructured, error) {
	resp, err := h.call(r)
	if err != nil {
		return nil, err
	}
	out, err := applyPatch(r.obj, resp)
	if err != nil {
		return nil, h.fail(r, err)
	}
	return out, nil
}

// fail reports an error found after the call (a patch that does not apply).
func (h *Hook) fail(r request, err error) error {
	desc := describe(r.obj)
	err = fmt.Errorf("interpreter webhook %q (ResourceInterpreterWebhookConfiguration %q), %s of %s: %w", h.Name, h.Configuration, r.op, desc, err)
	if f := h.registry.o.OnFailure; f != nil {
		f(Failure{Configuration: h.Configuration, Webhook: h.Name, Operation: r.op, Object: desc, Err: err})
	}
	return err
}

// ReflectStatus asks InterpretStatus; a null rawStatus reflects nothing.
func (k *kindHooks) ReflectStatus(observed *unstructured.Unstructured) (*runtime.RawExtension, error) {
	h, p, err := k.must(interpreter.OperationReflectStatus)
	if err != nil {
		return nil, err
	}
	r, err := h.call(request{op: p, obj: observed})
	if err != nil {
		return nil, err
	}
	if len(r.RawStatus.Raw) == 0 || string(r.RawStatus.Raw) == "null" {
		return nil, nil
	}
	return r.RawStatus, nil
}

// AggregateStatus asks AggregateStatus and applies the patch to the template; the patched
// template's status is the new status.
func (k *kindHooks) AggregateStatus(template *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem) (map[string]any, error) {
	h, p, err := k.must(interpreter.OperationAggregateStatus)
	if err != nil {
		return nil, err
	}
	r := request{op: p, obj: template, items: items}
	out, err := h.patched(r)
	if err != nil {
		return nil, err
	}
	switch st := out.Object["status"].(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return st, nil
	default:
		return nil, h.fail(r, fmt.Errorf("the patched object's status is a %T, not an object", st))
	}
}

// InterpretHealth asks InterpretHealth.
func (k *kindHooks) InterpretHealth(observed *unstructured.Unstructured) (bool, error) {
	h, p, err := k.must(interpreter.OperationInterpretHealth)
	if err != nil {
		return false, err
	}
	r, err := h.call(request{op: p, obj: observed})
	if err != nil {
		return false, err
	}
	return *r.Healthy, nil
}

// GetDependencies asks InterpretDependency.
func (k *kindHooks) GetDependencies(obj *unstructured.Unstructured) ([]configv1alpha1.DependentObjectReference, error) {
	h, p, err := k.must(interpreter.OperationInterpretDependency)
	if err != nil {
		return nil, err
	}
	r, err := h.call(request{op: p, obj: obj})
	if err != nil {
		return nil, err
	}
	return r.Dependencies, nil
}

// GetComponents is not asked of webhooks (InterpretComponent is not called yet); Has says so.
func (k *kindHooks) GetComponents(*unstructured.Unstructured) ([]workv1alpha2.Component, error) {
	return nil, fmt.Errorf("interpreter webhooks are not asked for the components of %s", k.gvk)
}
