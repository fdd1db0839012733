package mcs

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	networkingv1alpha1 "github.com/flotilla-io/flotilla/api/networking/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/mcs"
	"github.com/flotilla-io/flotilla/internal/member"
)

// process does one service's member work in one member, on that member's own workers: write
// what the member consumes, delete what it no longer does, and report the verdict on its
// export.
func (r *Reconciler) process(ctx context.Context, cluster string, key types.NamespacedName) (ctrl.Result, error) {
	mem, err := r.Members.Get(cluster)
	if err != nil {
		return ctrl.Result{}, nil // the member's reconnect brings every service back
	}
	if key == memberSetupKey {
		return r.setupMember(ctx, mem)
	}
	if err := r.watch(ctx, cluster, serviceGVK, sliceGVK); err != nil {
		return ctrl.Result{}, err
	}
	plan, _ := r.plans.Load(key)
	err = r.sync(ctx, mem, key, plan)
	r.record(key, cluster, err, plan != nil && plan.Serves(cluster))
	if err != nil {
		return ctrl.Result{}, err
	}
	if plan != nil {
		return ctrl.Result{}, r.reportExport(ctx, mem, key, plan)
	}
	return ctrl.Result{}, nil
}

// setupMember installs the MCS CRDs into a member, watches ServiceExports and ServiceImports
// there, and looks again at every service the member has derived objects of (so what was
// derived before a restart is found and cleaned up).
func (r *Reconciler) setupMember(ctx context.Context, mem *member.Member) (ctrl.Result, error) {
	if err := EnsureCRDs(ctx, mem.Client); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.watch(ctx, mem.Name, exportGVK, importGVK, serviceGVK, sliceGVK); err != nil {
		if meta.IsNoMatchError(err) {
			return ctrl.Result{RequeueAfter: crdEstablishedPoll}, nil // the new CRDs are not served yet
		}
		return ctrl.Result{}, err
	}
	if _, loaded := r.crds.Swap(mem.Name, struct{}{}); !loaded && r.KindServed != nil {
		r.KindServed(mem.Name)
	}
	for _, gvk := range []schema.GroupVersionKind{importGVK, exportGVK} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := mem.Cached().List(ctx, list); err != nil {
			continue
		}
		for i := range list.Items {
			r.wakeKey(client.ObjectKeyFromObject(&list.Items[i]))
		}
	}
	return ctrl.Result{}, nil
}

// sync makes the member's derived objects of the service what the plan says.
func (r *Reconciler) sync(ctx context.Context, mem *member.Member, key types.NamespacedName, plan *mcs.Plan) error {
	var desired []client.Object
	if plan != nil && plan.Serves(mem.Name) {
		clusterIP := ""
		svc := &corev1.Service{}
		if err := getCached(ctx, mem.Cached(), types.NamespacedName{Namespace: key.Namespace, Name: mcs.DerivedServiceName(key.Name)}, serviceGVK, svc); err == nil {
			clusterIP = svc.Spec.ClusterIP
		}
		desired = mcs.Render(plan, mem.Name, clusterIP).Objects()
		if err := r.ensureNamespace(ctx, mem, key.Namespace); err != nil {
			return err
		}
	}
	var errs []error
	for _, obj := range desired {
		if err := r.apply(ctx, mem, obj); err != nil {
			errs = append(errs, err)
		}
	}
	existing, err := r.derived(ctx, mem, key)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, obj := range mcs.Stale(desired, existing) {
		if err := mem.Client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			errs = append(errs, err)
		} else {
			ctrl.LoggerFrom(ctx).V(1).Info("Deleted a derived object", "Cluster", mem.Name, "kind", obj.GetObjectKind().GroupVersionKind().Kind, "name", obj.GetName())
		}
	}
	return errors.Join(errs...)
}

