// Package cachetrim holds the cache transforms that keep the manager's informer caches to
// what its reconcilers read, with one copy of each string their objects repeat.
//
// Member caches hold every propagated object as unstructured data (a map per JSON object),
// which costs several times the object's JSON size. The readers of member objects are the
// execution controller (metadata to tell whether an object is ours and up to date, the
// fields Retain keeps: a Service's clusterIP and ports, a claim's volumeName, spec.replicas),
// the Work status controller (status, metadata.generation and the spec fields health reads:
// spec.replicas, a StatefulSet's spec.updateStrategy, a Service's spec.type) and the
// multi-cluster service controller (Services, EndpointSlices, ServiceExports and
// ServiceImports, left whole). Of a built-in workload's spec they read only scalars and a
// StatefulSet's updateStrategy, so MemberObject drops the rest of its maps and lists: the pod
// template, the largest part, and the selector, the strategy, claim templates and the like.
// A customization (Lua) may read any field: readers of a trimmed kind that a customization
// interprets read the member instead (see [Trimmed] and internal/member's Options.Whole).
//
// Every cache, the host's too, also keeps one copy of each string its objects repeat
// (intern.go): HostObject is the host cache's transform, MemberObject the members'.
package cachetrim

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/applied"
)

// keptSpec are, by kind, the built-in workloads whose spec MemberObject trims, and the maps
// and lists of their spec it keeps (scalars are always kept): a StatefulSet's and a
// DaemonSet's updateStrategy (health reads the StatefulSet's partition).
var keptSpec = map[schema.GroupKind][]string{
	{Group: "apps", Kind: "Deployment"}:  nil,
	{Group: "apps", Kind: "ReplicaSet"}:  nil,
	{Group: "apps", Kind: "DaemonSet"}:   {"updateStrategy"},
	{Group: "apps", Kind: "StatefulSet"}: {"updateStrategy"},
	{Group: "batch", Kind: "Job"}:        nil,
	{Group: "batch", Kind: "CronJob"}:    nil,
}

// Trimmed reports whether MemberObject drops fields of objects of the kind.
func Trimmed(gk schema.GroupKind) bool {
	_, ok := keptSpec[gk]
	return ok
}

var stripManagedFields = cache.TransformStripManagedFields()

// MemberObject is the member caches' transform: it drops managedFields from every object
// (keeping, of Flotilla's own apply, the digest of the fields it owns: see OwnedFields), and
// from the built-in workloads' spec every map and list keptSpec does not list, and makes
// canonical the strings that repeat between objects (see HostObject). It changes the object
// it is given (the informer's own copy, fresh from the watch) and returns it.
func MemberObject(in any) (any, error) {
	u, _ := in.(*unstructured.Unstructured)
	var owned string
	if u != nil {
		owned = ownedDigest(u)
	}
	out, err := stripManagedFields(in)
	if err != nil {
		return out, err
	}
	if u != nil {
		trimSpec(u)
		if owned != "" {
			u.Object[ownedKey] = str(owned)
		}
	}
	internObject(out)
	return out, nil
}

// ownedKey is where MemberObject keeps, at the top of a cached object, the digest of the
// fields Flotilla's apply owns. A slash is in no API's field names, and the cache's copies
// are never written to a member: readers read it with OwnedFields.
const ownedKey = "flotilla.io/owned-fields"

// OwnedFields returns the digest (applied.OwnedDigest) of the fields Flotilla's server-side
// apply owns of a member object read from a member cache, "" when it has no apply of
// Flotilla's. Objects of the same shape own the same fields: one copy of the digest serves
// them all.
func OwnedFields(u *unstructured.Unstructured) string {
	s, _ := u.Object[ownedKey].(string)
	return s
}

// ownedDigest returns the digest of the fields Flotilla's Apply entry of u's managedFields
// (the main resource's, not a subresource's) owns, or "".
func ownedDigest(u *unstructured.Unstructured) string {
	md, _ := u.Object["metadata"].(map[string]any)
	entries, _ := md["managedFields"].([]any)
	for _, e := range entries {
		m, _ := e.(map[string]any)
		if m["manager"] != wellknown.FieldManager || m["operation"] != string(metav1.ManagedFieldsOperationApply) {
			continue
		}
		if sub, _ := m["subresource"].(string); sub != "" {
			continue
		}
		apiVersion, _ := m["apiVersion"].(string)
		if fields, ok := m["fieldsV1"]; ok && apiVersion != "" {
			return applied.OwnedDigest(apiVersion, fields)
		}
	}
	return ""
}

// trimSpec drops from a built-in workload's spec every map and list keptSpec does not list.
func trimSpec(u *unstructured.Unstructured) {
	kept, trimmed := keptSpec[u.GroupVersionKind().GroupKind()]
	spec, ok := u.Object["spec"].(map[string]any)
	if !trimmed || !ok {
		return
	}
	for k, v := range spec {
		switch v.(type) {
		case map[string]any, []any:
			if !slices.Contains(kept, k) {
				delete(spec, k)
			}
		}
	}
}
