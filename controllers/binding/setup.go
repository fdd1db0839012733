package binding

import (
	"context"
	"maps"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	rolloutsv1alpha1 "github.com/flotilla-io/flotilla/api/rollouts/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/bindings"
	"github.com/flotilla-io/flotilla/internal/resourceselector"
	"github.com/flotilla-io/flotilla/internal/shard"
)

// IndexOverrideBySelector indexes OverridePolicies and ClusterOverridePolicies by the kinds and
// names their resourceSelectors select, or resourceselector.AllKey when they select every
// template (resourceselector.IndexKeys): rendering a template looks only at the override
// policies that may select it.
const IndexOverrideBySelector = "flotilla.io/override-by-selector"

// SetupIndexes registers the field indexes the binding controllers use. Call it once.
func SetupIndexes(ctx context.Context, mgr ctrl.Manager) error {
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &workv1alpha1.Work{}, bindings.IndexWorkByBinding, func(o client.Object) []string {
		l := o.GetLabels()
		var out []string
		if id := l[bindings.PermanentIDLabel(&workv1alpha2.ResourceBinding{})]; id != "" {
			out = append(out, id)
		}
		if id := l[bindings.PermanentIDLabel(&workv1alpha2.ClusterResourceBinding{})]; id != "" {
			out = append(out, id)
		}
		return out
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &policyv1alpha1.OverridePolicy{}, IndexOverrideBySelector, func(o client.Object) []string {
		return resourceselector.IndexKeys(o.(*policyv1alpha1.OverridePolicy).Spec.ResourceSelectors, true)
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &policyv1alpha1.ClusterOverridePolicy{}, IndexOverrideBySelector, func(o client.Object) []string {
		return resourceselector.IndexKeys(o.(*policyv1alpha1.ClusterOverridePolicy).Spec.ResourceSelectors, true)
	}); err != nil {
		return err
	}
	byCluster := func(o client.Object) []string { return bindings.Scheduled(bindings.Spec(o)) }
	if err := idx.IndexField(ctx, &workv1alpha2.ResourceBinding{}, bindings.IndexBindingByCluster, byCluster); err != nil {
		return err
	}
	return idx.IndexField(ctx, &workv1alpha2.ClusterResourceBinding{}, bindings.IndexBindingByCluster, byCluster)
}

// SetupWithManager registers the controller for one kind of binding.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	sample := r.NewBinding()
	cluster := sample.GetNamespace() == "" && bindings.Kind(sample) == "ClusterResourceBinding"
	name := "binding"
	if cluster {
		name = "clusterbinding"
	}
	// What was last written of a shard another replica held may be out of date.
	r.Shards.OnLost(func(int) { r.overridden.Clear() })
	b := ctrl.NewControllerManagedBy(mgr).Named(name).
		WithOptions(r.Shards.Options(controller.Options{MaxConcurrentReconciles: workers})).
		For(sample, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		Watches(&workv1alpha1.Work{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			key, isCluster, ok := bindings.FromWork(o)
			if !ok || isCluster != cluster {
				return nil
			}
			return []reconcile.Request{{NamespacedName: key}}
		}), builder.WithPredicates(workSpecOrDeleted())).
		Watches(&policyv1alpha1.OverridePolicy{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			if cluster {
				return nil
			}
			return r.bindingsIn(ctx, o.GetNamespace())
		}), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&policyv1alpha1.ClusterOverridePolicy{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
			return r.bindingsIn(ctx, "")
		}), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&rolloutsv1alpha1.Rollout{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if cluster {
				return nil // Rollouts are of ResourceBindings, same namespace and name
			}
			return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(o)}}
		}), builder.WithPredicates(rolloutTargetsChanged())).
		Watches(&clusterv1alpha1.Cluster{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return r.bindingsOn(ctx, o.GetName())
		}), builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{})))
	return r.Shards.Complete(b, shard.ListFrom(mgr.GetCache(), func() client.ObjectList { return bindings.NewList(sample) }), r)
}

// rolloutTargetsChanged passes Rollout events that change what a cluster's Work is rendered
// from: its creation or deletion, the stable revision, or a cluster's target or budget share.
func rolloutTargetsChanged() predicate.Predicate {
	type target struct {
		rev string
		max int32
	}
	targets := func(o client.Object) (string, map[string]target) {
		ro, ok := o.(*rolloutsv1alpha1.Rollout)
		if !ok {
			return "", nil
		}
		out := map[string]target{}
		for _, c := range ro.Status.Clusters {
			t := target{rev: c.Target}
			if c.MaxUnavailable != nil {
				t.max = *c.MaxUnavailable
			}
			out[c.Name] = t
		}
		return ro.Status.StableRevision, out
	}
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			s1, t1 := targets(e.ObjectOld)
			s2, t2 := targets(e.ObjectNew)
			return s1 != s2 || !maps.Equal(t1, t2)
		},
	}
}

// workSpecOrDeleted passes Work events that need the binding to re-render: deletion (a Work
// deleted by hand is written again) and spec changes made by someone else.
func workSpecOrDeleted() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(e event.UpdateEvent) bool { return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

func (r *Reconciler) list(ctx context.Context, opts ...client.ListOption) []reconcile.Request {
	var objs []client.Object
	if bindings.Kind(r.NewBinding()) == "ClusterResourceBinding" {
		l := &workv1alpha2.ClusterResourceBindingList{}
		if err := r.Client.List(ctx, l, opts...); err != nil {
			return nil
		}
		for i := range l.Items {
			objs = append(objs, &l.Items[i])
		}
	} else {
		l := &workv1alpha2.ResourceBindingList{}
		if err := r.Client.List(ctx, l, opts...); err != nil {
			return nil
		}
		for i := range l.Items {
			objs = append(objs, &l.Items[i])
		}
	}
	out := make([]reconcile.Request, 0, len(objs))
	for _, o := range objs {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}})
	}
	return out
}

func (r *Reconciler) bindingsIn(ctx context.Context, ns string) []reconcile.Request {
	if ns == "" {
		return r.list(ctx)
	}
	return r.list(ctx, client.InNamespace(ns))
}

func (r *Reconciler) bindingsOn(ctx context.Context, cluster string) []reconcile.Request {
	return r.list(ctx, client.MatchingFields{bindings.IndexBindingByCluster: cluster})
}
