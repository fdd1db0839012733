package workstatus

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
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
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/memo"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	"github.com/flotilla-io/flotilla/internal/shard"
)

// AggregateFieldOwner is the field manager of status.aggregatedStatus and FullyApplied.
const AggregateFieldOwner = "flotilla-binding-status"

// TemplateStatusFieldOwner is the field manager of templates' status.
const TemplateStatusFieldOwner = "flotilla-template-status"

// EventReasonTemplateStatusFailed is the Warning event on a binding whose members' status
// could not be summed into its template's, or whose template's status the apiserver refused:
// Karmada's AggregateStatusFailed, so that alerts on Karmada's reason fire.
const EventReasonTemplateStatusFailed = wellknown.EventReasonAggregateStatusFailed

// TemplateStatusInterpreter sums members' reflected statuses into a template's status.
type TemplateStatusInterpreter interface {
	AggregateStatus(template *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem) (map[string]any, error)
}

// AggregateReconciler writes a binding's status from its Works, and the fleet's status onto
// the binding's template.
type AggregateReconciler struct {
	// Shards, when set, is this replica's share of a sharded manager: only the keys of its
	// shards are reconciled (nil: every key).
	Shards *shard.Set

	Client     client.Client
	Recorder   events.EventRecorder
	NewBinding func() client.Object
	// Interpreter computes templates' status; nil leaves templates' status alone.
	Interpreter TemplateStatusInterpreter
	// APIReader reads a Job template before its status is written: a Job's status may only
	// move forward (counters, conditions, times), so it is aggregated onto the current one.
	APIReader client.Reader
	// SuccessEvents records AggregateStatusSucceed whenever a binding becomes FullyApplied
	// (--record-success-events). Without it the event is recorded only for a recovery: a
	// binding whose status said it was not fully applied (a Work failed) and now is.
	SuccessEvents bool
	// SchedulerName is the scheduler of this manager (--scheduler-name; "" is
	// default-scheduler): the first placement of its bindings, made at creation, is reported
	// in the first status this controller writes (see schedulerFields).
	SchedulerName string

	// written is, by binding, the template status last written (with the template's UID),
	// so that a status that changes nothing is not written again. A restart forgets it and
	// writes each template's status once more, which repairs any edit made meanwhile.
	written memo.Map[types.NamespacedName, [sha256.Size]byte]
	// writtenBinding is, by binding, what was last written to the binding's status
	// (bindingMemo).
	writtenBinding memo.Map[types.NamespacedName, bindingWritten]
}

// bindingWritten sums up what the aggregator last wrote to a binding's status.
type bindingWritten struct {
	fullyApplied bool
	// digest covers every field the aggregator writes, and the binding's UID and generation.
	// Kept per binding for the manager's lifetime: a digest, not the statuses themselves.
	digest [sha256.Size]byte
}

// bindingMemo sums up the aggregator's fields of a binding's status.
func bindingMemo(rb client.Object, cond metav1.Condition, items []workv1alpha2.AggregatedStatusItem, clustersReady string) bindingWritten {
	data, _ := json.Marshal(items)
	full := fmt.Sprintf("%s/%s/%d/%s/%s/%s/%s", cond.Status, rb.GetUID(), rb.GetGeneration(), cond.Reason, cond.Message, clustersReady, data)
	return bindingWritten{fullyApplied: cond.Status == metav1.ConditionTrue, digest: sha256.Sum256([]byte(full))}
}

// +kubebuilder:rbac:groups=work.karmada.io,resources=resourcebindings/status;clusterresourcebindings/status,verbs=get;update;patch
// Templates' status: any kind can be a template.
// +kubebuilder:rbac:groups=*,resources=*/status,verbs=patch

