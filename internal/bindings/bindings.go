// Package bindings gives ResourceBinding and ClusterResourceBinding one face, so that the
// controllers that handle both are written once, and holds the names and labels they share.
package bindings

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

// Spec returns the binding's spec; nil for other objects.
func Spec(o client.Object) *workv1alpha2.ResourceBindingSpec {
	switch b := o.(type) {
	case *workv1alpha2.ResourceBinding:
		return &b.Spec
	case *workv1alpha2.ClusterResourceBinding:
		return &b.Spec
	}
	return nil
}

// Status returns the binding's status; nil for other objects.
func Status(o client.Object) *workv1alpha2.ResourceBindingStatus {
	switch b := o.(type) {
	case *workv1alpha2.ResourceBinding:
		return &b.Status
	case *workv1alpha2.ClusterResourceBinding:
		return &b.Status
	}
	return nil
}

// Kind returns "ResourceBinding" or "ClusterResourceBinding".
func Kind(o client.Object) string {
	if _, ok := o.(*workv1alpha2.ClusterResourceBinding); ok {
		return "ClusterResourceBinding"
	}
	return "ResourceBinding"
}

// NewList returns an empty list of o's kind of binding.
func NewList(o client.Object) client.ObjectList {
	if _, ok := o.(*workv1alpha2.ClusterResourceBinding); ok {
		return &workv1alpha2.ClusterResourceBindingList{}
	}
	return &workv1alpha2.ResourceBindingList{}
}

// PermanentIDLabel is the label that holds the binding's permanent id.
func PermanentIDLabel(o client.Object) string {
	if _, ok := o.(*workv1alpha2.ClusterResourceBinding); ok {
		return wellknown.ClusterResourceBindingPermanentIDLabel
	}
	return wellknown.ResourceBindingPermanentIDLabel
}

// PermanentID returns the binding's permanent id, falling back to its UID.
func PermanentID(o client.Object) string {
	if id := o.GetLabels()[PermanentIDLabel(o)]; id != "" {
		return id
	}
	return string(o.GetUID())
}

// WorkName is the name of the Work that carries a template to a cluster:
// <template name>-<hash of kind/namespace/name>, unique within an execution namespace.
func WorkName(kind, namespace, name string) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%s/%s", strings.ToLower(kind), namespace, name)
	suffix := fmt.Sprintf("-%08x", h.Sum32())
	if len(name)+len(suffix) > 253 {
		name = name[:253-len(suffix)]
	}
	return name + suffix
}

// FromWork returns the key of the binding a Work belongs to, from its annotations; ok is
// false for Works not made by a binding.
func FromWork(o client.Object) (key types.NamespacedName, cluster bool, ok bool) {
	a := o.GetAnnotations()
	if n := a[wellknown.ClusterResourceBindingNameAnnotation]; n != "" {
		return types.NamespacedName{Name: n}, true, true
	}
	if n := a[wellknown.ResourceBindingNameAnnotation]; n != "" {
		return types.NamespacedName{Namespace: a[wellknown.ResourceBindingNamespaceAnnotation], Name: n}, false, true
	}
	return types.NamespacedName{}, false, false
}

// ClusterOfWork returns the member cluster of a Work from its execution namespace.
func ClusterOfWork(namespace string) (string, bool) {
	if !strings.HasPrefix(namespace, wellknown.ExecutionNamespacePrefix) {
		return "", false
	}
	return strings.TrimPrefix(namespace, wellknown.ExecutionNamespacePrefix), true
}

// Scheduled returns the names of the binding's target clusters (see Targets).
func Scheduled(spec *workv1alpha2.ResourceBindingSpec) []string {
	targets := Targets(spec)
	out := make([]string, 0, len(targets))
	for _, c := range targets {
		out = append(out, c.Name)
	}
	return out
}

// Targets are the clusters the binding's template goes to: the clusters the scheduler chose
// (spec.clusters, with their replicas), then, by name, the other clusters of the bindings
// that depend on it (spec.requiredBy), which get the whole template. A dependency that also
// has its own policy thus goes where its policy says and wherever a workload needs it.
func Targets(spec *workv1alpha2.ResourceBindingSpec) []workv1alpha2.TargetCluster {
	if len(spec.RequiredBy) == 0 {
		return spec.Clusters
	}
	seen := make(map[string]bool, len(spec.Clusters))
	for _, c := range spec.Clusters {
		seen[c.Name] = true
	}
	var extra []string
	for _, s := range spec.RequiredBy {
		for _, c := range s.Clusters {
			if !seen[c.Name] {
				seen[c.Name] = true
				extra = append(extra, c.Name)
			}
		}
	}
	slices.Sort(extra)
	out := slices.Clone(spec.Clusters)
	for _, name := range extra {
		out = append(out, workv1alpha2.TargetCluster{Name: name, Replicas: spec.Replicas})
	}
	return out
}

