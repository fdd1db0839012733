// Package cachetrim holds the cache transforms that keep the manager's informer caches to
// what its reconcilers read.
//
// Member caches hold every propagated object as unstructured data (a map per JSON object),
// which costs several times the object's JSON size. The readers of member objects are the
// execution controller (metadata to tell whether an object is ours and up to date, the
// fields Retain keeps: a Service's clusterIP and ports, a claim's volumeName, spec.replicas),
// the Work status controller (status, metadata.generation and the spec fields health reads:
// spec.replicas, a StatefulSet's spec.updateStrategy, a Service's spec.type) and the
// multi-cluster service controller (Services, EndpointSlices, ServiceExports and
// ServiceImports, left whole). None of them reads the pod template of a built-in workload,
// the largest part of its spec, so MemberObject drops it. A customization (Lua) may read any
// field: readers of a trimmed kind that a customization interprets read the member instead
// (see [Trimmed] and internal/member's Options.Whole).
package cachetrim

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// dropped are the fields MemberObject removes, by kind: the pod templates of the built-in
// workloads (and a StatefulSet's claim templates, a CronJob's Job template).
var dropped = map[schema.GroupKind][][]string{
	{Group: "apps", Kind: "Deployment"}:  {{"spec", "template"}},
	{Group: "apps", Kind: "ReplicaSet"}:  {{"spec", "template"}},
	{Group: "apps", Kind: "DaemonSet"}:   {{"spec", "template"}},
	{Group: "apps", Kind: "StatefulSet"}: {{"spec", "template"}, {"spec", "volumeClaimTemplates"}},
	{Group: "batch", Kind: "Job"}:        {{"spec", "template"}},
	{Group: "batch", Kind: "CronJob"}:    {{"spec", "jobTemplate"}},
}

// Trimmed reports whether MemberObject drops fields of objects of the kind.
func Trimmed(gk schema.GroupKind) bool {
	_, ok := dropped[gk]
	return ok
}

var stripManagedFields = cache.TransformStripManagedFields()

// MemberObject is the member caches' transform: it drops managedFields from every object
// and the fields listed in dropped from the built-in workloads. It changes the object it is
// given (the informer's own copy, fresh from the watch) and returns it.
func MemberObject(in any) (any, error) {
	out, err := stripManagedFields(in)
	if err != nil {
		return out, err
	}
	u, ok := out.(*unstructured.Unstructured)
	if !ok {
		return out, nil
	}
	for _, path := range dropped[u.GroupVersionKind().GroupKind()] {
		unstructured.RemoveNestedField(u.Object, path...)
	}
	return u, nil
}
