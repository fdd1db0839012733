package customization

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	lua "github.com/yuin/gopher-lua"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// The operations: arguments to Lua, results back, checked.

// GetReplicas runs GetReplicas(desiredObj), which returns the replicas (a whole number in
// 0..2^31-1) and what one replica needs: nil, or a table shaped as ReplicaRequirements
// (unknown fields are errors; namespace defaults to the object's).
func (k *kindCustomization) GetReplicas(obj *unstructured.Unstructured) (replicas int32, req *workv1alpha2.ReplicaRequirements, err error) {
	err = k.run(interpreter.OperationGetReplicas, obj, func(v *vm, s *script) error {
		rets, err := v.callWith(s, 2, obj.Object)
		if err != nil {
			return err
		}
		n, ok := rets[0].(lua.LNumber)
		if !ok {
			return fmt.Errorf("the replicas returned are a %s, not a number", rets[0].Type().String())
		}
		if n < 0 || n > math.MaxInt32 || n != lua.LNumber(math.Trunc(float64(n))) {
			return fmt.Errorf("the replicas returned, %v, are not a whole number in [0, %d]", float64(n), math.MaxInt32)
		}
		replicas = int32(n)
		switch r := rets[1].(type) {
		case *lua.LNilType:
			return nil
		case *lua.LTable:
			x, err := v.fromLua(r)
			if err != nil {
				return fmt.Errorf("requirement: %w", err)
			}
			req = &workv1alpha2.ReplicaRequirements{}
			if err := decodeStrict(x, req); err != nil {
				return fmt.Errorf("requirement: %w", err)
			}
			if req.Namespace == "" {
				req.Namespace = obj.GetNamespace()
			}
			return nil
		}
		return fmt.Errorf("the requirement returned is a %s, not a table or nil", rets[1].Type().String())
	})
	if err != nil {
		return 0, nil, err
	}
	return replicas, req, nil
}

// ReviseReplica runs ReviseReplica(desiredObj, desiredReplica), which returns the object.
func (k *kindCustomization) ReviseReplica(obj *unstructured.Unstructured, replicas int64) (out *unstructured.Unstructured, err error) {
	err = k.run(interpreter.OperationReviseReplica, obj, func(v *vm, s *script) error {
		rets, err := v.callWith(s, 1, obj.Object, replicas)
		if err != nil {
			return err
		}
		out, err = v.object(rets[0], obj, obj.Object)
		return err
	})
	return out, err
}

// Retain runs Retain(desiredObj, observedObj), which returns the object to apply.
func (k *kindCustomization) Retain(desired, observed *unstructured.Unstructured) (out *unstructured.Unstructured, err error) {
	err = k.run(interpreter.OperationRetain, desired, func(v *vm, s *script) error {
		var observedObj any
		if observed != nil {
			observedObj = observed.Object
		}
		rets, err := v.callWith(s, 1, desired.Object, observedObj)
		if err != nil {
			return err
		}
		out, err = v.object(rets[0], desired, desired.Object, observedObj)
		return err
	})
	return out, err
}

// ReflectStatus runs ReflectStatus(observedObj), which returns the status to collect: an
// object, or nil for none.
func (k *kindCustomization) ReflectStatus(observed *unstructured.Unstructured) (status *runtime.RawExtension, err error) {
	err = k.run(interpreter.OperationReflectStatus, observed, func(v *vm, s *script) error {
		rets, err := v.callWith(s, 1, observed.Object)
		if err != nil {
			return err
		}
		if rets[0] == lua.LNil {
			return nil
		}
		m, err := v.objectValue(rets[0], "the status returned")
		if err != nil {
			return err
		}
		raw, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("encoding the status: %w", err)
		}
		status = &runtime.RawExtension{Raw: raw}
		return nil
	})
	return status, err
}

