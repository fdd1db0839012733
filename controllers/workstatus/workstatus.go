// Package workstatus brings status back from members: WorkReconciler reflects each member
// object's status and health into its Work's status.manifestStatuses, and
// AggregateReconciler sums a binding's Works into the binding's status.aggregatedStatus and
// its FullyApplied condition.
package workstatus

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/execution"
	"github.com/flotilla-io/flotilla/internal/bindings"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/memo"
	"github.com/flotilla-io/flotilla/internal/shard"
)

// StatusInterpreter reads status and health from member objects.
type StatusInterpreter = execution.StatusInterpreter

// WorkReconciler reflects member status into Works.
type WorkReconciler struct {
	// Shards, when set, is this replica's share of a sharded manager: only the keys of its
	// shards are reconciled (nil: every key).
	Shards *shard.Set

	Client      client.Client
	Members     *member.Manager
	Interpreter StatusInterpreter

	requeue chan event.GenericEvent
	// written is, by Work, the manifest statuses this controller last wrote (their digest,
	// with the Work's UID): see reflected.
	written memo.Map[types.NamespacedName, reflectedStatus]
}

// reflectedStatus sums up the manifest statuses written to one Work.
type reflectedStatus struct {
	uid    types.UID
	digest [sha256.Size]byte
}

func reflectedMemo(work *workv1alpha1.Work, statuses []workv1alpha1.ManifestStatus) reflectedStatus {
	data, _ := json.Marshal(statuses)
	return reflectedStatus{uid: work.UID, digest: sha256.Sum256(data)}
}

// reflected reports whether the Work's status already holds these manifest statuses. Once
// this controller has written them, what it last wrote is what the status holds: the cached
// Work may not show that write yet (its event does not bring the Work back here), and a
// member object that went back to its earlier status would otherwise find the stale copy
// already right and leave the newer write in place. Before the first write, the cached
// status is all there is to go by.
func (r *WorkReconciler) reflected(work *workv1alpha1.Work, statuses []workv1alpha1.ManifestStatus) bool {
	if last, ok := r.written.Load(client.ObjectKeyFromObject(work)); ok && last.uid == work.UID {
		return last == reflectedMemo(work, statuses)
	}
	return manifestStatusesEqual(work.Status.ManifestStatuses, statuses)
}

// RequeueKind reflects again the Works that carry a kind: its customization changed, so its
// status and health may read differently now.
func (r *WorkReconciler) RequeueKind(ctx context.Context, gk schema.GroupKind) {
	r.RequeueMatching(ctx, func(k schema.GroupKind) bool { return k == gk })
}

// RequeueMatching is RequeueKind for every kind match accepts.
func (r *WorkReconciler) RequeueMatching(ctx context.Context, match func(schema.GroupKind) bool) {
	if r.requeue == nil {
		return
	}
	list := &workv1alpha1.WorkList{}
	if err := r.Client.List(ctx, list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Cannot list Works to reflect again")
		return
	}
	for i := range list.Items {
		w := &list.Items[i]
		for _, mf := range w.Spec.Workload.Manifests {
			var tm metav1.TypeMeta
			if json.Unmarshal(mf.Raw, &tm) == nil && match(tm.GroupVersionKind().GroupKind()) {
				r.requeue <- event.GenericEvent{Object: w}
				break
			}
		}
	}
}

// notSyncedRetry is when a Work whose member objects' kind the member cache has not synced is
// looked at again. The sync itself brings the Work back (each object arrives as an event);
// this is the safety net.
const notSyncedRetry = 5 * time.Second

// +kubebuilder:rbac:groups=work.karmada.io,resources=works,verbs=get;list;watch
// +kubebuilder:rbac:groups=work.karmada.io,resources=works/status,verbs=get;update;patch

