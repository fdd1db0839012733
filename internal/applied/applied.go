// Package applied tells, without writing, whether a server-side apply would change an
// object: the object itself says what its field manager last applied (its managedFields),
// so a manager that restarted, and remembers nothing, can tell an object that is as it last
// applied it from one someone changed since (drift: the fields they changed are theirs now,
// no longer the manager's) without applying again.
package applied

import (
	"bytes"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

var (
	// builtin knows the schema of every built-in kind (its lists' merge keys);
	// deduced, for any other kind, takes every list as atomic.
	builtin = applyconfigurations.NewTypeConverter(clientgoscheme.Scheme)
	deduced = managedfields.NewDeducedTypeConverter()
)

// untracked are the fields server-side apply never records as anyone's (apiVersion and kind
// neither, but both objects keep theirs, which are the same).
var untracked = [][]string{
	{"metadata", "name"}, {"metadata", "namespace"}, {"metadata", "creationTimestamp"},
	{"metadata", "uid"}, {"metadata", "resourceVersion"}, {"metadata", "generation"},
	{"metadata", "managedFields"}, {"metadata", "selfLink"}, {"metadata", "deletionTimestamp"},
	{"metadata", "deletionGracePeriodSeconds"},
}

// Unchanged reports whether applying desired (an apply configuration as unstructured data)
// as manager, to the main resource, would leave live (read with its managedFields) as it is:
// manager's Apply entry is of desired's apiVersion and the fields it owns hold exactly
// desired's values, no more and no fewer. Anything it cannot tell (no entry, another
// apiVersion, a value it cannot type) is a change: the caller applies, as it would have.
//
// A field someone else changed since the apply is theirs (an update takes it from the
// manager; a forced apply too), and a field they removed is no one's: either way the manager
// owns less than desired, which is a change.
func Unchanged(live, desired *unstructured.Unstructured, manager string) bool {
	if live == nil || desired == nil || live.GetAPIVersion() != desired.GetAPIVersion() || live.GetKind() != desired.GetKind() {
		return false
	}
	entry, ok := applyEntry(live.GetManagedFields(), manager)
	if !ok || entry.APIVersion != desired.GetAPIVersion() || entry.FieldsV1 == nil {
		return false
	}
	owned := &fieldpath.Set{}
	if err := owned.FromJSON(bytes.NewReader(entry.FieldsV1.Raw)); err != nil {
		return false
	}
	tc := deduced
	if clientgoscheme.Scheme.Recognizes(live.GroupVersionKind()) {
		tc = builtin
	}
	liveTyped, err := tc.ObjectToTyped(live, typed.AllowDuplicates)
	if err != nil {
		return false
	}
	have := liveTyped.ExtractItems(owned.Leaves())
	haveMap, ok := have.AsValue().Unstructured().(map[string]any)
	if !ok {
		return false
	}
	want := desired.DeepCopy()
	for _, f := range untracked {
		unstructured.RemoveNestedField(want.Object, f...)
		unstructured.RemoveNestedField(haveMap, f...)
	}
	if _, ok := haveMap["status"]; !ok {
		// A kind with a status subresource: an apply of the main resource ignores status.
		delete(want.Object, "status")
	}
	prune(want.Object)
	prune(haveMap)
	// The kind, to type the object with (Unchanged checked both are the same).
	haveMap["apiVersion"], haveMap["kind"] = live.GetAPIVersion(), live.GetKind()
	haveTyped, err := tc.ObjectToTyped(&unstructured.Unstructured{Object: haveMap}, typed.AllowDuplicates)
	if err != nil {
		return false
	}
	wantTyped, err := tc.ObjectToTyped(want)
	if err != nil {
		return false
	}
	c, err := haveTyped.Compare(wantTyped)
	return err == nil && c.IsSame()
}

// applyEntry is manager's entry for its applies of the main resource.
func applyEntry(entries []metav1.ManagedFieldsEntry, manager string) (metav1.ManagedFieldsEntry, bool) {
	for _, e := range entries {
		if e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "" {
			return e, true
		}
	}
	return metav1.ManagedFieldsEntry{}, false
}

// prune drops, recursively, the maps that are empty and the nulls: an apply of an empty map
// (a template's "strategy: {}") writes nothing to it, and the member's defaults there are
// no one's, so what an owned empty map holds is extracted as null; and an object whose only
// metadata is its name compares equal to one with no metadata at all.
func prune(obj map[string]any) {
	for k, v := range obj {
		switch v := v.(type) {
		case nil:
			delete(obj, k)
		case map[string]any:
			prune(v)
			if len(v) == 0 {
				delete(obj, k)
			}
		case []any:
			for _, item := range v {
				if m, ok := item.(map[string]any); ok {
					prune(m)
				}
			}
		}
	}
}

// ToUnstructured turns a typed apply configuration into unstructured data for Unchanged.
func ToUnstructured(applyConfiguration any) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(applyConfiguration)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}