// AggregateStatus runs AggregateStatus(desiredObj, statusItems), statusItems being a list
// of {clusterName, status, applied, appliedMessage, health}, or nil when no member has
// reported yet (as Karmada passes it: scripts test statusItems == nil), and returns the
// status of the object it returns (nil when it has none).
func (k *kindCustomization) AggregateStatus(template *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem) (status map[string]any, err error) {
	err = k.run(interpreter.OperationAggregateStatus, template, func(v *vm, s *script) error {
		var list []any // nil, not an empty table, when there are no items
		if len(items) > 0 {
			list = make([]any, len(items))
		}
		for i, item := range items {
			e := map[string]any{"clusterName": item.ClusterName, "applied": item.Applied, "health": string(item.Health)}
			if item.AppliedMessage != "" {
				e["appliedMessage"] = item.AppliedMessage
			}
			if item.Status != nil && len(item.Status.Raw) > 0 {
				var st any
				if err := json.Unmarshal(item.Status.Raw, &st); err != nil {
					return fmt.Errorf("the status of cluster %s: %w", item.ClusterName, err)
				}
				e["status"] = st
			}
			list[i] = e
		}
		var statusItems any
		if list != nil {
			statusItems = list
		}
		rets, err := v.callWith(s, 1, template.Object, statusItems)
		if err != nil {
			return err
		}
		m, err := v.objectValue(rets[0], "the object returned")
		if err != nil {
			return err
		}
		switch st := m["status"].(type) {
		case nil:
		case map[string]any:
			status = st
		default:
			return fmt.Errorf("the status of the object returned is a %T, not an object", st)
		}
		return nil
	})
	return status, err
}

// InterpretHealth runs InterpretHealth(observedObj), which returns true when healthy; false
// and nil mean unhealthy, anything else is an error.
func (k *kindCustomization) InterpretHealth(observed *unstructured.Unstructured) (healthy bool, err error) {
	err = k.run(interpreter.OperationInterpretHealth, observed, func(v *vm, s *script) error {
		rets, err := v.callWith(s, 1, observed.Object)
		if err != nil {
			return err
		}
		switch r := rets[0].(type) {
		case lua.LBool:
			healthy = bool(r)
		case *lua.LNilType:
		default:
			return fmt.Errorf("the health returned is a %s, not a boolean", r.Type().String())
		}
		return nil
	})
	return healthy, err
}

// GetDependencies runs GetDependencies(desiredObj), which returns a list of {apiVersion,
// kind, namespace, name, labelSelector}: apiVersion and kind are required, and exactly one
// of name and labelSelector; namespace defaults to the object's. nil means none.
func (k *kindCustomization) GetDependencies(obj *unstructured.Unstructured) (deps []configv1alpha1.DependentObjectReference, err error) {
	err = k.run(interpreter.OperationInterpretDependency, obj, func(v *vm, s *script) error {
		rets, err := v.callWith(s, 1, obj.Object)
		if err != nil {
			return err
		}
		if rets[0] == lua.LNil {
			return nil
		}
		if _, ok := rets[0].(*lua.LTable); !ok {
			return fmt.Errorf("the dependencies returned are a %s, not a list", rets[0].Type().String())
		}
		x, err := v.fromLua(rets[0])
		if err != nil {
			return err
		}
		var list []any
		switch t := x.(type) {
		case []any:
			list = t
		case map[string]any:
			if len(t) > 0 {
				return errors.New("the dependencies returned are an object, not a list")
			}
		}
		seen := map[string]bool{}
		for i, e := range list {
			d, err := dependency(e, obj.GetNamespace())
			if err != nil {
				return fmt.Errorf("dependency %d%s: %w", i+1, describeEntry(e), err)
			}
			key, _ := json.Marshal(d)
			if !seen[string(key)] {
				seen[string(key)] = true
				deps = append(deps, d)
			}
		}
		return nil
	})
	return deps, err
}