// Reconcile reflects one Work's member objects.
func (r *WorkReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cluster, ok := bindings.ClusterOfWork(req.Namespace)
	if !ok {
		return ctrl.Result{}, nil
	}
	work := &workv1alpha1.Work{}
	if err := r.Client.Get(ctx, req.NamespacedName, work); err != nil {
		if apierrors.IsNotFound(err) {
			r.written.Delete(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if work.DeletionTimestamp != nil {
		r.written.Delete(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	if c := meta.FindStatusCondition(work.Status.Conditions, wellknown.WorkConditionApplied); c == nil ||
		c.ObservedGeneration != work.Generation || c.Status != metav1.ConditionTrue {
		// The execution controller writes the first statuses with the Applied condition; its
		// status write brings the Work back here.
		return ctrl.Result{}, nil
	}
	m, err := r.Members.Get(cluster)
	if err != nil {
		return ctrl.Result{}, nil // the reconnect event brings the Work back
	}
	objs := make([]*unstructured.Unstructured, len(work.Spec.Workload.Manifests))
	for i, mf := range work.Spec.Workload.Manifests {
		want := &unstructured.Unstructured{}
		if err := want.UnmarshalJSON(mf.Raw); err != nil {
			continue // the execution controller reports bad manifests
		}
		gvk := want.GroupVersionKind()
		if err := r.Members.Watch(ctx, cluster, gvk); err != nil {
			return ctrl.Result{}, nil
		}
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(gvk)
		// This runs on the controller's shared workers: it never waits for a member cache
		// to sync (NoWait).
		if err := m.NoWait().Get(ctx, client.ObjectKeyFromObject(want), cur); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			if errors.Is(err, member.ErrNotSynced) {
				ctrl.LoggerFrom(ctx).V(1).Info("Member cache has not synced the kind; looking again later", "error", err.Error())
				return ctrl.Result{RequeueAfter: notSyncedRetry}, nil
			}
			return ctrl.Result{}, nil
		}
		objs[i] = cur
	}
	statuses := execution.ManifestStatuses(m.Mapper, r.Interpreter, objs)
	if r.reflected(work, statuses) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.apply(ctx, work, statuses)
}

func manifestStatusesEqual(a, b []workv1alpha1.ManifestStatus) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Identifier != b[i].Identifier || a[i].Health != b[i].Health || !rawEqual(a[i].Status, b[i].Status) {
			return false
		}
	}
	return true
}

func rawEqual(a, b *runtime.RawExtension) bool {
	if a == nil || b == nil {
		return a == b
	}
	var x, y any
	if json.Unmarshal(a.Raw, &x) != nil || json.Unmarshal(b.Raw, &y) != nil {
		return false
	}
	return equality.Semantic.DeepEqual(x, y)
}

// apply writes status.manifestStatuses. This controller is their only writer once they
// exist (the execution controller writes the first ones), so a merge patch of that field
// overwrites no one.
// The patch always carries them: it is computed against a copy without them, not against the
// cached Work, which may show them as they were before the last write (a patch against it
// could be empty, and the host would keep that write's value).
func (r *WorkReconciler) apply(ctx context.Context, work *workv1alpha1.Work, statuses []workv1alpha1.ManifestStatus) error {
	before := work.DeepCopy()
	before.Status.ManifestStatuses = nil
	work.Status.ManifestStatuses = statuses
	if err := r.Client.Status().Patch(ctx, work, client.MergeFrom(before)); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.written.Store(client.ObjectKeyFromObject(work), reflectedMemo(work, statuses))
	return nil
}

// SetupWithManager registers the controller.
func (r *WorkReconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	r.requeue = make(chan event.GenericEvent, 1024)
	// What was last written of a shard another replica held may be out of date.
	r.Shards.OnLost(func(int) { r.written.Clear() })
	b := ctrl.NewControllerManagedBy(mgr).Named("workstatus").
		WithOptions(r.Shards.Options(controller.Options{MaxConcurrentReconciles: workers})).
		For(&workv1alpha1.Work{}, builder.WithPredicates(appliedChanged())).
		WatchesRawSource(source.Channel(r.requeue, &handler.EnqueueRequestForObject{})).
		WatchesRawSource(r.Members.Source("workstatus", execution.MemberEventHandler(mgr.GetClient())))
	return r.Shards.Complete(b, shard.ListFrom(mgr.GetCache(), func() client.ObjectList { return &workv1alpha1.WorkList{} }), r)
}

// appliedChanged passes Work creates, spec changes, and changes of the Applied condition (the
// execution controller's first status write hands the Work over to this controller).
func appliedChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld.(*workv1alpha1.Work), e.ObjectNew.(*workv1alpha1.Work)
			if o.Generation != n.Generation {
				return true
			}
			oc := meta.FindStatusCondition(o.Status.Conditions, wellknown.WorkConditionApplied)
			nc := meta.FindStatusCondition(n.Status.Conditions, wellknown.WorkConditionApplied)
			return (oc == nil) != (nc == nil) || (oc != nil && (oc.Status != nc.Status || oc.ObservedGeneration != nc.ObservedGeneration))
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
