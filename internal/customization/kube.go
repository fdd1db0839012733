package customization

import (
	"math"
	"strconv"

	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// Karmada's kube library, as scripts get it with local kube = require("kube"):
//
//   - kube.accuratePodRequirements(podTemplate): what one replica of a pod template
//     ({metadata, spec}) needs, as a replicaResource script returns it: nodeClaim
//     (nodeSelector, tolerations, hardNodeAffinity), resourceRequest (the pod's effective
//     requests, as the interpreter counts them for Deployments), namespace (the template's
//     metadata.namespace) and priorityClassName.
//   - kube.getPodDependencies(podTemplate, namespace): the ConfigMaps, Secrets,
//     ServiceAccount and PersistentVolumeClaims the template refers to, as a list of
//     {apiVersion, kind, namespace, name}; namespace defaults to "default", as in Karmada.
//   - kube.resourceAdd(q1, q2, ...): the sum of resource quantities given as strings
//     ("100m", "1Gi") or numbers; nil counts as zero. The sum is a string ("1100m").
//   - kube.getResourceQuantity(q): the value of one quantity, given as a string or a
//     number, as a Lua number ("100m" is 0.1, "1Gi" 1073741824; approximate beyond 2^53);
//     nil is 0. A negative quantity is an error, as in Karmada.

func (v *vm) kubeAccuratePodRequirements(L *lua.LState) int {
	if L.GetTop() != 1 {
		L.RaiseError("accuratePodRequirements takes one argument, the pod template")
	}
	template := v.podTemplate(L, 1)
	namespace := ""
	if md, ok := template["metadata"].(map[string]any); ok {
		namespace, _ = md["namespace"].(string)
	}
	req, err := interpreter.PodTemplateRequirements(template, namespace)
	if err != nil {
		L.RaiseError("accuratePodRequirements: %v", err)
	}
	v.pushStruct(L, req)
	return 1
}

func (v *vm) kubeGetPodDependencies(L *lua.LState) int {
	if L.GetTop() != 2 && L.GetTop() != 1 {
		L.RaiseError("getPodDependencies takes two arguments, the pod template and the namespace")
	}
	template := v.podTemplate(L, 1)
	namespace := "default"
	switch ns := L.Get(2).(type) {
	case *lua.LNilType:
	case lua.LString:
		namespace = string(ns)
	case lua.LNumber:
		namespace = ns.String()
	default:
		L.TypeError(2, lua.LTString)
	}
	deps, err := interpreter.PodTemplateDependencies(template, namespace)
	if err != nil {
		L.RaiseError("getPodDependencies: %v", err)
	}
	list := make([]any, len(deps))
	for i, d := range deps {
		list[i] = map[string]any{"apiVersion": d.APIVersion, "kind": d.Kind, "namespace": d.Namespace, "name": d.Name}
	}
	v.push(L, list)
	return 1
}

func (v *vm) kubeResourceAdd(L *lua.LState) int {
	var sum resource.Quantity
	for i := 1; i <= L.GetTop(); i++ {
		sum.Add(quantityArg(L, i))
	}
	s := sum.String()
	v.b.charge(int64(len(s)) + costString)
	L.Push(lua.LString(s))
	return 1
}

func (v *vm) kubeGetResourceQuantity(L *lua.LState) int {
	if L.GetTop() != 1 {
		L.RaiseError("getResourceQuantity takes one argument, the quantity")
	}
	q := quantityArg(L, 1)
	f := q.AsApproximateFloat64()
	switch {
	case q.Sign() < 0:
		L.ArgError(1, "quantity "+q.String()+" is negative")
	case math.IsInf(f, 0) || math.IsNaN(f):
		L.ArgError(1, "quantity "+q.String()+" is too large")
	}
	L.Push(lua.LNumber(f))
	return 1
}

// quantityArg reads argument i, a quantity given as a string or a number; nil is zero.
func quantityArg(L *lua.LState, i int) resource.Quantity {
	var text string
	switch x := L.Get(i).(type) {
	case *lua.LNilType:
		return resource.Quantity{}
	case lua.LString:
		text = string(x)
	case lua.LNumber:
		text = strconv.FormatFloat(float64(x), 'f', -1, 64)
	default:
		L.TypeError(i, lua.LTString)
	}
	if len(text) > 128 {
		L.ArgError(i, "a quantity is at most 128 characters long")
	}
	q, err := resource.ParseQuantity(text)
	if err != nil {
		L.ArgError(i, "quantity "+strconv.Quote(text)+": "+err.Error())
	}
	return q
}

// podTemplate reads argument n, a pod template table.
func (v *vm) podTemplate(L *lua.LState, n int) map[string]any {
	c := fromLuaConverter{v: v, budget: v.lim.maxElements}
	x, _, err := c.convert(L.CheckTable(n), "", "", 0)
	if err != nil {
		L.ArgError(n, err.Error())
	}
	v.b.work(v.lim.maxElements - c.budget)
	template, ok := x.(map[string]any)
	if !ok {
		L.ArgError(n, "a pod template is an object {metadata, spec}")
	}
	return template
}

// pushStruct pushes a Go struct as Lua, the way JSON sees it.
func (v *vm) pushStruct(L *lua.LState, x any) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(x)
	if err != nil {
		L.RaiseError("%v", err)
	}
	v.push(L, u)
}

// push pushes a Go value made by a helper, charged to the call.
func (v *vm) push(L *lua.LState, x any) {
	c := toLuaConverter{v: v, budget: v.lim.maxElements}
	lv, err := c.convert(x, 0)
	if err != nil {
		L.RaiseError("%v", err)
	}
	v.b.charge(int64(v.lim.maxElements-c.budget) * costField)
	L.Push(lv)
}