// ensureNamespace creates the service's namespace in a consumer that does not have it (the
// MCS API's namespace sameness), labelled as Flotilla's. It is never deleted by the
// controller: other things may live in it by then.
func (r *Reconciler) ensureNamespace(ctx context.Context, mem *member.Member, ns string) error {
	done := memberNamespace{cluster: mem.Name, namespace: ns}
	if _, ok := r.namespaces.Load(done); ok {
		return nil
	}
	err := mem.Client.Get(ctx, types.NamespacedName{Name: ns}, &corev1.Namespace{})
	if apierrors.IsNotFound(err) {
		err = mem.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
			Labels: map[string]string{mcs.ManagedByLabel: mcs.ManagedByValue}}}, client.FieldOwner(FieldOwner))
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("namespace %s: %w", ns, err)
	}
	r.namespaces.Store(done, struct{}{})
	return nil
}

// apply server-side applies one derived object unless the member cache shows it as it is
// desired already. An object of that name that Flotilla did not create is never taken over.
func (r *Reconciler) apply(ctx context.Context, mem *member.Member, obj client.Object) error {
	gvk := obj.GetObjectKind().GroupVersionKind()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	desired := &unstructured.Unstructured{Object: u}
	unstructured.RemoveNestedField(desired.Object, "metadata", "creationTimestamp")
	// The status goes in a write of its own (the status subresource), when there is one to set.
	status, _, _ := unstructured.NestedMap(u, "status")
	unstructured.RemoveNestedField(desired.Object, "status")
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(gvk)
	err = mem.Cached().Get(ctx, client.ObjectKeyFromObject(obj), cur)
	switch {
	case err == nil:
		if same(desired, cur) {
			return r.applyStatus(ctx, mem, desired, status, cur)
		}
	case apierrors.IsNotFound(err):
		// Not in the cache, which holds only managed objects: one of the user's may be there.
		if err := mem.Client.Get(ctx, client.ObjectKeyFromObject(obj), cur); err == nil && cur.GetLabels()[mcs.ManagedByLabel] != mcs.ManagedByValue {
			return fmt.Errorf("%s %s/%s %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), errForeignObject)
		}
	}
	err = mem.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(desired), client.FieldOwner(FieldOwner), client.ForceOwnership)
	if apierrors.IsNotFound(err) {
		r.namespaces.Delete(memberNamespace{cluster: mem.Name, namespace: obj.GetNamespace()}) // deleted since: create it again next time
	}
	if err != nil {
		return err
	}
	return r.applyStatus(ctx, mem, desired, status, nil)
}

// applyStatus server-side applies the desired status of a derived object that has one (a
// ServiceImport's exporting clusters) through its status subresource, unless cur, the
// cached object, shows it already. A derived Service's status is empty (a typed Service
// renders an empty loadBalancer): it is not written, and the member credential has no right
// to write services/status (join.MemberRules).
func (r *Reconciler) applyStatus(ctx context.Context, mem *member.Member, desired *unstructured.Unstructured, status map[string]any, cur *unstructured.Unstructured) error {
	if empty(status) {
		return nil
	}
	if cur != nil && subset(status, cur.Object["status"]) {
		return nil
	}
	st := &unstructured.Unstructured{Object: map[string]any{"apiVersion": desired.GetAPIVersion(), "kind": desired.GetKind(),
		"metadata": map[string]any{"name": desired.GetName(), "namespace": desired.GetNamespace()}, "status": status}}
	err := mem.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(st), client.FieldOwner(FieldOwner), client.ForceOwnership)
	return client.IgnoreNotFound(err)
}

// same says whether the current object has every desired label, annotation, spec and top-level field
// (EndpointSlices keep endpoints, ports and addressType at the top).
func same(desired, cur *unstructured.Unstructured) bool {
	for k, v := range desired.GetLabels() {
		if cur.GetLabels()[k] != v {
			return false
		}
	}
	for k, v := range desired.GetAnnotations() {
		if cur.GetAnnotations()[k] != v {
			return false
		}
	}
	for _, f := range []string{"spec", "endpoints", "ports", "addressType"} {
		d, ok := desired.Object[f]
		if !ok {
			continue
		}
		if f == "spec" {
			// The apiserver fills in spec fields (clusterIPs, ipFamilies...): compare only
			// the ones desired.
			if !subset(d, cur.Object[f]) {
				return false
			}
			continue
		}
		if !subset(d, cur.Object[f]) {
			return false
		}
	}
	return true
}

