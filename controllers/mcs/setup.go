package mcs

import (
	"context"
	"fmt"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	networkingv1alpha1 "github.com/flotilla-io/flotilla/api/networking/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/mcs"
	"github.com/flotilla-io/flotilla/internal/memberqueue"
)

// SetupWithManager registers the controller and its member queues.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil || r.Members == nil || r.Recorder == nil {
		return fmt.Errorf("mcs controller: Client, Members and Recorder must be set")
	}
	r.queues = memberqueue.New("mcs", r.MemberWorkers, r.process)
	r.queues.Timeout = r.MemberWorkTimeout
	// A deleted Cluster's queue and workers go with it, and what was kept of it.
	r.Members.OnRemove(r.queues.Remove)
	r.Members.OnRemove(r.forgetMember)
	if err := mgr.Add(r.queues); err != nil {
		return err
	}
	r.wake = make(chan event.GenericEvent, 1024)
	return ctrl.NewControllerManagedBy(mgr).Named("mcs").
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&networkingv1alpha1.MultiClusterService{}).
		Watches(&clusterv1alpha1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.allKeys)).
		WatchesRawSource(source.Channel(r.wake, &handler.EnqueueRequestForObject{})).
		WatchesRawSource(r.Members.Source("mcs", handler.EnqueueRequestsFromMapFunc(r.mapMember))).
		Complete(r)
}

// forgetMember drops what was kept of a member whose Cluster is gone: its write results,
// that its CRDs are in place, the namespaces it has. A member joined again under the name
// starts afresh.
func (r *Reconciler) forgetMember(cluster string) {
	r.results.DeleteFunc(func(k result, _ string) bool { return k.cluster == cluster })
	r.crds.Delete(cluster)
	r.namespaces.DeleteFunc(func(k memberNamespace, _ struct{}) bool { return k.cluster == cluster })
}

// allKeys returns every service the controller has a plan of and every MultiClusterService: when
// members come and go, each may gain or lose providers and consumers.
func (r *Reconciler) allKeys(ctx context.Context, _ client.Object) []reconcile.Request {
	var out []reconcile.Request
	seen := map[types.NamespacedName]bool{}
	for _, key := range r.plans.Keys() {
		seen[key] = true
		out = append(out, reconcile.Request{NamespacedName: key})
	}
	list := &networkingv1alpha1.MultiClusterServiceList{}
	if err := r.Client.List(ctx, list); err == nil {
		for i := range list.Items {
			key := client.ObjectKeyFromObject(&list.Items[i])
			if !seen[key] {
				out = append(out, reconcile.Request{NamespacedName: key})
			}
		}
	}
	return out
}

// mapMember maps member events to services: a member (re)connecting or going away brings
// back every service (and sets the member up); a ServiceExport its service; a Service,
// EndpointSlice or ServiceImport the service it belongs to.
func (r *Reconciler) mapMember(ctx context.Context, o client.Object) []reconcile.Request {
	if c, ok := o.(*clusterv1alpha1.Cluster); ok {
		r.queues.Add(c.Name, memberSetupKey)
		return r.allKeys(ctx, o)
	}
	labels := o.GetLabels()
	ours := labels[mcs.ManagedByLabel] == mcs.ManagedByValue
	var name string
	switch gvk := o.GetObjectKind().GroupVersionKind(); {
	case gvk == exportGVK:
		return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(o)}}
	case ours && (gvk == importGVK || gvk == serviceGVK || gvk == sliceGVK):
		name = labels[mcs.LabelServiceName]
	case gvk == serviceGVK:
		name = o.GetName()
	case gvk == sliceGVK && labels[discoveryv1.LabelManagedBy] == mcs.KubeEndpointSliceController:
		name = labels[discoveryv1.LabelServiceName]
	default:
		return nil
	}
	if name == "" {
		return nil
	}
	// Not only known services: a slice seen before its service was known must still bring
	// it back (the member cache holds only Flotilla-managed objects, so this stays cheap).
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}
