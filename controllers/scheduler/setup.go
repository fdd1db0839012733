package scheduler

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/util/workqueue"
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
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/bindings"
	"github.com/flotilla-io/flotilla/internal/shard"
)

// Indexes the scheduler registers.
const (
	// IndexUnscheduled indexes bindings without clusters under "true".
	IndexUnscheduled = "flotilla.binding.unscheduled"
	// IndexDuplicated indexes duplicated bindings under "true".
	IndexDuplicated = "flotilla.binding.duplicated"
	// IndexFailed indexes bindings whose Scheduled condition is False under "true": the
	// last attempt found no placement, so more capacity may let them fit.
	IndexFailed = "flotilla.binding.schedulefailed"
	// IndexWorkloadAffinityGroup indexes ResourceBindings by their workload-affinity groups
	// (spec.workloadAffinityGroups): "affinity/<group>" and "antiaffinity/<group>". Listed
	// with client.InNamespace, it finds a binding's peers.
	IndexWorkloadAffinityGroup = "flotilla.binding.workloadaffinitygroup"
)

// Keys of IndexWorkloadAffinityGroup.
func affinityKey(group string) string     { return "affinity/" + group }
func antiAffinityKey(group string) string { return "antiaffinity/" + group }

// workloadAffinityKeys are a binding's IndexWorkloadAffinityGroup keys.
func workloadAffinityKeys(o client.Object) []string {
	g := bindings.Spec(o).WorkloadAffinityGroups
	if g == nil {
		return nil
	}
	var keys []string
	if g.AffinityGroup != "" {
		keys = append(keys, affinityKey(g.AffinityGroup))
	}
	if g.AntiAffinityGroup != "" {
		keys = append(keys, antiAffinityKey(g.AntiAffinityGroup))
	}
	return keys
}

// SetupIndexes registers the indexes the scheduler uses. Call it once.
func SetupIndexes(ctx context.Context, mgr ctrl.Manager) error {
	f := func(o client.Object) []string {
		if len(bindings.Spec(o).Clusters) == 0 {
			return []string{"true"}
		}
		return nil
	}
	dup := func(o client.Object) []string {
		if Duplicated(bindings.Spec(o)) {
			return []string{"true"}
		}
		return nil
	}
	failed := func(o client.Object) []string {
		if meta.IsStatusConditionFalse(bindings.Status(o).Conditions, wellknown.ConditionScheduled) {
			return []string{"true"}
		}
		return nil
	}
	for _, obj := range []client.Object{&workv1alpha2.ResourceBinding{}, &workv1alpha2.ClusterResourceBinding{}} {
		if err := mgr.GetFieldIndexer().IndexField(ctx, obj, IndexUnscheduled, f); err != nil {
			return err
		}
		if err := mgr.GetFieldIndexer().IndexField(ctx, obj, IndexDuplicated, dup); err != nil {
			return err
		}
		if err := mgr.GetFieldIndexer().IndexField(ctx, obj, IndexFailed, failed); err != nil {
			return err
		}
	}
	// Workload affinity groups are namespaced: only ResourceBindings have them.
	return mgr.GetFieldIndexer().IndexField(ctx, &workv1alpha2.ResourceBinding{}, IndexWorkloadAffinityGroup, workloadAffinityKeys)
}

