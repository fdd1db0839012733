package cachetrim

import (
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

// The caches decode every object on its own, so each holds its own copy of every string in it,
// though most repeat from object to object: label and annotation keys (Karmada's are 30 to 45
// bytes), the host's id, "karmada.io/managed", a member's execution namespace, condition types,
// reasons and messages, and in unstructured objects every field name. The transforms below
// replace such strings with one canonical copy from the unique package, which frees a copy
// once no cached object holds it. On the bench's objects this takes about a quarter off a
// member object and a tenth off a Work or binding (BenchmarkCachedBytes).
//
// The cache's copies are shared with no one when a transform runs, and a reader's deep copy
// copies a string's header only, so readers see equal strings and may change their copies
// as before.

// str returns the canonical copy of s.
func str(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

// internMap makes m's keys and values canonical, in place: storing under a key equal to one
// it has replaces the map's copy of the key too (the runtime does so for string keys). A new
// map would leave the decoder's as garbage between the cached objects, which the Go heap,
// which does not move objects, cannot give back while any object near it lives.
func internMap(m map[string]string) {
	for k, v := range m {
		m[str(k)] = str(v)
	}
}

// internMetadata makes canonical the strings of o's metadata that repeat between objects:
// its namespace, labels, annotations, finalizers and owners' kinds.
func internMetadata(o metav1.Object) {
	o.SetNamespace(str(o.GetNamespace()))
	internMap(o.GetLabels())
	internMap(o.GetAnnotations())
	f := o.GetFinalizers()
	for i := range f {
		f[i] = str(f[i])
	}
	refs := o.GetOwnerReferences()
	for i := range refs {
		refs[i].APIVersion, refs[i].Kind = str(refs[i].APIVersion), str(refs[i].Kind)
	}
}

func internConditions(cs []metav1.Condition) {
	for i := range cs {
		c := &cs[i]
		c.Type, c.Reason, c.Message = str(c.Type), str(c.Reason), str(c.Message)
		c.Status = metav1.ConditionStatus(str(string(c.Status)))
	}
}

func internWork(w *workv1alpha1.Work) {
	internConditions(w.Status.Conditions)
	for i := range w.Status.ManifestStatuses {
		s := &w.Status.ManifestStatuses[i]
		id := &s.Identifier
		id.Group, id.Version, id.Kind, id.Resource, id.Namespace = str(id.Group), str(id.Version), str(id.Kind), str(id.Resource), str(id.Namespace)
		s.Health = workv1alpha1.ResourceHealth(str(string(s.Health)))
	}
}

func internBinding(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus) {
	r := &spec.Resource
	r.APIVersion, r.Kind, r.Namespace = str(r.APIVersion), str(r.Kind), str(r.Namespace)
	for i := range spec.Clusters {
		spec.Clusters[i].Name = str(spec.Clusters[i].Name)
	}
	spec.SchedulerName = str(spec.SchedulerName)
	internConditions(status.Conditions)
	for i := range status.AggregatedStatus {
		s := &status.AggregatedStatus[i]
		s.ClusterName, s.AppliedMessage = str(s.ClusterName), str(s.AppliedMessage)
		s.Health = workv1alpha1.ResourceHealth(str(string(s.Health)))
	}
}

// internObject makes canonical the repeating strings of a host object: the metadata of any
// object, and the status strings of Works and bindings.
func internObject(o any) {
	switch x := o.(type) {
	case *workv1alpha1.Work:
		internWork(x)
	case *workv1alpha2.ResourceBinding:
		internBinding(&x.Spec, &x.Status)
	case *workv1alpha2.ClusterResourceBinding:
		internBinding(&x.Spec, &x.Status)
	case *unstructured.Unstructured:
		x.Object = internTree(x.Object).(map[string]any)
		return
	}
	if m, ok := o.(metav1.Object); ok {
		internMetadata(m)
	}
}

// internTree makes canonical every key and string of unstructured content.
func internTree(v any) any {
	switch x := v.(type) {
	case map[string]any:
		// A new map, unlike internMap: trimSpec and stripManagedFields delete from the
		// decoder's maps, which keep the room they grew to (a member Deployment is 10%
		// larger interned in place).
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[str(k)] = internTree(e)
		}
		return out
	case []any:
		for i := range x {
			x[i] = internTree(x[i])
		}
		return x
	case string:
		return str(x)
	}
	return v
}

// HostObject is the host cache's transform: it drops managedFields (large under server-side
// apply, and read by no reconciler) and makes canonical the strings that repeat between
// objects. It changes the object it is given (the informer's own copy, fresh from the watch)
// and returns it.
func HostObject(in any) (any, error) {
	out, err := stripManagedFields(in)
	if err != nil {
		return out, err
	}
	internObject(out)
	return out, nil
}

// TemplateMetadata makes canonical the strings of a template's cached metadata.
func TemplateMetadata(m *metav1.PartialObjectMetadata) { internMetadata(m) }
