package rollout

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rolloutsv1alpha1 "github.com/flotilla-io/flotilla/api/rollouts/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/bindings"
)

// DefaultWorkers is the controller's concurrency.
const DefaultWorkers = 2

// SetupWithManager registers the controller: a binding is looked at when it changes, when its
// Rollout's spec changes (an operator's control), when one of its Works changes while it has
// a Rollout, and when a rollout policy changes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder(ControllerName)
	}
	return ctrl.NewControllerManagedBy(mgr).Named("rollout").
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&workv1alpha2.ResourceBinding{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&rolloutsv1alpha1.Rollout{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&workv1alpha1.Work{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			key, isCluster, ok := bindings.FromWork(o)
			if !ok || isCluster {
				return nil
			}
			// Only bindings with a Rollout follow their Works.
			if err := r.Client.Get(ctx, key, &rolloutsv1alpha1.Rollout{}); err != nil {
				return nil
			}
			return []reconcile.Request{{NamespacedName: key}}
		})).
		Watches(&rolloutsv1alpha1.RolloutPolicy{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return r.bindings(ctx, client.InNamespace(o.GetNamespace()))
		}), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&rolloutsv1alpha1.ClusterRolloutPolicy{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
			return r.bindings(ctx)
		}), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(r)
}

func (r *Reconciler) bindings(ctx context.Context, opts ...client.ListOption) []reconcile.Request {
	l := &workv1alpha2.ResourceBindingList{}
	if err := r.Client.List(ctx, l, opts...); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(l.Items))
	for _, b := range l.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: b.Namespace, Name: b.Name}})
	}
	return out
}