// Reconcile aggregates one binding.
func (r *AggregateReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rb := r.NewBinding()
	if err := r.Client.Get(ctx, req.NamespacedName, rb); err != nil {
		if apierrors.IsNotFound(err) {
			r.written.Delete(req.NamespacedName)
			r.writtenBinding.Delete(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if rb.GetDeletionTimestamp() != nil {
		r.written.Delete(req.NamespacedName)
		r.writtenBinding.Delete(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	spec, status := bindings.Spec(rb), bindings.Status(rb)
	works, err := bindings.WorksByCluster(ctx, r.Client, rb)
	if err != nil {
		return ctrl.Result{}, err
	}

	if inFlight(spec, works) {
		// A Work is being created or applied; its next event brings the binding back, so
		// intermediate states are not written.
		return ctrl.Result{}, nil
	}
	targets := bindings.Targets(spec)
	if len(targets) == 0 && spec.Placement != nil && meta.FindStatusCondition(status.Conditions, wellknown.ConditionScheduled) == nil {
		// Not scheduled yet: nothing to tell before the scheduler's first answer, whose
		// write brings the binding back (see SetupWithManager).
		return ctrl.Result{}, nil
	}
	items := make([]workv1alpha2.AggregatedStatusItem, 0, len(targets))
	var notApplied []string
	ready := 0
	for _, tc := range targets {
		item, applied := aggregatedItem(tc.Name, works[tc.Name], spec)
		items = append(items, item)
		if !applied {
			notApplied = append(notApplied, tc.Name)
		} else if item.Health == workv1alpha1.ResourceHealthy {
			ready++
		}
	}
	clustersReady := fmt.Sprintf("%d/%d", ready, len(targets))
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
	case len(targets) == 0:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, wellknown.ReasonNotFullyApplied, "Not scheduled to any cluster yet"
	case len(notApplied) == 0:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, wellknown.ReasonFullyApplied, "All works have been successfully applied"
	default:
		cond.Status, cond.Reason = metav1.ConditionFalse, wellknown.ReasonNotFullyApplied
		cond.Message = fmt.Sprintf("Not applied on %d of %d clusters: %v", len(notApplied), len(targets), notApplied)
	}
	// The cached binding may not show the last write yet (each Work's event brings the
	// binding back, but the event of the aggregator's own write does not): once this process
	// has written the binding's status, what it last wrote is the status, so the same status
	// is not written twice, and a status that went back to what the stale copy still shows
	// is written again (it was not, and a binding stayed not FullyApplied with every Work
	// applied). Before its first write, the cached status is all there is to go by.
	memo := bindingMemo(rb, cond, items, clustersReady)
	stale := !bindings.ConditionCurrent(status.Conditions, cond) || !equality.Semantic.DeepEqual(status.AggregatedStatus, items) ||
		status.ClustersReady != clustersReady
	last, written := r.writtenBinding.Load(req.NamespacedName)
	// The binding's status is as it should be and this process has not written it: a
	// manager that has just started (or taken the shard over). The template's status is
	// then read and compared before it is written (see writeTemplateStatus).
	verify := !written && !stale
	if (written && last != memo) || (!written && stale) {
		// What the status said before this write: what this process last wrote, else the
		// cached copy (no condition at all before the first write).
		was := metav1.ConditionUnknown
		if c := meta.FindStatusCondition(status.Conditions, wellknown.ConditionFullyApplied); c != nil {
			was = c.Status
		}
		if written {
			was = metav1.ConditionFalse
			if last.fullyApplied {
				was = metav1.ConditionTrue
			}
		}
		fields := map[string]any{
			"conditions":       []metav1.Condition{bindings.Condition(status.Conditions, cond)},
			"aggregatedStatus": items,
			"clustersReady":    clustersReady,
		}
		apply := bindings.ApplyStatus
		if sched, ok := r.schedulerFields(rb, spec, status); ok {
			fields["conditions"] = append(fields["conditions"].([]metav1.Condition), sched.cond)
			fields["schedulerObservedGeneration"] = sched.observedGeneration
			if sched.lastScheduled != nil {
				fields["lastScheduledTime"] = sched.lastScheduled
			}
			// The scheduler's fields are as the binding read says: a precondition, so that a
			// newer write of the scheduler is never put back.
			apply = bindings.ApplyStatusIfCurrent
		}
		if err := apply(ctx, r.Client, rb, AggregateFieldOwner, fields); err != nil {
			if apierrors.IsConflict(err) {
				// The binding changed since the cache's copy; status-only changes do not
				// bring it back (SetupWithManager), so look again shortly.
				return ctrl.Result{RequeueAfter: conflictRetry}, nil
			}
			return ctrl.Result{}, err
		}
		r.writtenBinding.Store(req.NamespacedName, memo)
		if announceFullyApplied(r.SuccessEvents, was, cond.Status) {
			r.Recorder.Eventf(rb, nil, corev1.EventTypeNormal, wellknown.EventReasonAggregateStatusSucceed, "Aggregate",
				"Update resourceBinding(%s) with AggregatedStatus successfully", req.String())
		}
	}
	return ctrl.Result{}, r.writeTemplateStatus(ctx, req.NamespacedName, rb, spec, works, items, verify)
}

// writeTemplateStatus writes the fleet's status onto the template, replacing its status
// whole, when it differs from what was last written. The template is not read: its UID is
// the binding's, and its generation the newest one rendered into a Work (a template edited
// since shows a generation its status has not observed, as it should, until its Works are
// rendered and applied anew). Jobs and PersistentVolumeClaims are read (one GET): a Job's
// status is aggregated onto its current one, and a claim already bound on the host keeps
// the host's status. Pods are left alone. The write is a JSON patch of the status subresource that
// first tests the UID, so a template deleted and created again under the same name never
// gets its predecessor's status.
//
// With verify (the binding's status was already current when this process first looked at
// it: a restart), the template's status is read first and written only if it differs, so
// that a restart over templates whose status is right writes nothing (a read instead).
func (r *AggregateReconciler) writeTemplateStatus(ctx context.Context, key types.NamespacedName, rb client.Object,
	spec *workv1alpha2.ResourceBindingSpec, works map[string]*workv1alpha1.Work, items []workv1alpha2.AggregatedStatusItem, verify bool) error {
	if r.Interpreter == nil || spec.Resource.UID == "" {
		return nil
	}
	tmpl := &unstructured.Unstructured{}
	tmpl.SetAPIVersion(spec.Resource.APIVersion)
	tmpl.SetKind(spec.Resource.Kind)
	tmpl.SetNamespace(spec.Resource.Namespace)
	tmpl.SetName(spec.Resource.Name)
	tmpl.SetUID(spec.Resource.UID)
	tmpl.SetGeneration(renderedGeneration(works))
	switch gk := tmpl.GroupVersionKind().GroupKind(); gk {
	case podKind:
		// The hold denies new Pods in held namespaces: a Pod template there predates the
		// hold and runs on the host, and its status is its kubelet's.
		return nil
	default:
		if c, ok := r.Interpreter.(interface {
			Customized(schema.GroupVersionKind, interpreter.Operation) bool
		}); ok && c.Customized(tmpl.GroupVersionKind(), interpreter.OperationAggregateStatus) && r.APIReader != nil {
			// A customization's AggregateStatus gets the whole template, as in Karmada: its
			// script may read the spec.
			cur := &unstructured.Unstructured{}
			cur.SetGroupVersionKind(tmpl.GroupVersionKind())
			if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: tmpl.GetNamespace(), Name: tmpl.GetName()}, cur); err != nil {
				return client.IgnoreNotFound(err)
			}
			if cur.GetUID() != spec.Resource.UID {
				return nil
			}
			tmpl = cur
		}
	case jobKind, pvcKind:
		if r.APIReader == nil {
			return nil
		}
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(tmpl.GroupVersionKind())
		if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: tmpl.GetNamespace(), Name: tmpl.GetName()}, cur); err != nil {
			return client.IgnoreNotFound(err)
		}
		if cur.GetUID() != spec.Resource.UID {
			return nil // another object of the same name
		}
		if gk == jobKind {
			// A Job's status may only move forward, so it is aggregated onto the current one;
			// a Job another controller manages (spec.managedBy) is left to it.
			if m, _, _ := unstructured.NestedString(cur.Object, "spec", "managedBy"); m != "" && m != wellknown.JobManagedBy {
				return nil
			}
			tmpl = cur
		} else if v, _, _ := unstructured.NestedString(cur.Object, "spec", "volumeName"); v != "" {
			return nil // a claim bound on the host before the hold: its status is the host's binder's
		}
	}
	status, err := r.Interpreter.AggregateStatus(tmpl, items)
	if err != nil {
		r.Recorder.Eventf(rb, nil, corev1.EventTypeWarning, EventReasonTemplateStatusFailed, "Aggregate",
			"Cannot sum the members' status of %s %s: %v", spec.Resource.Kind, spec.Resource.Name, err)
		return nil // a member's status changing brings the binding back
	}
	if status == nil {
		return nil
	}
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/uid", "value": spec.Resource.UID},
		{"op": "add", "path": "/status", "value": status},
	})
	if err != nil {
		return err
	}
	// Kept per binding for the manager's lifetime: a digest, not the status itself.
	memo := sha256.Sum256(append([]byte(spec.Resource.UID), patch...))
	last, ok := r.written.Load(key)
	if ok && last == memo {
		return nil
	}
	if !ok && verify && r.APIReader != nil {
		same, err := r.templateStatusIs(ctx, tmpl, spec.Resource.UID, status)
		if err != nil {
			return client.IgnoreNotFound(err)
		}
		if same {
			r.written.Store(key, memo)
			return nil
		}
	}
	err = r.Client.Status().Patch(ctx, tmpl, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(TemplateStatusFieldOwner))
	switch {
	case apierrors.IsNotFound(err):
		return nil // the template is gone; the detector deletes the binding
	case apierrors.IsInvalid(err) || apierrors.IsForbidden(err):
		// A refused status (or a template of another UID) does not get better by retrying;
		// the next change of the members' status tries again.
		r.Recorder.Eventf(rb, nil, corev1.EventTypeWarning, EventReasonTemplateStatusFailed, "Aggregate",
			"Cannot write the fleet's status to %s %s: %v", spec.Resource.Kind, spec.Resource.Name, err)
		return nil
	case err != nil:
		return fmt.Errorf("writing the fleet's status to %s %s/%s: %w", spec.Resource.Kind, spec.Resource.Namespace, spec.Resource.Name, err)
	}
	r.written.Store(key, memo)
	return nil
}