// SetupWithManager registers the scheduler for one kind of binding.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	sample := r.NewBinding()
	name := "scheduler"
	if bindings.Kind(sample) == "ClusterResourceBinding" {
		name = "cluster-scheduler"
	}
	// What was last written of a shard another replica held may be out of date.
	// The bindings of a shard another replica holds are not reconciled here any more: their
	// backoff goes too.
	r.Shards.OnLost(func(int) { r.observed.Clear(); r.failures.Clear() })
	// The bindings' own events and the Clusters' are queued at the bindings' schedulePriority:
	// when many wait (a cluster failed, capacity came back), those of higher priority are
	// placed first. Named, not For: For's handler would queue them all at one priority.
	b := ctrl.NewControllerManagedBy(mgr).Named(name).
		WithOptions(r.Shards.Options(controller.Options{MaxConcurrentReconciles: workers})).
		Watches(sample, byPriority(), builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&clusterv1alpha1.Cluster{}, clusterHandler(r.affected), builder.WithPredicates(clusterChanged())).
		Watches(&clusterv1alpha1.Cluster{}, clusterHandler(r.waitingForCapacity), builder.WithPredicates(capacityChanged()))
	if bindings.Kind(sample) == "ResourceBinding" {
		// A workload that moves, goes or is placed can let the waiting workloads of its
		// affinity groups fit (an anti-affinity peer left a cluster, an affinity peer was
		// placed): they are tried again at once rather than after their backoff.
		b = b.Watches(sample, peerHandler(r.waitingPeers), builder.WithPredicates(peerMoved()))
		// A FederatedResourceQuota created, raised or deleted can let the bindings of its
		// namespace that it refused fit: they are tried again at once.
		b = b.Watches(&policyv1alpha1.FederatedResourceQuota{}, peerHandler(r.waitingForQuota))
	}
	return r.Shards.Complete(b, shard.ListFrom(mgr.GetCache(), func() client.ObjectList { return bindings.NewList(sample) }), r)
}

// affected maps a cluster change to the bindings it can affect: those scheduled on it (it may
// have to leave), those not scheduled anywhere or whose last attempt failed (it may now fit:
// a taint removed, Ready again), and duplicated ones (they go to every cluster that fits).
func (r *Reconciler) affected(ctx context.Context, o client.Object) []client.Object {
	return r.listAll(ctx,
		client.MatchingFields{bindings.IndexBindingByCluster: o.GetName()},
		client.MatchingFields{IndexUnscheduled: "true"},
		client.MatchingFields{IndexFailed: "true"},
		client.MatchingFields{IndexDuplicated: "true"})
}

// listAll lists the bindings each option selects, each binding once.
func (r *Reconciler) listAll(ctx context.Context, opts ...client.ListOption) []client.Object {
	seen := map[client.ObjectKey]bool{}
	var out []client.Object
	for _, opt := range opts {
		for _, o := range r.list(ctx, opt) {
			if k := client.ObjectKeyFromObject(o); !seen[k] {
				seen[k] = true
				out = append(out, o)
			}
		}
	}
	return out
}

// waitingForCapacity maps a change of a cluster's capacity to the bindings that found no
// placement last time: unscheduled ones, and those whose Scheduled condition is False (a
// scale-up that did not fit).
func (r *Reconciler) waitingForCapacity(ctx context.Context, _ client.Object) []client.Object {
	return r.listAll(ctx, client.MatchingFields{IndexUnscheduled: "true"}, client.MatchingFields{IndexFailed: "true"})
}

// waitingPeers maps a change of a binding to the bindings of its workload-affinity groups,
// in its namespace, that wait for a placement: unscheduled ones and those whose last attempt
// failed.
func (r *Reconciler) waitingPeers(ctx context.Context, o client.Object) []client.Object {
	var out []client.Object
	for _, key := range workloadAffinityKeys(o) {
		for _, peer := range r.list(ctx, &client.ListOptions{Namespace: o.GetNamespace(),
			FieldSelector: fields.OneTermEqualSelector(IndexWorkloadAffinityGroup, key)}) {
			if peer.GetName() == o.GetName() {
				continue
			}
			if len(bindings.Spec(peer).Clusters) == 0 || meta.IsStatusConditionFalse(bindings.Status(peer).Conditions, wellknown.ConditionScheduled) {
				out = append(out, peer)
			}
		}
	}
	return out
}

