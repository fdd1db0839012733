package failover

import (
	"context"

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
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/bindings"
	"github.com/flotilla-io/flotilla/internal/shard"
)

// The binding's spec.clusters and gracefulEvictionTasks are written here; clusters' taints
// and Works are read.
// +kubebuilder:rbac:groups=work.karmada.io,resources=resourcebindings;clusterresourcebindings,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=work.karmada.io,resources=works,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.karmada.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the controller for its kind of binding. It needs the binding
// indexes (bindings.IndexWorkByBinding, bindings.IndexBindingByCluster) registered.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.Options.GracePeriod <= 0 {
		r.Options.GracePeriod = DefaultOptions.GracePeriod
	}
	sample := r.NewBinding()
	// The bindings of a shard another replica holds are not looked at here any more.
	r.Shards.OnLost(r.forgetShard)
	// Bindings by the clusters of their eviction tasks: a cluster that recovers may end a
	// task of a binding no longer placed on it.
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), sample, IndexEvictedFrom, func(o client.Object) []string {
		var out []string
		for _, t := range bindings.Spec(o).GracefulEvictionTasks {
			out = append(out, t.FromCluster)
		}
		return out
	}); err != nil {
		return err
	}
	isCluster := bindings.Kind(sample) == "ClusterResourceBinding"
	name := "binding-failover"
	if isCluster {
		name = "clusterbinding-failover"
	}
	b := ctrl.NewControllerManagedBy(mgr).Named(name).
		WithOptions(r.Shards.Options(controller.Options{MaxConcurrentReconciles: max(r.Options.Workers, 1)})).
		For(sample, builder.WithPredicates(bindingChanged())).
		Watches(&clusterv1alpha1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.onCluster), builder.WithPredicates(taintsChanged())).
		Watches(&workv1alpha1.Work{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			key, c, ok := bindings.FromWork(o)
			if !ok || c != isCluster || !r.watching(ctx, key) {
				return nil
			}
			return []reconcile.Request{{NamespacedName: key}}
		}), builder.WithPredicates(workStatusChanged()))
	return r.Shards.Complete(b, shard.ListFrom(mgr.GetCache(), func() client.ObjectList { return bindings.NewList(sample) }), r)
}

// watching tells whether a Work's changes matter to its binding: while it has eviction
// tasks (their purge waits for the new clusters' health) or application failover (which
// watches the health).
func (r *Reconciler) watching(ctx context.Context, key types.NamespacedName) bool {
	rb := r.NewBinding()
	if r.Client.Get(ctx, key, rb) != nil {
		return false
	}
	spec := bindings.Spec(rb)
	return len(spec.GracefulEvictionTasks) > 0 || failoverApplication(spec) != nil
}

// IndexEvictedFrom indexes bindings by the clusters of their graceful eviction tasks.
const IndexEvictedFrom = "flotilla.binding.evictedfrom"

// onCluster returns the bindings placed on, or being evicted from, a cluster whose taints
// changed.
func (r *Reconciler) onCluster(ctx context.Context, o client.Object) []reconcile.Request {
	seen := map[types.NamespacedName]bool{}
	var out []reconcile.Request
	for _, index := range []string{bindings.IndexBindingByCluster, IndexEvictedFrom} {
		by := client.MatchingFields{index: o.GetName()}
		var keys []types.NamespacedName
		if bindings.Kind(r.NewBinding()) == "ClusterResourceBinding" {
			l := &workv1alpha2.ClusterResourceBindingList{}
			if r.Client.List(ctx, l, by, client.UnsafeDisableDeepCopy) != nil { // keys only
				return nil
			}
			for i := range l.Items {
				keys = append(keys, client.ObjectKeyFromObject(&l.Items[i]))
			}
		} else {
			l := &workv1alpha2.ResourceBindingList{}
			if r.Client.List(ctx, l, by, client.UnsafeDisableDeepCopy) != nil { // keys only
				return nil
			}
			for i := range l.Items {
				keys = append(keys, client.ObjectKeyFromObject(&l.Items[i]))
			}
		}
		for _, k := range keys {
			if !seen[k] {
				seen[k] = true
				out = append(out, reconcile.Request{NamespacedName: k})
			}
		}
	}
	return out
}

func bindingChanged() predicate.Predicate {
	return predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			// The Scheduled condition decides whether an overdue task may purge.
			o, n := bindings.Status(e.ObjectOld), bindings.Status(e.ObjectNew)
			return !equality.Semantic.DeepEqual(o.Conditions, n.Conditions)
		},
		CreateFunc:  func(event.CreateEvent) bool { return true },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
	})
}

func taintsChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld.(*clusterv1alpha1.Cluster), e.ObjectNew.(*clusterv1alpha1.Cluster)
			return !equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints)
		},
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

func workStatusChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld.(*workv1alpha1.Work), e.ObjectNew.(*workv1alpha1.Work)
			return o.Generation != n.Generation || !equality.Semantic.DeepEqual(o.Status, n.Status)
		},
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