var (
	jobKind = schema.GroupKind{Group: "batch", Kind: "Job"}
	podKind = schema.GroupKind{Kind: "Pod"}
	pvcKind = schema.GroupKind{Kind: "PersistentVolumeClaim"}
)

// renderedGeneration is the newest template generation rendered into the Works (their
// first manifest's resourcetemplate.karmada.io/generation annotation); 0 when unknown.
func renderedGeneration(works map[string]*workv1alpha1.Work) int64 {
	var newest int64
	for _, w := range works {
		if len(w.Spec.Workload.Manifests) == 0 {
			continue
		}
		var m struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(w.Spec.Workload.Manifests[0].Raw, &m); err != nil {
			continue
		}
		if g, err := strconv.ParseInt(m.Metadata.Annotations[wellknown.ResourceTemplateGenerationAnnotation], 10, 64); err == nil {
			newest = max(newest, g)
		}
	}
	return newest
}

// inFlight reports whether some scheduled cluster's Work is about to change: not created yet
// (and not held back by suspension), or not yet applied at its current generation.
func inFlight(spec *workv1alpha2.ResourceBindingSpec, works map[string]*workv1alpha1.Work) bool {
	for _, tc := range bindings.Targets(spec) {
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

// scheduledAppeared passes the update that gives a binding its first Scheduled condition: an
// unschedulable binding's status-only write, which GenerationChangedPredicate drops.
func scheduledAppeared() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		DeleteFunc: func(event.DeleteEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			cond := func(o client.Object) bool {
				return meta.FindStatusCondition(bindings.Status(o).Conditions, wellknown.ConditionScheduled) != nil
			}
			return !cond(e.ObjectOld) && cond(e.ObjectNew)
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// SetupWithManager registers the aggregator for one kind of binding.
func (r *AggregateReconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	sample := r.NewBinding()
	isCluster := bindings.Kind(sample) == "ClusterResourceBinding"
	name := "binding-status"
	if isCluster {
		name = "clusterbinding-status"
	}
	// What was last written of a shard another replica held may be out of date.
	r.Shards.OnLost(func(int) { r.written.Clear(); r.writtenBinding.Clear() })
	b := ctrl.NewControllerManagedBy(mgr).Named(name).
		WithOptions(r.Shards.Options(controller.Options{MaxConcurrentReconciles: workers})).
		For(sample, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, scheduledAppeared()))).
		Watches(&workv1alpha1.Work{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			key, c, ok := bindings.FromWork(o)
			if !ok || c != isCluster {
				return nil
			}
			return []reconcile.Request{{NamespacedName: key}}
		}), builder.WithPredicates(predicate.Funcs{GenericFunc: func(event.GenericEvent) bool { return false }}))
	return r.Shards.Complete(b, shard.ListFrom(mgr.GetCache(), func() client.ObjectList { return bindings.NewList(sample) }), r)
}

