package descheduler

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers/detector"
	"github.com/flotilla-io/flotilla/internal/shard"
)

// SetupWithManager registers the descheduler. It is triggered by a binding's new generation
// and by a Cluster whose report of unschedulable workloads changes (for the bindings of the
// workloads it names); waits are requeued.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	r.Shards.OnLost(func(int) { r.moved.Clear(); r.told.Clear() })
	b := ctrl.NewControllerManagedBy(mgr).Named("descheduler").
		WithOptions(r.Shards.Options(controller.Options{MaxConcurrentReconciles: max(workers, 1)})).
		For(&workv1alpha2.ResourceBinding{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&clusterv1alpha1.Cluster{}, handler.EnqueueRequestsFromMapFunc(bindingsReported), builder.WithPredicates(reportsChanged()))
	return r.Shards.Complete(b, shard.ListFrom(mgr.GetCache(), func() client.ObjectList { return &workv1alpha2.ResourceBindingList{} }), r)
}

// bindingsReported maps a Cluster to the bindings of the workloads it reports unschedulable
// replicas of (a template's binding is named after it: detector.BindingName).
func bindingsReported(_ context.Context, o client.Object) []reconcile.Request {
	c, ok := o.(*clusterv1alpha1.Cluster)
	if !ok || c.Status.ResourceSummary == nil {
		return nil
	}
	var out []reconcile.Request
	for _, w := range c.Status.ResourceSummary.UnschedulableWorkloads {
		if groupOf(w.APIVersion) != "apps" || (w.Kind != "Deployment" && w.Kind != "ReplicaSet") {
			continue
		}
		key := types.NamespacedName{Namespace: w.Namespace, Name: detector.BindingName(w.Kind, w.Name)}
		if !slices.ContainsFunc(out, func(r reconcile.Request) bool { return r.NamespacedName == key }) {
			out = append(out, reconcile.Request{NamespacedName: key})
		}
	}
	return out
}

// reportsChanged passes a Cluster whose unschedulable workloads changed.
func reportsChanged() predicate.Funcs {
	reports := func(o client.Object) []clusterv1alpha1.UnschedulableWorkload {
		c, ok := o.(*clusterv1alpha1.Cluster)
		if !ok || c.Status.ResourceSummary == nil {
			return nil
		}
		return c.Status.ResourceSummary.UnschedulableWorkloads
	}
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return len(reports(e.Object)) > 0 },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !equality.Semantic.DeepEqual(reports(e.ObjectOld), reports(e.ObjectNew))
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
