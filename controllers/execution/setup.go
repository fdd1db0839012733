package execution

import (
	"context"
	"time"

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
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/hostclient"
	"github.com/flotilla-io/flotilla/internal/memberqueue"
	"github.com/flotilla-io/flotilla/internal/shard"
)

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.HostID == "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		id, err := hostclient.HostID(ctx, mgr.GetAPIReader())
		if err != nil {
			return err
		}
		r.HostID = id
	}
	r.queues = memberqueue.New("execution", r.MemberWorkers, r.sync)
	r.queues.Timeout = r.MemberWorkTimeout
	// Sharded, every replica applies the Works of its shards; unsharded, the leader all.
	r.queues.EveryReplica = r.Shards != nil
	// What was applied and written of a shard another replica held may be out of date.
	r.Shards.OnLost(func(int) { r.applied.Clear(); r.written.Clear(); r.established.Clear() })
	// A deleted Cluster's queue and workers go with it, and what was kept of it.
	r.Members.OnRemove(r.queues.Remove)
	r.Members.OnRemove(r.forgetMember)
	if err := mgr.Add(r.queues); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).Named("execution").
		WithOptions(r.Shards.Options(controller.Options{MaxConcurrentReconciles: workers})).
		For(&workv1alpha1.Work{}, builder.WithPredicates(specOrDeletion())).
		WatchesRawSource(r.Members.Source("execution", MemberEventHandler(mgr.GetClient())))
	return r.Shards.Complete(b, shard.ListFrom(mgr.GetCache(), func() client.ObjectList { return &workv1alpha1.WorkList{} }), r)
}

// specOrDeletion passes Work events other than status updates.
func specOrDeletion() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld, e.ObjectNew
			return o.GetGeneration() != n.GetGeneration() || (o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil)
		},
	}
}

// MemberEventHandler maps events from the member connection manager to Works: a member
// (re)connecting or disconnecting brings back every Work of that cluster; a change to a
// member object brings back the Work named in its annotations.
func MemberEventHandler(c client.Reader) handler.TypedEventHandler[client.Object, reconcile.Request] {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		if _, ok := o.(*clusterv1alpha1.Cluster); ok {
			works := &workv1alpha1.WorkList{}
			// Only the keys are read: no copy of every Work of the cluster.
			if err := c.List(ctx, works, client.InNamespace(wellknown.ExecutionNamespace(o.GetName())), client.UnsafeDisableDeepCopy); err != nil {
				return nil
			}
			out := make([]reconcile.Request, 0, len(works.Items))
			for i := range works.Items {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&works.Items[i])})
			}
			return out
		}
		a := o.GetAnnotations()
		if a[wellknown.WorkNameAnnotation] == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: a[wellknown.WorkNamespaceAnnotation], Name: a[wellknown.WorkNameAnnotation]}}}
	})
}
