// Package rebalancer is the WorkloadRebalancer reconciler.
//
// For each workload a rebalancer names, it finds the workload's binding (a ResourceBinding in
// the workload's namespace, or a ClusterResourceBinding for a cluster-scoped workload, named
// as the detector names them) and sets the binding's spec.rescheduleTriggeredAt to the
// rebalancer's creation time. The scheduler then schedules the binding again from scratch,
// ignoring where its replicas are now. Each workload is triggered once: its result, Successful
// or Failed (ReferencedBindingNotFound), is kept in status.observedWorkloads, and workloads
// added to spec.workloads later are triggered when they appear. When every workload has a
// result the rebalancer records status.finishTime, and it is deleted
// spec.ttlSecondsAfterFinished later when that is set.
package rebalancer

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	appsv1alpha1 "github.com/flotilla-io/flotilla/api/apps/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers/detector"
	"github.com/flotilla-io/flotilla/internal/bindings"
	"github.com/flotilla-io/flotilla/internal/rebalance"
)

const (
	// ControllerName names the controller, its logger and its events.
	ControllerName = "workload-rebalancer"
	// FieldOwner is the field manager of the status the controller applies and of the
	// bindings' spec.rescheduleTriggeredAt.
	FieldOwner = "flotilla-workload-rebalancer"
)

// Reconciler reconciles WorkloadRebalancers. SetupWithManager fills the dependencies left
// unset from the manager.
type Reconciler struct {
	// Client reads rebalancers from the manager's cache and writes to the host.
	Client client.Client
	// APIReader reads bindings from the apiserver: a binding created just before the
	// rebalancer must not be reported missing because the cache has not seen it yet.
	APIReader client.Reader
	// Recorder records events on rebalancers.
	Recorder events.EventRecorder
	// Clock dates finishTime and the TTL.
	Clock clock.PassiveClock
}