// waitingForQuota maps a change of a FederatedResourceQuota to the bindings of its namespace
// that wait for a placement: unscheduled ones and those whose last attempt failed.
func (r *Reconciler) waitingForQuota(ctx context.Context, o client.Object) []client.Object {
	var out []client.Object
	for _, b := range r.list(ctx, client.InNamespace(o.GetNamespace())) {
		if len(bindings.Spec(b).Clusters) == 0 || meta.IsStatusConditionFalse(bindings.Status(b).Conditions, wellknown.ConditionScheduled) {
			out = append(out, b)
		}
	}
	return out
}

// peerHandler queues the waiting peers of a binding that changed: of its groups before and
// after the change (a binding that leaves a group frees its clusters for that group).
func peerHandler(peersOf func(ctx context.Context, o client.Object) []client.Object) handler.TypedEventHandler[client.Object, reconcile.Request] {
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, false, peersOf(ctx, e.Object)...)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, false, append(peersOf(ctx, e.ObjectOld), peersOf(ctx, e.ObjectNew)...)...)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, false, peersOf(ctx, e.Object)...)
		},
	}
}

// peerMoved passes binding changes that can change where a workload-affinity peer fits:
// a binding with groups created, deleted, or whose clusters changed.
func peerMoved() predicate.Predicate {
	grouped := func(o client.Object) bool { return bindings.Spec(o).WorkloadAffinityGroups != nil }
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return grouped(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return (grouped(e.ObjectOld) || grouped(e.ObjectNew)) &&
				(!equality.Semantic.DeepEqual(bindings.Spec(e.ObjectOld).Clusters, bindings.Spec(e.ObjectNew).Clusters) ||
					!equality.Semantic.DeepEqual(bindings.Spec(e.ObjectOld).WorkloadAffinityGroups, bindings.Spec(e.ObjectNew).WorkloadAffinityGroups))
		},
		DeleteFunc:  func(e event.DeleteEvent) bool { return grouped(e.Object) },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// capacityChanged passes cluster updates that change what fits: the resource summary
// (allocatable, allocated, allocating) or the node summary (Nodes added or gone Ready).
func capacityChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld.(*clusterv1alpha1.Cluster), e.ObjectNew.(*clusterv1alpha1.Cluster)
			return !equality.Semantic.DeepEqual(o.Status.ResourceSummary, n.Status.ResourceSummary) ||
				!equality.Semantic.DeepEqual(o.Status.NodeSummary, n.Status.NodeSummary)
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// list returns the bindings opt selects, straight from the cache (not copied: they are only
// read, for their keys and priorities).
func (r *Reconciler) list(ctx context.Context, opt client.ListOption) []client.Object {
	var out []client.Object
	if bindings.Kind(r.NewBinding()) == "ClusterResourceBinding" {
		l := &workv1alpha2.ClusterResourceBindingList{}
		if r.Client.List(ctx, l, opt, client.UnsafeDisableDeepCopy) != nil {
			return nil
		}
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
		return out
	}
	l := &workv1alpha2.ResourceBindingList{}
	if r.Client.List(ctx, l, opt, client.UnsafeDisableDeepCopy) != nil {
		return nil
	}
	for i := range l.Items {
		out = append(out, &l.Items[i])
	}
	return out
}

// clusterChanged passes cluster changes that can change placements: spec (taints, fields),
// labels, deletion, readiness and served APIs; resource summaries alone do not, so periodic
// status collection does not churn bindings.
func clusterChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld.(*clusterv1alpha1.Cluster), e.ObjectNew.(*clusterv1alpha1.Cluster)
			return o.Generation != n.Generation || !equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
				(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) ||
				meta.IsStatusConditionTrue(o.Status.Conditions, wellknown.ClusterConditionReady) != meta.IsStatusConditionTrue(n.Status.Conditions, wellknown.ClusterConditionReady) ||
				!equality.Semantic.DeepEqual(o.Status.APIEnablements, n.Status.APIEnablements)
		},
	}
}
