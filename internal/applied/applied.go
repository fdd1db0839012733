// Package applied tells, without writing, whether a server-side apply would change an
// object: the object itself says what its field manager last applied (its managedFields),
// so a manager that restarted, and remembers nothing, can tell an object that is as it last
// applied it from one someone changed since (drift: the fields they changed are theirs now,
// no longer the manager's) without applying again.
package applied

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"github.com/flotilla-io/flotilla/api/wellknown"
)

var (
	// builtin knows the schema of every built-in kind (its lists' merge keys);
	// deduced, for any other kind, takes every list as atomic.
	builtin = applyconfigurations.NewTypeConverter(clientgoscheme.Scheme)
	deduced = managedfields.NewDeducedTypeConverter()
)

// untracked are the fields server-side apply never records as anyone's (apiVersion and kind
// neither, but desired keeps them to be typed, and they are the same in both).
var untracked = [][]string{
	{"metadata", "name"}, {"metadata", "namespace"}, {"metadata", "creationTimestamp"},
	{"metadata", "uid"}, {"metadata", "resourceVersion"}, {"metadata", "generation"},
	{"metadata", "managedFields"}, {"metadata", "selfLink"}, {"metadata", "deletionTimestamp"},
	{"metadata", "deletionGracePeriodSeconds"},
}

// Unchanged reports whether applying desired (an apply configuration as unstructured data)
// as manager, to the main resource, would leave live (read with its managedFields) as it is:
// manager's Apply entry is of desired's apiVersion, it owns exactly the fields desired sets,
// and they hold desired's values. Anything it cannot tell (no entry, another
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
	tc := typeConverter(live.GroupVersionKind())
	liveTyped, err := tc.ObjectToTyped(live, typed.AllowDuplicates)
	if err != nil {
		return false
	}
	have := liveTyped.ExtractItems(owned.Leaves())
	haveMap, ok := have.AsValue().Unstructured().(map[string]any)
	if !ok {
		return false
	}
	want, wantSet, err := fields(tc, desired, haveMap)
	if err != nil {
		return false
	}
	if !wantSet.Leaves().Equals(owned.Leaves()) {
		return false
	}
	// And they hold the values desired. Only a field owned whole (an atomic map or list)
	// may hold more than desired: the defaults the apiserver filled in at the apply.
	prune(want.Object)
	prune(haveMap)
	haveMap["apiVersion"], haveMap["kind"] = live.GetAPIVersion(), live.GetKind()
	return covers(haveMap, want.Object)
}

// fields returns desired as an apply of it is compared, without the fields no one owns, and
// the fields an apply of it would own. have is the live object's map: desired's status is
// left out when have has none (a kind with a status subresource: an apply of the main
// resource ignores status). have's untracked fields are removed too.
func fields(tc managedfields.TypeConverter, desired *unstructured.Unstructured, have map[string]any) (*unstructured.Unstructured, *fieldpath.Set, error) {
	want := desired.DeepCopy()
	for _, f := range untracked {
		unstructured.RemoveNestedField(want.Object, f...)
		unstructured.RemoveNestedField(have, f...)
	}
	if _, ok := have["status"]; !ok {
		delete(want.Object, "status")
	}
	if m, ok := want.Object["metadata"].(map[string]any); ok && len(m) == 0 {
		delete(want.Object, "metadata") // it held only the name
	}
	wantTyped, err := tc.ObjectToTyped(want)
	if err != nil {
		return nil, nil, err
	}
	wantSet, err := wantTyped.ToFieldSet()
	if err != nil {
		return nil, nil, err
	}
	return want, wantSet.Difference(typeMeta), nil
}

// typeConverter is the schema a kind's objects are typed with.
func typeConverter(gvk schema.GroupVersionKind) managedfields.TypeConverter {
	if clientgoscheme.Scheme.Recognizes(gvk) {
		return builtin
	}
	return deduced
}

// typeMeta are the fields every object has and no one owns.
var typeMeta = fieldpath.NewSet(fieldpath.MakePathOrDie("apiVersion"), fieldpath.MakePathOrDie("kind"))

// covers reports whether have holds want: the same scalars (numbers compared as numbers), the
// same lists item by item, and every key of want's maps (have may hold more).
func covers(have, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			if hv, ok := h[k]; !ok || !covers(hv, v) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !covers(h[i], w[i]) {
				return false
			}
		}
		return true
	default:
		if hn, ok := number(have); ok {
			wn, ok := number(want)
			return ok && hn == wn
		}
		return have == want
	}
}

// number is a JSON number as a float64.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
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

// Digest returns the digest of desired, an apply configuration, that
// wellknown.AppliedDigestAnnotation carries on the object applied: of all desired holds but
// that annotation, whatever the order of its maps' keys. "" when desired cannot be encoded.
func Digest(desired *unstructured.Unstructured) string {
	obj := maps.Clone(desired.Object)
	if md, ok := obj["metadata"].(map[string]any); ok {
		md = maps.Clone(md)
		if ann, ok := md["annotations"].(map[string]any); ok {
			ann = maps.Clone(ann)
			delete(ann, wellknown.AppliedDigestAnnotation)
			if len(ann) == 0 {
				delete(md, "annotations")
			} else {
				md["annotations"] = ann
			}
		}
		obj["metadata"] = md
	}
	return digest(obj)
}

// OwnedDigest returns the digest of the fields an entry of managedFields owns: its fieldsV1
// as unstructured data (a member cache's transform reads it so), and its apiVersion.
func OwnedDigest(apiVersion string, fieldsV1 any) string {
	return digest([]any{apiVersion, fieldsV1})
}

// digest is the hex of the first half of the SHA-256 of v's JSON, whose maps encoding/json
// writes in the order of their keys; "" when v cannot be encoded.
func digest(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// UnchangedCached is Unchanged for a member object as the member cache holds it: without
// managedFields, but with owned, the OwnedDigest of manager's Apply entry (cachetrim keeps
// it). cached is as manager last applied desired when its wellknown.AppliedDigestAnnotation
// is desired's Digest (what was applied then is desired, values included) and manager owns
// exactly the fields an apply of desired would own, at its apiVersion: a field someone
// changed or removed since would be theirs, or no one's, no longer manager's. Anything it
// cannot tell (no digest either side, a desired status, a value it cannot type) is a change;
// the caller then reads the object whole and asks Unchanged.
func UnchangedCached(cached *unstructured.Unstructured, owned string, desired *unstructured.Unstructured) bool {
	if cached == nil || desired == nil || owned == "" || cached.GetAPIVersion() != desired.GetAPIVersion() || cached.GetKind() != desired.GetKind() {
		return false
	}
	if _, ok := desired.Object["status"]; ok {
		return false
	}
	want := Digest(desired)
	if want == "" || cached.GetAnnotations()[wellknown.AppliedDigestAnnotation] != want {
		return false
	}
	_, set, err := fields(typeConverter(desired.GroupVersionKind()), desired, map[string]any{})
	if err != nil {
		return false
	}
	raw, err := set.ToJSON()
	if err != nil {
		return false
	}
	var fieldsV1 any
	if err := json.Unmarshal(raw, &fieldsV1); err != nil {
		return false
	}
	return OwnedDigest(desired.GetAPIVersion(), fieldsV1) == owned
}
