// Package federatedresourcequota is the FederatedResourceQuota controller. For each quota it
// keeps one Work per static assignment, in the member's execution namespace
// (karmada-es-<cluster>), carrying a ResourceQuota named as the quota in the quota's
// namespace: the execution controller applies it to the member, and the work-status
// controller reflects its status back onto the Work. The controller never writes to members.
//
// Reconcile runs in named phases: desired (internal/frq renders the Works), write (create or
// patch them), prune (delete the Works of assignments that went), report (status from the
// Works: aggregatedStatus, overallUsed and a Ready condition). A quota being deleted has its
// Works deleted first (its finalizer waits for them). spec.overall is not enforced here but
// by the scheduler's FederatedResourceQuota filter plugin.
package federatedresourcequota

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/bindings"
	"github.com/flotilla-io/flotilla/internal/frq"
)

const (
	// ControllerName names the controller, its field owner and its events.
	ControllerName = "federated-resource-quota-controller"
	// DefaultWorkers is how many quotas are reconciled at once.
	DefaultWorkers = 2
	// notJoinedRetry is when a quota naming a cluster with no execution namespace (not joined
	// yet) is looked at again.
	notJoinedRetry = 30 * time.Second
)

// Reconciler reconciles FederatedResourceQuotas. SetupWithManager fills what is left unset.
type Reconciler struct {
	// Client reads quotas and Works from the manager's cache and writes them.
	Client client.Client
	// Recorder records events on quotas.
	Recorder events.EventRecorder
}

// +kubebuilder:rbac:groups=policy.karmada.io,resources=federatedresourcequotas,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=policy.karmada.io,resources=federatedresourcequotas/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=work.karmada.io,resources=works,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings one quota's Works and status in line with its spec.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	q := &policyv1alpha1.FederatedResourceQuota{}
	if err := r.Client.Get(ctx, req.NamespacedName, q); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	current, err := r.works(ctx, q)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !q.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, q, current)
	}
	if !controllerutil.ContainsFinalizer(q, frq.Finalizer) {
		before := q.DeepCopy()
		controllerutil.AddFinalizer(q, frq.Finalizer)
		if err := r.Client.Patch(ctx, q, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding the finalizer: %w", err)
		}
	}
	// desired
	desired, err := frq.Desired(q)
	if err != nil {
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	// write
	writeErrs, err := r.write(ctx, q, desired, current)
	if err != nil {
		return ctrl.Result{}, err
	}
	// prune
	if err := r.prune(ctx, q, desired, current); err != nil {
		return ctrl.Result{}, err
	}
	// report
	if err := r.report(ctx, q, current, writeErrs); err != nil {
		return ctrl.Result{}, err
	}
	if len(writeErrs) > 0 {
		return ctrl.Result{RequeueAfter: notJoinedRetry}, nil
	}
	return ctrl.Result{}, nil
}

// works returns the quota's Works by cluster, from the cache.
func (r *Reconciler) works(ctx context.Context, q *policyv1alpha1.FederatedResourceQuota) (map[string]*workv1alpha1.Work, error) {
	list := &workv1alpha1.WorkList{}
	if err := r.Client.List(ctx, list, client.MatchingLabels(frq.WorkLabels(q.Namespace, q.Name))); err != nil {
		return nil, fmt.Errorf("listing the Works of FederatedResourceQuota %s/%s: %w", q.Namespace, q.Name, err)
	}
	out := make(map[string]*workv1alpha1.Work, len(list.Items))
	for i := range list.Items {
		if c, ok := bindings.ClusterOfWork(list.Items[i].Namespace); ok {
			out[c] = &list.Items[i]
		}
	}
	return out, nil
}

// write creates or patches each desired Work. A cluster whose execution namespace does not
// exist (not joined) or whose Work is refused is reported by cluster, not as an error; other
// errors are returned. current is updated with what was written.
func (r *Reconciler) write(ctx context.Context, q *policyv1alpha1.FederatedResourceQuota, desired []*workv1alpha1.Work, current map[string]*workv1alpha1.Work) (map[string]string, error) {
	errs := map[string]string{}
	for _, want := range desired {
		cluster, _ := bindings.ClusterOfWork(want.Namespace)
		cur := current[cluster]
		if cur != nil && !cur.DeletionTimestamp.IsZero() {
			errs[cluster] = "the previous Work is still being deleted"
			continue
		}
		if cur == nil {
			controllerutil.AddFinalizer(want, wellknown.ExecutionControllerFinalizer)
			want.Labels[wellknown.WorkPermanentIDLabel] = string(q.UID) + "-" + cluster
			err := r.Client.Create(ctx, want, client.FieldOwner(ControllerName))
			switch {
			case err == nil:
				current[cluster] = want
				r.Recorder.Eventf(q, nil, corev1.EventTypeNormal, policyv1alpha1.EventReasonQuotaSynced, "Write",
					"Wrote the ResourceQuota of cluster %s", cluster)
			case apierrors.IsNotFound(err):
				errs[cluster] = fmt.Sprintf("cluster is not joined (no execution namespace %s)", want.Namespace)
			case apierrors.IsInvalid(err) || apierrors.IsForbidden(err):
				errs[cluster] = err.Error()
			case apierrors.IsAlreadyExists(err):
				return nil, fmt.Errorf("creating the Work of cluster %s: %w", cluster, err) // the cache lags: retry
			default:
				return nil, fmt.Errorf("creating the Work of cluster %s: %w", cluster, err)
			}
			continue
		}
		before := cur.DeepCopy()
		if cur.Labels == nil {
			cur.Labels = map[string]string{}
		}
		maps.Copy(cur.Labels, want.Labels)
		cur.Spec.Workload = want.Spec.Workload
		if equality.Semantic.DeepEqual(before.Labels, cur.Labels) && manifestsEqual(before.Spec.Workload.Manifests, cur.Spec.Workload.Manifests) {
			continue
		}
		if err := r.Client.Patch(ctx, cur, client.MergeFrom(before), client.FieldOwner(ControllerName)); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("patching the Work of cluster %s: %w", cluster, err) // gone meanwhile: retry
			}
			return nil, fmt.Errorf("patching the Work of cluster %s: %w", cluster, err)
		}
		r.Recorder.Eventf(q, nil, corev1.EventTypeNormal, policyv1alpha1.EventReasonQuotaSynced, "Write",
			"Updated the ResourceQuota of cluster %s", cluster)
	}
	return errs, nil
}