// DispatchSuspended reports whether Works to the cluster are held back.
func DispatchSuspended(spec *workv1alpha2.ResourceBindingSpec, cluster string) bool {
	s := spec.Suspension
	if s == nil {
		return false
	}
	if s.Dispatching != nil && *s.Dispatching {
		return true
	}
	if s.DispatchingOnClusters != nil {
		for _, c := range s.DispatchingOnClusters.ClusterNames {
			if c == cluster {
				return true
			}
		}
	}
	return false
}

// Field index names registered by the controllers.
const (
	// IndexWorkByBinding indexes Works by their binding's permanent id label value.
	IndexWorkByBinding = "flotilla.work.binding"
	// IndexBindingByCluster indexes bindings by the names of their target clusters.
	IndexBindingByCluster = "flotilla.binding.cluster"
)

// WorkBindingLabel is the label on Works that holds their binding's permanent id: the
// ResourceBinding's or ClusterResourceBinding's permanent-id label key.
func WorkBindingLabel(o client.Object) string { return PermanentIDLabel(o) }

// ApplyStatus server-side applies status fields of a binding as fieldOwner. Each controller
// owns its own fields and condition types (conditions are a map list keyed by type), so
// concurrent writers never overwrite each other, as a JSON merge patch of the whole
// conditions list would. Server-side apply removes fields the owner applied before and leaves
// out now, so callers pass every field they own.
func ApplyStatus(ctx context.Context, c client.Client, rb client.Object, fieldOwner string, status map[string]any) error {
	return applyStatus(ctx, c, rb, fieldOwner, status, "")
}

// ApplyStatusIfCurrent is ApplyStatus with rb's resourceVersion as a precondition: when the
// fields were derived from a cached binding that is no longer current, the write fails with a
// conflict (and the reconcile is retried on fresh data) instead of putting old values back.
func ApplyStatusIfCurrent(ctx context.Context, c client.Client, rb client.Object, fieldOwner string, status map[string]any) error {
	return applyStatus(ctx, c, rb, fieldOwner, status, rb.GetResourceVersion())
}

func applyStatus(ctx context.Context, c client.Client, rb client.Object, fieldOwner string, status map[string]any, resourceVersion string) error {
	gvk := workv1alpha2.GroupVersion.WithKind(Kind(rb))
	ac := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvk.GroupVersion().String(),
		"kind":       gvk.Kind,
		"metadata":   map[string]any{"name": rb.GetName()},
	}}
	if ns := rb.GetNamespace(); ns != "" {
		ac.SetNamespace(ns)
	}
	if resourceVersion != "" {
		ac.SetResourceVersion(resourceVersion)
	}
	data, err := json.Marshal(status)
	if err != nil {
		return err
	}
	var st map[string]any
	if err := json.Unmarshal(data, &st); err != nil {
		return err
	}
	ac.Object["status"] = st
	err = c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(ac), client.FieldOwner(fieldOwner), client.ForceOwnership)
	return client.IgnoreNotFound(err)
}

// Condition returns cond with LastTransitionTime kept from the current condition of the same
// type when the status did not change, as meta.SetStatusCondition does.
func Condition(current []metav1.Condition, cond metav1.Condition) metav1.Condition {
	if old := meta.FindStatusCondition(current, cond.Type); old != nil && old.Status == cond.Status {
		cond.LastTransitionTime = old.LastTransitionTime
	}
	if cond.LastTransitionTime.IsZero() {
		cond.LastTransitionTime = metav1.Now()
	}
	return cond
}

// ConditionCurrent reports whether current already holds cond (ignoring the transition time).
func ConditionCurrent(current []metav1.Condition, cond metav1.Condition) bool {
	old := meta.FindStatusCondition(current, cond.Type)
	return old != nil && old.Status == cond.Status && old.Reason == cond.Reason &&
		old.Message == cond.Message && old.ObservedGeneration == cond.ObservedGeneration
}

// WorksByCluster returns a binding's Works by the name of their cluster, from the Works
// indexed under IndexWorkByBinding (a cache with that index, or any reader that has it).
func WorksByCluster(ctx context.Context, c client.Reader, rb client.Object) (map[string]*workv1alpha1.Work, error) {
	list := &workv1alpha1.WorkList{}
	if err := c.List(ctx, list, client.MatchingFields{IndexWorkByBinding: PermanentID(rb)}); err != nil {
		return nil, err
	}
	out := make(map[string]*workv1alpha1.Work, len(list.Items))
	for i := range list.Items {
		if name, ok := ClusterOfWork(list.Items[i].Namespace); ok {
			out[name] = &list.Items[i]
		}
	}
	return out, nil
}