// announceFullyApplied tells whether a binding's FullyApplied condition going from was
// (Unknown: no condition yet) to now gets an AggregateStatusSucceed event. A recovery (False
// to True: a Work had failed, and a Warning said so) is a state change a person may be
// waiting for, and always gets one; a first propagation (no condition to True) is a success
// only, recorded with --record-success-events.
func announceFullyApplied(successEvents bool, was, now metav1.ConditionStatus) bool {
	if now != metav1.ConditionTrue || was == metav1.ConditionTrue {
		return false
	}
	return successEvents || was == metav1.ConditionFalse
}

// conflictRetry is when a binding whose status write met a newer version is looked at again.
const conflictRetry = 200 * time.Millisecond

// schedulerStatus is the scheduler's part of a binding's status, as the binding-status
// controller writes it.
type schedulerStatus struct {
	cond               metav1.Condition
	observedGeneration int64
	lastScheduled      *metav1.Time
}

// schedulerFields returns the scheduler's status fields this controller writes with its own,
// and whether it writes them. A binding created placed by this manager's scheduler
// (scheduler.FirstPlacementUnreported) gets its Scheduled condition, schedulerObservedGeneration
// and lastScheduledTime (its creation: it was placed just before) in this controller's first
// write: the scheduler leaves them to it (scheduler.FirstStatusGrace), which saves a status
// write per binding. Until the scheduler writes a later generation, every write of this
// controller carries them again, as the binding says they are: a server-side apply that
// leaves out fields its manager applied before removes them, and they must stay.
func (r *AggregateReconciler) schedulerFields(rb client.Object, spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus) (schedulerStatus, bool) {
	own := r.SchedulerName
	if own == "" {
		own = wellknown.DefaultSchedulerName
	}
	if spec.Placement == nil || (spec.SchedulerName != "" && spec.SchedulerName != own) {
		return schedulerStatus{}, false
	}
	if scheduler.FirstPlacementUnreported(rb.GetGeneration(), rb.GetAnnotations(), spec, status) {
		created := rb.GetCreationTimestamp()
		return schedulerStatus{cond: bindings.Condition(status.Conditions, scheduler.ScheduledCondition(spec.Clusters, rb.GetGeneration())),
			observedGeneration: rb.GetGeneration(), lastScheduled: &created}, true
	}
	c := meta.FindStatusCondition(status.Conditions, wellknown.ConditionScheduled)
	if c == nil || status.SchedulerObservedGeneration > 1 {
		return schedulerStatus{}, false
	}
	return schedulerStatus{cond: *c, observedGeneration: status.SchedulerObservedGeneration, lastScheduled: status.LastScheduledTime}, true
}