// +kubebuilder:rbac:groups=apps.karmada.io,resources=workloadrebalancers,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=apps.karmada.io,resources=workloadrebalancers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=work.karmada.io,resources=resourcebindings;clusterresourcebindings,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the controller.
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
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	return ctrl.NewControllerManagedBy(mgr).Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(workers, 1)}).
		// The controller's own status writes do not wake it; the TTL is a RequeueAfter.
		For(&appsv1alpha1.WorkloadRebalancer{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(r)
}

// Reconcile triggers the workloads that have no result yet, writes the status, and deletes
// a finished rebalancer whose TTL has passed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	wr := &appsv1alpha1.WorkloadRebalancer{}
	if err := r.Client.Get(ctx, req.NamespacedName, wr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if wr.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	status, err := r.triggerPending(ctx, wr)
	if werr := r.writeStatus(ctx, wr, status); werr != nil {
		return ctrl.Result{}, fmt.Errorf("write status: %w", werr)
	}
	if err != nil {
		return ctrl.Result{}, err // the workloads without a result are tried again
	}
	return r.expire(ctx, wr, status)
}

// triggerPending triggers each workload without a result and returns the new status. It
// stops at the first error other than a missing binding; the status still holds the results
// obtained so far.
func (r *Reconciler) triggerPending(ctx context.Context, wr *appsv1alpha1.WorkloadRebalancer) (*appsv1alpha1.WorkloadRebalancerStatus, error) {
	status := wr.Status.DeepCopy()
	status.ObservedGeneration = wr.Generation
	observed, pending := rebalance.Plan(wr.Spec.Workloads, wr.Status.ObservedWorkloads)
	var err error
	for _, w := range pending {
		var o appsv1alpha1.ObservedWorkload
		if o, err = r.trigger(ctx, wr, w); err != nil {
			err = fmt.Errorf("trigger %s %s: %w", w.Kind, workloadKey(w), err)
			break
		}
		observed = append(observed, o)
	}
	status.ObservedWorkloads, _ = rebalance.Plan(wr.Spec.Workloads, observed) // in spec order
	switch {
	case !rebalance.Finished(wr.Spec.Workloads, status.ObservedWorkloads):
		status.FinishTime = nil
	case len(pending) > 0 || status.FinishTime == nil:
		now := metav1.NewTime(r.Clock.Now())
		status.FinishTime = &now
		failed := 0
		for _, o := range status.ObservedWorkloads {
			if o.Result == appsv1alpha1.RebalanceFailed {
				failed++
			}
		}
		r.Recorder.Eventf(wr, nil, corev1.EventTypeNormal, appsv1alpha1.EventReasonRebalanceFinished, "Rebalance",
			"Finished: %d workload(s) triggered, %d failed", len(status.ObservedWorkloads)-failed, failed)
	}
	return status, err
}

// trigger sets the workload's binding's spec.rescheduleTriggeredAt to the rebalancer's
// creation time, unless it already holds that time or a later one.
func (r *Reconciler) trigger(ctx context.Context, wr *appsv1alpha1.WorkloadRebalancer, w appsv1alpha1.Workload) (appsv1alpha1.ObservedWorkload, error) {
	log := ctrl.LoggerFrom(ctx)
	b, err := r.binding(ctx, w)
	if err != nil {
		return appsv1alpha1.ObservedWorkload{}, err
	}
	if b == nil {
		r.Recorder.Eventf(wr, nil, corev1.EventTypeWarning, appsv1alpha1.EventReasonRescheduleFailed, "Rebalance",
			"%s %s: no binding %s (the workload does not exist or no policy propagates it)", w.Kind, workloadKey(w), bindingKey(w))
		return appsv1alpha1.ObservedWorkload{Workload: w, Result: appsv1alpha1.RebalanceFailed, Reason: appsv1alpha1.RebalanceReferencedBindingNotFound}, nil
	}
	if at, ok := rebalance.TriggerTime(wr.CreationTimestamp, bindings.Spec(b).RescheduleTriggeredAt); ok {
		patch, err := json.Marshal(map[string]any{"spec": map[string]any{"rescheduleTriggeredAt": at}})
		if err != nil {
			return appsv1alpha1.ObservedWorkload{}, err
		}
		// The binding's uid and resourceVersion are not checked: the patch sets one field,
		// and the binding found is the workload's whatever else changed.
		if err := r.Client.Patch(ctx, b, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(FieldOwner)); err != nil {
			if apierrors.IsNotFound(err) {
				return appsv1alpha1.ObservedWorkload{Workload: w, Result: appsv1alpha1.RebalanceFailed, Reason: appsv1alpha1.RebalanceReferencedBindingNotFound}, nil
			}
			return appsv1alpha1.ObservedWorkload{}, err
		}
		log.Info("Triggered a reschedule", bindings.Kind(b), client.ObjectKeyFromObject(b).String(), "triggeredAt", at.UTC().Format(time.RFC3339))
	}
	r.Recorder.Eventf(wr, nil, corev1.EventTypeNormal, appsv1alpha1.EventReasonRescheduleTriggered, "Rebalance",
		"%s %s: binding %s rescheduled from scratch", w.Kind, workloadKey(w), bindingKey(w))
	return appsv1alpha1.ObservedWorkload{Workload: w, Result: appsv1alpha1.RebalanceSuccessful}, nil
}

// binding returns the workload's binding, or nil when there is none (or the binding found
// is another workload's).
func (r *Reconciler) binding(ctx context.Context, w appsv1alpha1.Workload) (client.Object, error) {
	var b client.Object = &workv1alpha2.ResourceBinding{}
	if w.Namespace == "" {
		b = &workv1alpha2.ClusterResourceBinding{}
	}
	key := types.NamespacedName{Namespace: w.Namespace, Name: detector.BindingName(w.Kind, w.Name)}
	if err := r.APIReader.Get(ctx, key, b); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	res := bindings.Spec(b).Resource
	wantGV, err1 := schema.ParseGroupVersion(w.APIVersion)
	gotGV, err2 := schema.ParseGroupVersion(res.APIVersion)
	if err1 != nil || err2 != nil || wantGV.Group != gotGV.Group || res.Kind != w.Kind || res.Name != w.Name || res.Namespace != w.Namespace {
		return nil, nil
	}
	return b, nil
}

// writeStatus applies the status when it changed.
func (r *Reconciler) writeStatus(ctx context.Context, wr *appsv1alpha1.WorkloadRebalancer, status *appsv1alpha1.WorkloadRebalancerStatus) error {
	if equality.Semantic.DeepEqual(&wr.Status, status) {
		return nil
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(status)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"status": content}}
	u.SetGroupVersionKind(appsv1alpha1.GroupVersion.WithKind("WorkloadRebalancer"))
	u.SetName(wr.Name)
	u.SetUID(wr.UID) // a rebalancer deleted and created again under the name is not written
	return r.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership)
}

// expire deletes a finished rebalancer whose TTL has passed, or comes back when it will have.
func (r *Reconciler) expire(ctx context.Context, wr *appsv1alpha1.WorkloadRebalancer, status *appsv1alpha1.WorkloadRebalancerStatus) (ctrl.Result, error) {
	at, ok := rebalance.Expiry(status.FinishTime, wr.Spec.TTLSecondsAfterFinished)
	if !ok {
		return ctrl.Result{}, nil
	}
	if wait := at.Sub(r.Clock.Now()); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	// Only this rebalancer, not one created again under its name.
	err := r.Client.Delete(ctx, wr, client.Preconditions{UID: &wr.UID})
	if err := client.IgnoreNotFound(err); err != nil {
		return ctrl.Result{}, fmt.Errorf("delete finished rebalancer: %w", err)
	}
	ctrl.LoggerFrom(ctx).Info("Deleted a finished rebalancer", "ttlSecondsAfterFinished", *wr.Spec.TTLSecondsAfterFinished)
	return ctrl.Result{}, nil
}

func workloadKey(w appsv1alpha1.Workload) string {
	if w.Namespace == "" {
		return w.Name
	}
	return w.Namespace + "/" + w.Name
}

func bindingKey(w appsv1alpha1.Workload) string {
	kind := "ResourceBinding"
	if w.Namespace == "" {
		kind = "ClusterResourceBinding"
	}
	name := detector.BindingName(w.Kind, w.Name)
	if w.Namespace != "" {
		name = w.Namespace + "/" + name
	}
	return strings.Join([]string{kind, name}, " ")
}