// prune deletes the Works of clusters no longer assigned, and with them the member
// ResourceQuotas.
func (r *Reconciler) prune(ctx context.Context, q *policyv1alpha1.FederatedResourceQuota, desired []*workv1alpha1.Work, current map[string]*workv1alpha1.Work) error {
	keep := map[string]bool{}
	for _, w := range desired {
		keep[w.Namespace] = true
	}
	for _, cluster := range slices.Sorted(maps.Keys(current)) {
		w := current[cluster]
		if keep[w.Namespace] || !w.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.Client.Delete(ctx, w, client.Preconditions{UID: &w.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting the Work of cluster %s: %w", cluster, err)
		}
		delete(current, cluster)
		r.Recorder.Eventf(q, nil, corev1.EventTypeNormal, policyv1alpha1.EventReasonQuotaSynced, "Prune",
			"Removed the ResourceQuota of cluster %s, no longer assigned", cluster)
	}
	return nil
}

// report writes the aggregated status, and records an event when Ready changes.
func (r *Reconciler) report(ctx context.Context, q *policyv1alpha1.FederatedResourceQuota, current map[string]*workv1alpha1.Work, writeErrs map[string]string) error {
	prev := q.Status.DeepCopy()
	rep := frq.Aggregate(q, current, writeErrs)
	if equality.Semantic.DeepEqual(*prev, rep.Status) {
		return nil
	}
	before := q.DeepCopy()
	q.Status = rep.Status
	if err := r.Client.Status().Patch(ctx, q, client.MergeFrom(before), client.FieldOwner(ControllerName)); err != nil {
		return client.IgnoreNotFound(err)
	}
	var was string
	for _, c := range prev.Conditions {
		if c.Type == rep.Ready.Type {
			was = string(c.Status)
		}
	}
	if was == string(rep.Ready.Status) {
		return nil
	}
	typ, reason := corev1.EventTypeNormal, policyv1alpha1.EventReasonQuotaStatusCollected
	if rep.Ready.Status != "True" {
		if rep.Ready.Reason != policyv1alpha1.ReasonQuotaApplyFailed {
			return nil // pending is no news
		}
		typ, reason = corev1.EventTypeWarning, policyv1alpha1.EventReasonQuotaSyncFailed
	}
	r.Recorder.Eventf(q, nil, typ, reason, "Report", "%s", rep.Ready.Message)
	return nil
}

// finalize deletes the quota's Works, then, once they are gone, its finalizer.
func (r *Reconciler) finalize(ctx context.Context, q *policyv1alpha1.FederatedResourceQuota, current map[string]*workv1alpha1.Work) error {
	if !controllerutil.ContainsFinalizer(q, frq.Finalizer) {
		return nil
	}
	var errs []error
	for cluster, w := range current {
		if w.DeletionTimestamp.IsZero() {
			if err := r.Client.Delete(ctx, w); client.IgnoreNotFound(err) != nil {
				errs = append(errs, fmt.Errorf("deleting the Work of cluster %s: %w", cluster, err))
			}
		}
	}
	if len(errs) > 0 || len(current) > 0 {
		return errors.Join(errs...) // each Work's deletion brings the quota back
	}
	before := q.DeepCopy()
	controllerutil.RemoveFinalizer(q, frq.Finalizer)
	return client.IgnoreNotFound(r.Client.Patch(ctx, q, client.MergeFrom(before)))
}

// manifestsEqual compares manifests as JSON values: the apiserver may store them with keys
// in another order.
func manifestsEqual(a, b []workv1alpha1.Manifest) bool {
	return slices.EqualFunc(a, b, func(x, y workv1alpha1.Manifest) bool {
		var u, v any
		if json.Unmarshal(x.Raw, &u) != nil || json.Unmarshal(y.Raw, &v) != nil {
			return false
		}
		return equality.Semantic.DeepEqual(u, v)
	})
}

// SetupWithManager registers the controller with mgr. workers <= 0 takes DefaultWorkers.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder(ControllerName)
	}
	if workers <= 0 {
		workers = DefaultWorkers
	}
	return ctrl.NewControllerManagedBy(mgr).Named("federatedresourcequota").
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&policyv1alpha1.FederatedResourceQuota{}).
		Watches(&workv1alpha1.Work{}, handler.EnqueueRequestsFromMapFunc(quotaOfWork), builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetLabels()[frq.NameLabel] != ""
		}))).
		Complete(r)
}

// quotaOfWork maps a Work to the quota its labels name.
func quotaOfWork(_ context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	if l[frq.NameLabel] == "" || l[frq.NamespaceLabel] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: l[frq.NamespaceLabel], Name: l[frq.NameLabel]}}}
}