// subset says whether every field of want is in have with the same value (lists must have
// the same length, element by element).
// empty says whether v holds nothing but empty maps and lists.
func empty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		for _, e := range v {
			if !empty(e) {
				return false
			}
		}
		return true
	case []any:
		return len(v) == 0
	}
	return false
}

func subset(want, have any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			if !subset(v, h[k]) {
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
			if !subset(w[i], h[i]) {
				return false
			}
		}
		return true
	default:
		return equality.Semantic.DeepEqual(want, have)
	}
}

// derived lists the member's derived objects of the service from its cache.
func (r *Reconciler) derived(ctx context.Context, mem *member.Member, key types.NamespacedName) ([]client.Object, error) {
	var out []client.Object
	for _, gvk := range derivedKinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		err := mem.Cached().List(ctx, list, client.InNamespace(key.Namespace),
			client.MatchingLabels{mcs.LabelServiceName: key.Name, mcs.ManagedByLabel: mcs.ManagedByValue})
		if err != nil {
			if gvk == importGVK {
				if _, ok := r.crds.Load(mem.Name); !ok {
					continue // no ServiceImports watched yet, so none derived
				}
			}
			return nil, err
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// reportExport writes the Valid and Conflict conditions on the member's ServiceExport.
func (r *Reconciler) reportExport(ctx context.Context, mem *member.Member, key types.NamespacedName, plan *mcs.Plan) error {
	i := slices.IndexFunc(plan.Exports, func(e mcs.ExportStatus) bool { return e.Cluster == mem.Name })
	if i < 0 {
		return nil
	}
	exp, ok, _ := r.export(ctx, mem, mem.Cached(), key)
	if !ok {
		return nil // a MultiClusterService provider, or the export is gone
	}
	conds := slices.Clone(exp.Status.Conditions)
	for _, c := range []metav1.Condition{plan.Exports[i].Valid, plan.Exports[i].Conflict} {
		c.ObservedGeneration = exp.Generation
		meta.SetStatusCondition(&conds, c)
	}
	if equality.Semantic.DeepEqual(conds, exp.Status.Conditions) {
		return nil
	}
	return applyStatus(ctx, mem.Client, exportGVK, key, &mcsv1alpha1.ServiceExportStatus{Conditions: conds})
}

// record keeps the outcome of a write and wakes the service when it changed, so that a
// MultiClusterService's status follows. The success of a member that does not consume the
// service (derived objects deleted, or none) is not kept: a service is written to every
// member, and most services and members come and go.
func (r *Reconciler) record(key types.NamespacedName, cluster string, err error, consumes bool) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	k := result{key: key, cluster: cluster}
	if msg == "" && !consumes {
		if prev, loaded := r.results.Load(k); loaded {
			r.results.Delete(k)
			if prev != "" {
				r.wakeStatus(key)
			}
		}
		return
	}
	prev, loaded := r.results.Swap(k, msg)
	if !loaded || prev != msg {
		r.wakeStatus(key)
	}
}

// wakeStatus brings the service back without waiting, when the queue has room: its status
// follows the results.
func (r *Reconciler) wakeStatus(key types.NamespacedName) {
	m := &networkingv1alpha1.MultiClusterService{}
	m.Namespace, m.Name = key.Namespace, key.Name
	select {
	case r.wake <- event.GenericEvent{Object: m}:
	default:
	}
}

func (r *Reconciler) wakeKey(key types.NamespacedName) {
	m := &networkingv1alpha1.MultiClusterService{}
	m.Namespace, m.Name = key.Namespace, key.Name
	r.wake <- event.GenericEvent{Object: m}
}