// GetComponents runs GetComponents(desiredObj), which returns a list of components
// {name, replicas, replicaRequirements}: name a non-empty string, replicas a whole number in
// 0..2^31-1, replicaRequirements nil or a table shaped as a component's requirements
// (nodeClaim, resourceRequest, priorityClassName; the namespace kube.accuratePodRequirements
// adds is dropped, as Karmada drops it). Unknown fields are errors, and so are names used
// twice and more than 32 components.
func (k *kindCustomization) GetComponents(obj *unstructured.Unstructured) (components []workv1alpha2.Component, err error) {
	err = k.run(interpreter.OperationGetComponents, obj, func(v *vm, s *script) error {
		rets, err := v.callWith(s, 1, obj.Object)
		if err != nil {
			return err
		}
		if _, ok := rets[0].(*lua.LTable); !ok {
			return fmt.Errorf("the components returned are a %s, not a list", rets[0].Type().String())
		}
		x, err := v.fromLua(rets[0])
		if err != nil {
			return err
		}
		var list []any
		switch t := x.(type) {
		case []any:
			list = t
		case map[string]any:
			if len(t) > 0 {
				return errors.New("the components returned are an object, not a list")
			}
		}
		if len(list) > interpreter.MaxComponents {
			return fmt.Errorf("%d components returned, more than %d", len(list), interpreter.MaxComponents)
		}
		components = make([]workv1alpha2.Component, 0, len(list))
		for i, e := range list {
			c, err := component(e)
			if err != nil {
				name := ""
				if m, ok := e.(map[string]any); ok {
					if n, ok := m["name"].(string); ok {
						name = fmt.Sprintf(" (%s)", n)
					}
				}
				return fmt.Errorf("component %d%s: %w", i+1, name, err)
			}
			components = append(components, c)
		}
		return interpreter.CheckComponents(components)
	})
	if err != nil {
		return nil, err
	}
	return components, nil
}

func component(e any) (workv1alpha2.Component, error) {
	var c workv1alpha2.Component
	m, ok := e.(map[string]any)
	if !ok {
		return c, fmt.Errorf("is a %T, not a table {name, replicas, replicaRequirements}", e)
	}
	for k := range m {
		switch k {
		case "name", "replicas", "replicaRequirements":
		default:
			return c, fmt.Errorf("unknown field %q (a component has name, replicas and replicaRequirements)", k)
		}
	}
	name, ok := m["name"].(string)
	if !ok {
		return c, fmt.Errorf("name is a %s, not a string", typeName(m["name"]))
	}
	c.Name = name
	switch n := m["replicas"].(type) {
	case int64:
		if n < 0 || n > math.MaxInt32 {
			return c, fmt.Errorf("replicas %d are not in [0, %d]", n, math.MaxInt32)
		}
		c.Replicas = int32(n)
	case float64:
		return c, fmt.Errorf("replicas %v are not a whole number", n)
	default:
		return c, fmt.Errorf("replicas are a %s, not a number", typeName(m["replicas"]))
	}
	switch r := m["replicaRequirements"].(type) {
	case nil:
	case map[string]any:
		delete(r, "namespace") // kube.accuratePodRequirements adds it; a component has none
		c.ReplicaRequirements = &workv1alpha2.ComponentReplicaRequirements{}
		if err := decodeStrict(r, c.ReplicaRequirements); err != nil {
			return c, fmt.Errorf("replicaRequirements: %w", err)
		}
	default:
		return c, fmt.Errorf("replicaRequirements are a %s, not a table", typeName(r))
	}
	return c, nil
}

// typeName names the Lua type of a converted value, for errors.
func typeName(x any) string {
	switch x.(type) {
	case nil:
		return "nil"
	case string:
		return "string"
	case bool:
		return "boolean"
	case int64, float64:
		return "number"
	}
	return "table"
}