// templateStatusIs reports whether the template (of that UID) has status already, read from
// the host, compared as JSON values.
func (r *AggregateReconciler) templateStatusIs(ctx context.Context, tmpl *unstructured.Unstructured, uid types.UID, status map[string]any) (bool, error) {
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(tmpl.GroupVersionKind())
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: tmpl.GetNamespace(), Name: tmpl.GetName()}, cur); err != nil {
		return false, err
	}
	if cur.GetUID() != uid {
		return false, nil
	}
	return sameJSON(r.typedStatus(cur.GroupVersionKind(), cur.Object["status"]), r.typedStatus(cur.GroupVersionKind(), status)), nil
}

// typedStatus is status as the host stores it for a kind the scheme knows (decoded into its
// Go type and encoded again: fields at their zero value and marked omitempty are left out,
// as the apiserver leaves them out), and status itself for other kinds.
func (r *AggregateReconciler) typedStatus(gvk schema.GroupVersionKind, status any) any {
	obj, err := r.Client.Scheme().New(gvk)
	if err != nil {
		return status
	}
	u := map[string]any{"apiVersion": gvk.GroupVersion().String(), "kind": gvk.Kind, "status": status}
	data, err := json.Marshal(u)
	if err != nil {
		return status
	}
	if err := json.Unmarshal(data, obj); err != nil {
		return status
	}
	out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return status
	}
	return out["status"]
}

// sameJSON reports whether a and b are the same JSON value (numbers compared as JSON
// numbers, whatever Go type decoded them).
func sameJSON(a, b any) bool {
	norm := func(v any) (any, bool) {
		data, err := json.Marshal(v)
		if err != nil {
			return nil, false
		}
		var out any
		if err := json.Unmarshal(data, &out); err != nil {
			return nil, false
		}
		return out, true
	}
	na, ok1 := norm(a)
	nb, ok2 := norm(b)
	return ok1 && ok2 && equality.Semantic.DeepEqual(na, nb)
}
