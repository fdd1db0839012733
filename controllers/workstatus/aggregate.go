package workstatus

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/bindings"
)

// AggregateFieldOwner is the field manager of status.aggregatedStatus and FullyApplied.
const AggregateFieldOwner = "flotilla-binding-status"

// AggregateReconciler writes a binding's status from its Works.
type AggregateReconciler struct {
	Client     client.Client
	Recorder   events.EventRecorder
	NewBinding func() client.Object
}

// +kubebuilder:rbac:groups=work.karmada.io,resources=resourcebindings/status;clusterresourcebindings/status,verbs=get;update;patch

// Reconcile aggregates one binding.
func (r *AggregateReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rb := r.NewBinding()
	if err := r.Client.Get(ctx, req.NamespacedName, rb); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if rb.GetDeletionTimestamp() != nil {
		return ctrl.Result{}, nil
	}
	spec, status := bindings.Spec(rb), bindings.Status(rb)
	list := &workv1alpha1.WorkList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{bindings.IndexWorkByBinding: bindings.PermanentID(rb)}); err != nil {
		return ctrl.Result{}, err
	}
	works := map[string]*workv1alpha1.Work{}
	for i := range list.Items {
		if c, ok := bindings.ClusterOfWork(list.Items[i].Namespace); ok {
			works[c] = &list.Items[i]
		}
	}

	if inFlight(spec, works) {
		// A Work is being created or applied; its next event brings the binding back, so
		// intermediate states are not written.
		return ctrl.Result{}, nil
	}
	items := make([]workv1alpha2.AggregatedStatusItem, 0, len(spec.Clusters))
	var notApplied []string
	for _, tc := range spec.Clusters {
		item, applied := aggregatedItem(tc.Name, works[tc.Name], spec)
		items = append(items, item)
		if !applied {
			notApplied = append(notApplied, tc.Name)
		}
	}
	slices.SortFunc(items, func(a, b workv1alpha2.AggregatedStatusItem) int {
		if a.ClusterName < b.ClusterName {
			return -1
		}
		if a.ClusterName > b.ClusterName {
			return 1
		}
		return 0
	})

	cond := metav1.Condition{Type: wellknown.ConditionFullyApplied, ObservedGeneration: rb.GetGeneration()}
	switch {
	case len(spec.Clusters) == 0:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, wellknown.ReasonNotFullyApplied, "Not scheduled to any cluster yet"
	case len(notApplied) == 0:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, wellknown.ReasonFullyApplied, "All works have been successfully applied"
	default:
		cond.Status, cond.Reason = metav1.ConditionFalse, wellknown.ReasonNotFullyApplied
		cond.Message = fmt.Sprintf("Not applied on %d of %d clusters: %v", len(notApplied), len(spec.Clusters), notApplied)
	}
	if bindings.ConditionCurrent(status.Conditions, cond) && equality.Semantic.DeepEqual(status.AggregatedStatus, items) {
		return ctrl.Result{}, nil
	}
	wasApplied := meta.IsStatusConditionTrue(status.Conditions, wellknown.ConditionFullyApplied)
	if err := bindings.ApplyStatus(ctx, r.Client, rb, AggregateFieldOwner, map[string]any{
		"conditions":       []metav1.Condition{bindings.Condition(status.Conditions, cond)},
		"aggregatedStatus": items,
	}); err != nil {
		return ctrl.Result{}, err
	}
	if cond.Status == metav1.ConditionTrue && !wasApplied {
		r.Recorder.Eventf(rb, nil, corev1.EventTypeNormal, wellknown.EventReasonAggregateStatusSucceed, "Aggregate",
			"Update resourceBinding(%s) with AggregatedStatus successfully", req.String())
	}
	return ctrl.Result{}, nil
}

// inFlight reports whether some scheduled cluster's Work is about to change: not created yet
// (and not held back by suspension), or not yet applied at its current generation.
func inFlight(spec *workv1alpha2.ResourceBindingSpec, works map[string]*workv1alpha1.Work) bool {
	for _, tc := range spec.Clusters {
		w := works[tc.Name]
		if w == nil {
			if !bindings.DispatchSuspended(spec, tc.Name) {
				return true
			}
			continue
		}
		if ptr.Deref(w.Spec.SuspendDispatching, false) {
			continue
		}
		c := meta.FindStatusCondition(w.Status.Conditions, wellknown.WorkConditionApplied)
		if c == nil || c.ObservedGeneration != w.Generation {
			return true
		}
	}
	return false
}

// aggregatedItem is one cluster's entry, and whether its Work is applied for the Work's
// current generation.
func aggregatedItem(cluster string, w *workv1alpha1.Work, spec *workv1alpha2.ResourceBindingSpec) (workv1alpha2.AggregatedStatusItem, bool) {
	item := workv1alpha2.AggregatedStatusItem{ClusterName: cluster, Health: workv1alpha1.ResourceUnknownHealth}
	if w == nil {
		item.AppliedMessage = "Work not created yet"
		if bindings.DispatchSuspended(spec, cluster) {
			item.AppliedMessage = "Dispatching is suspended"
		}
		return item, false
	}
	c := meta.FindStatusCondition(w.Status.Conditions, wellknown.WorkConditionApplied)
	switch {
	case c == nil:
		item.AppliedMessage = "Not applied yet"
	case c.ObservedGeneration != w.Generation:
		item.AppliedMessage = "The latest manifest is not applied yet"
	case c.Status == metav1.ConditionTrue:
		item.Applied = true
	default:
		item.AppliedMessage = c.Message
	}
	if len(w.Status.ManifestStatuses) > 0 {
		ms := w.Status.ManifestStatuses[0]
		item.Status = ms.Status
		if ms.Health != "" {
			item.Health = ms.Health
		}
	}
	return item, item.Applied && !ptr.Deref(w.Spec.SuspendDispatching, false)
}

// SetupWithManager registers the aggregator for one kind of binding.
func (r *AggregateReconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	sample := r.NewBinding()
	isCluster := bindings.Kind(sample) == "ClusterResourceBinding"
	name := "binding-status"
	if isCluster {
		name = "clusterbinding-status"
	}
	return ctrl.NewControllerManagedBy(mgr).Named(name).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(sample, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&workv1alpha1.Work{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			key, c, ok := bindings.FromWork(o)
			if !ok || c != isCluster {
				return nil
			}
			return []reconcile.Request{{NamespacedName: key}}
		}), builder.WithPredicates(predicate.Funcs{GenericFunc: func(event.GenericEvent) bool { return false }})).
		Complete(r)
}