func dependency(e any, namespace string) (configv1alpha1.DependentObjectReference, error) {
	var d configv1alpha1.DependentObjectReference
	m, ok := e.(map[string]any)
	if !ok {
		return d, fmt.Errorf("is a %T, not a table {apiVersion, kind, namespace, name, labelSelector}", e)
	}
	if err := decodeStrict(m, &d); err != nil {
		return d, err
	}
	switch {
	case d.APIVersion == "":
		return d, errors.New("apiVersion is required")
	case d.Kind == "":
		return d, errors.New("kind is required")
	case d.Name == "" && d.LabelSelector == nil:
		return d, errors.New("one of name and labelSelector is required")
	case d.Name != "" && d.LabelSelector != nil:
		return d, errors.New("name and labelSelector are mutually exclusive")
	}
	if d.LabelSelector != nil {
		if _, err := metav1.LabelSelectorAsSelector(d.LabelSelector); err != nil {
			return d, fmt.Errorf("labelSelector: %w", err)
		}
	}
	if _, set := m["namespace"]; !set {
		d.Namespace = namespace
	}
	return d, nil
}

func describeEntry(e any) string {
	m, ok := e.(map[string]any)
	if !ok {
		return ""
	}
	s := fmt.Sprintf(" (%v/%v", m["apiVersion"], m["kind"])
	if n, ok := m["name"].(string); ok {
		s += " " + n
	}
	return s + ")"
}

// decodeStrict decodes a converted Lua value into a typed result through JSON, unknown
// fields being errors (a misspelt field would otherwise be silently dropped).
func decodeStrict(x any, into any) error {
	raw, err := json.Marshal(x)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(into)
}

// callWith converts args to Lua and calls the script's function.
func (v *vm) callWith(s *script, nret int, args ...any) ([]lua.LValue, error) {
	largs := make([]lua.LValue, len(args))
	for i, a := range args {
		lv, err := v.toLua(a)
		if err != nil {
			return nil, fmt.Errorf("argument %d: %w", i+1, err)
		}
		largs[i] = lv
	}
	return v.call(s, largs, nret)
}

// objectValue converts a result that must be a table holding an object; refs are the
// call's objects (Karmada's references for empty tables, see convert.go).
func (v *vm) objectValue(lv lua.LValue, what string, refs ...any) (map[string]any, error) {
	if _, ok := lv.(*lua.LTable); !ok {
		return nil, fmt.Errorf("%s is a %s, not a table", what, lv.Type().String())
	}
	x, err := v.fromLua(lv, refs...)
	if err != nil {
		return nil, err
	}
	switch m := x.(type) {
	case map[string]any:
		return m, nil
	case []any:
		if len(m) == 0 {
			return map[string]any{}, nil
		}
	}
	return nil, fmt.Errorf("%s is a list, not an object", what)
}

// object converts a result that must be the object given, revised: a script may change it
// but not make it another object, so apiVersion, kind, namespace and name must stay.
func (v *vm) object(lv lua.LValue, in *unstructured.Unstructured, refs ...any) (*unstructured.Unstructured, error) {
	m, err := v.objectValue(lv, "the object returned", refs...)
	if err != nil {
		return nil, err
	}
	out := &unstructured.Unstructured{Object: m}
	for _, f := range []struct {
		name     string
		got, was string
	}{
		{"apiVersion", str(m["apiVersion"]), in.GetAPIVersion()},
		{"kind", str(m["kind"]), in.GetKind()},
		{"metadata.namespace", str(nested(m, "metadata", "namespace")), in.GetNamespace()},
		{"metadata.name", str(nested(m, "metadata", "name")), in.GetName()},
	} {
		if f.got != f.was {
			return nil, fmt.Errorf("the object returned has %s %q, not %q: a script may not make it another object", f.name, f.got, f.was)
		}
	}
	return out, nil
}

func str(x any) string {
	s, _ := x.(string)
	return s
}

func nested(m map[string]any, path ...string) any {
	var x any = m
	for _, p := range path {
		mm, ok := x.(map[string]any)
		if !ok {
			return nil
		}
		x = mm[p]
	}
	return x
}
