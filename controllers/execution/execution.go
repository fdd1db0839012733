// Package execution applies Works to their member clusters with server-side apply (field
// manager "flotilla"), deletes member objects when their Work goes (unless it preserves
// them), and puts back what someone changed by hand on a member.
//
// A member object that exists without the label karmada.io/managed=true belongs to someone
// else: it is left alone, and the Work's Applied condition says so, unless the binding's
// conflictResolution is Overwrite. When a member is not connected the Work is marked
// Applied=Unknown and left; the member's reconnect brings every Work of that cluster back.
package execution

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/bindings"
	"github.com/flotilla-io/flotilla/internal/member"
)

// StatusInterpreter reads status and health from member objects.
type StatusInterpreter interface {
	ReflectStatus(obj *unstructured.Unstructured) (*runtime.RawExtension, error)
	Health(obj *unstructured.Unstructured) workv1alpha1.ResourceHealth
}

// Reconciler applies Works.
type Reconciler struct {
	Client      client.Client
	Members     *member.Manager
	Recorder    events.EventRecorder
	Interpreter StatusInterpreter

	// applied remembers, per Work, the Work generation and member object generation of the
	// last apply, so events that change nothing do not cause another apply.
	applied sync.Map // types.UID → appliedState
	// namespaces remembers namespaces known to exist per member.
	namespaces sync.Map // cluster/namespace → struct{}
}

type appliedState struct {
	workGeneration   int64
	memberGeneration int64
	memberUID        types.UID
	// memberResourceVersion stands in for the generation of kinds that have none
	// (ConfigMaps, Secrets, Services...), where any change is someone else's.
	memberResourceVersion string
}

// +kubebuilder:rbac:groups=work.karmada.io,resources=works,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=work.karmada.io,resources=works/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile applies or deletes one Work.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cluster, ok := bindings.ClusterOfWork(req.Namespace)
	if !ok {
		return ctrl.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx).WithValues("Cluster", cluster)
	ctx = ctrl.LoggerInto(ctx, log)
	work := &workv1alpha1.Work{}
	if err := r.Client.Get(ctx, req.NamespacedName, work); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if work.DeletionTimestamp != nil {
		return ctrl.Result{}, r.finalize(ctx, cluster, work)
	}
	if !controllerutil.ContainsFinalizer(work, wellknown.ExecutionControllerFinalizer) {
		patch := client.MergeFrom(work.DeepCopy())
		controllerutil.AddFinalizer(work, wellknown.ExecutionControllerFinalizer)
		return ctrl.Result{}, r.Client.Patch(ctx, work, patch)
	}
	if ptr.Deref(work.Spec.SuspendDispatching, false) {
		return ctrl.Result{}, r.setApplied(ctx, work, metav1.ConditionFalse, "DispatchingSuspended", "Dispatching to this cluster is suspended")
	}

	m, err := r.Members.Get(cluster)
	if err != nil {
		// Not an error for backoff: the reconnect event brings this Work back.
		return ctrl.Result{}, r.setApplied(ctx, work, metav1.ConditionUnknown, wellknown.ReasonClusterUnreachable, err.Error())
	}
	objs, err := manifests(work)
	if err != nil {
		return ctrl.Result{}, r.setApplied(ctx, work, metav1.ConditionFalse, wellknown.ReasonAppliedFailed, err.Error())
	}
	for _, obj := range objs {
		if err := r.Members.Watch(ctx, cluster, obj.GroupVersionKind()); err != nil {
			return ctrl.Result{}, err
		}
	}
	if r.upToDate(ctx, m, work, objs) {
		return ctrl.Result{}, nil
	}
	applied := make([]*unstructured.Unstructured, 0, len(objs))
	for _, obj := range objs {
		out, err := r.applyOne(ctx, cluster, m, obj)
		if err != nil {
			var c *conflictError
			if errors.As(err, &c) {
				r.Recorder.Eventf(work, nil, corev1.EventTypeWarning, wellknown.EventReasonSyncWorkFailed, "Apply", "%v", err)
				return ctrl.Result{}, r.setApplied(ctx, work, metav1.ConditionFalse, wellknown.ReasonConflict, err.Error())
			}
			if isMemberDown(err) {
				return ctrl.Result{}, r.setApplied(ctx, work, metav1.ConditionUnknown, wellknown.ReasonClusterUnreachable, err.Error())
			}
			if serr := r.setApplied(ctx, work, metav1.ConditionFalse, wellknown.ReasonAppliedFailed, err.Error()); serr != nil {
				log.Error(serr, "Cannot record the failed apply")
			}
			return ctrl.Result{}, err
		}
		applied = append(applied, out)
	}
	r.remember(ctx, m, work, objs)
	// The first manifest statuses come from the apply's answer, in the same write as the
	// condition; the work-status controller keeps them current afterwards.
	var statuses []workv1alpha1.ManifestStatus
	if len(work.Status.ManifestStatuses) == 0 && r.Interpreter != nil {
		statuses = ManifestStatuses(m.Mapper, r.Interpreter, applied)
	}
	return ctrl.Result{}, r.setApplied(ctx, work, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful, "Manifest is applied in the member cluster", statuses...)
}

// ManifestStatuses reflects the status and health of member objects, in manifest order.
// Objects whose kind the member does not map are left out.
func ManifestStatuses(mapper meta.RESTMapper, interp StatusInterpreter, objs []*unstructured.Unstructured) []workv1alpha1.ManifestStatus {
	out := make([]workv1alpha1.ManifestStatus, 0, len(objs))
	for i, obj := range objs {
		if obj == nil {
			continue
		}
		gvk := obj.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			continue
		}
		ms := workv1alpha1.ManifestStatus{
			Identifier: workv1alpha1.ResourceIdentifier{Ordinal: i, Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind,
				Resource: mapping.Resource.Resource, Namespace: obj.GetNamespace(), Name: obj.GetName()},
			Health: interp.Health(obj),
		}
		if st, err := interp.ReflectStatus(obj); err == nil {
			ms.Status = st
		}
		out = append(out, ms)
	}
	return out
}

// manifests decodes the Work's manifests.
func manifests(work *workv1alpha1.Work) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, 0, len(work.Spec.Workload.Manifests))
	for i, m := range work.Spec.Workload.Manifests {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(m.Raw); err != nil {
			return nil, fmt.Errorf("manifest %d: %w", i, err)
		}
		out = append(out, u)
	}
	return out, nil
}

// upToDate reports whether the member objects are as last applied for this Work generation:
// each exists in the member cache with the generation observed after the last apply.
func (r *Reconciler) upToDate(ctx context.Context, m *member.Member, work *workv1alpha1.Work, objs []*unstructured.Unstructured) bool {
	v, ok := r.applied.Load(work.UID)
	if !ok || len(objs) != 1 {
		return false
	}
	st := v.(appliedState)
	if st.workGeneration != work.Generation {
		return false
	}
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(objs[0].GroupVersionKind())
	if err := m.Cached().Get(ctx, client.ObjectKeyFromObject(objs[0]), cur); err != nil {
		return false
	}
	if cur.GetUID() != st.memberUID || cur.GetLabels()[wellknown.ManagedLabel] != wellknown.ManagedLabelValue {
		return false
	}
	if st.memberGeneration == 0 {
		return cur.GetResourceVersion() == st.memberResourceVersion
	}
	return cur.GetGeneration() == st.memberGeneration
}

func (r *Reconciler) remember(ctx context.Context, m *member.Member, work *workv1alpha1.Work, objs []*unstructured.Unstructured) {
	if len(objs) != 1 {
		return
	}
	r.applied.Store(work.UID, appliedState{workGeneration: work.Generation,
		memberGeneration: objs[0].GetGeneration(), memberUID: objs[0].GetUID(),
		memberResourceVersion: objs[0].GetResourceVersion()})
}

type conflictError struct{ msg string }

func (e *conflictError) Error() string { return e.msg }

// applyOne server-side applies one manifest, after making sure its namespace exists and that
// it does not take over an object someone else manages. It returns the member's answer and
// records its generation, UID and resourceVersion on obj.
func (r *Reconciler) applyOne(ctx context.Context, cluster string, m *member.Member, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if ns := obj.GetNamespace(); ns != "" {
		if err := r.ensureNamespace(ctx, cluster, m, ns); err != nil {
			return nil, err
		}
	}
	if err := r.checkConflict(ctx, m, obj); err != nil {
		return nil, err
	}
	applied := obj.DeepCopy()
	if err := m.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(applied),
		client.FieldOwner(wellknown.FieldManager), client.ForceOwnership); err != nil {
		return nil, fmt.Errorf("apply %s %s: %w", obj.GetKind(), client.ObjectKeyFromObject(obj), err)
	}
	obj.SetGeneration(applied.GetGeneration())
	obj.SetUID(applied.GetUID())
	obj.SetResourceVersion(applied.GetResourceVersion())
	return applied, nil
}

// checkConflict fails when the object exists in the member without the managed label and the
// manifest does not ask to overwrite.
func (r *Reconciler) checkConflict(ctx context.Context, m *member.Member, obj *unstructured.Unstructured) error {
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(obj.GroupVersionKind())
	// The cache only holds managed objects; an object missing there may be someone else's.
	if err := m.Cached().Get(ctx, client.ObjectKeyFromObject(obj), cur); err == nil {
		return nil
	}
	if err := m.Client.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	if cur.GetLabels()[wellknown.ManagedLabel] == wellknown.ManagedLabelValue {
		return nil
	}
	if obj.GetAnnotations()[wellknown.ConflictResolutionAnnotation] == wellknown.ConflictResolutionOverwrite {
		return nil
	}
	return &conflictError{msg: fmt.Sprintf("conflict: %s %s already exists in the member cluster and is not managed by Flotilla (no label %s=%s); "+
		"set conflictResolution: Overwrite on the policy, or annotate the template %s=%s, to take it over",
		obj.GetKind(), client.ObjectKeyFromObject(obj), wellknown.ManagedLabel, wellknown.ManagedLabelValue,
		wellknown.ConflictResolutionAnnotation, wellknown.ConflictResolutionOverwrite)}
}

func (r *Reconciler) ensureNamespace(ctx context.Context, cluster string, m *member.Member, ns string) error {
	key := cluster + "/" + ns
	if _, ok := r.namespaces.Load(key); ok {
		return nil
	}
	err := m.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s in member: %w", ns, err)
	}
	r.namespaces.Store(key, struct{}{})
	return nil
}

// finalize deletes the member objects unless the Work preserves them, then releases the Work.
// While the member is unreachable the Work waits (its finalizer stays) for the reconnect.
func (r *Reconciler) finalize(ctx context.Context, cluster string, work *workv1alpha1.Work) error {
	if !controllerutil.ContainsFinalizer(work, wellknown.ExecutionControllerFinalizer) {
		return nil
	}
	if !ptr.Deref(work.Spec.PreserveResourcesOnDeletion, false) {
		m, err := r.Members.Get(cluster)
		if err != nil {
			exists, cerr := r.clusterExists(ctx, cluster)
			if cerr != nil {
				return cerr
			}
			if exists {
				ctrl.LoggerFrom(ctx).Info("Member cluster unreachable; Work deletion waits for it", "Work", work.Name)
				return nil
			}
			// The Cluster is gone or going: there is no member left to clean up.
		} else {
			objs, err := manifests(work)
			if err != nil {
				return err
			}
			for _, obj := range objs {
				if err := r.deleteOne(ctx, m, obj); err != nil {
					if isMemberDown(err) {
						return nil
					}
					return err
				}
			}
		}
	}
	r.applied.Delete(work.UID)
	patch := client.MergeFrom(work.DeepCopy())
	controllerutil.RemoveFinalizer(work, wellknown.ExecutionControllerFinalizer)
	return client.IgnoreNotFound(r.Client.Patch(ctx, work, patch))
}

// deleteOne deletes the member object if it is still the one this Work manages.
func (r *Reconciler) deleteOne(ctx context.Context, m *member.Member, obj *unstructured.Unstructured) error {
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(obj.GroupVersionKind())
	if err := m.Client.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
		return client.IgnoreNotFound(err)
	}
	a := cur.GetAnnotations()
	if cur.GetLabels()[wellknown.ManagedLabel] != wellknown.ManagedLabelValue ||
		a[wellknown.WorkNameAnnotation] != obj.GetAnnotations()[wellknown.WorkNameAnnotation] {
		return nil // someone else's now
	}
	err := m.Client.Delete(ctx, cur, client.Preconditions{UID: ptr.To(cur.GetUID())}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// clusterExists reports whether the Cluster object is still there and not being deleted.
// The cluster controller deletes a Cluster's Works before it lets the Cluster go, so a Work
// of a deleted Cluster whose member is unreachable must be released rather than wait for a
// member that will not come back.
func (r *Reconciler) clusterExists(ctx context.Context, name string) (bool, error) {
	c := &clusterv1alpha1.Cluster{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: name}, c); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	return c.DeletionTimestamp.IsZero(), nil
}

// setApplied records the Applied condition (and the first manifest statuses), only when
// something changes.
func (r *Reconciler) setApplied(ctx context.Context, work *workv1alpha1.Work, status metav1.ConditionStatus, reason, msg string, statuses ...workv1alpha1.ManifestStatus) error {
	if c := meta.FindStatusCondition(work.Status.Conditions, wellknown.WorkConditionApplied); c != nil &&
		c.Status == status && c.Reason == reason && c.Message == msg && c.ObservedGeneration == work.Generation && len(statuses) == 0 {
		return nil
	}
	cond := metav1.Condition{Type: wellknown.WorkConditionApplied, Status: status, Reason: reason, Message: msg,
		ObservedGeneration: work.Generation}
	// Success is reported once per binding sync by the binding controller; failures here.
	if status == metav1.ConditionFalse {
		r.Recorder.Eventf(work, nil, corev1.EventTypeWarning, wellknown.EventReasonSyncWorkFailed, "Apply", "%s", msg)
	}
	// The execution controller is the only writer of Work conditions, and the work-status
	// controller of manifestStatuses once they exist, so a merge patch of just these fields
	// cannot overwrite anyone.
	before := work.DeepCopy()
	meta.SetStatusCondition(&work.Status.Conditions, cond)
	if len(statuses) > 0 {
		work.Status.ManifestStatuses = statuses
	}
	return client.IgnoreNotFound(r.Client.Status().Patch(ctx, work, client.MergeFrom(before)))
}

// isMemberDown reports errors that mean the member is unreachable rather than that the apply
// is wrong.
func isMemberDown(err error) bool {
	return errors.Is(err, member.ErrNotConnected) || apierrors.IsServiceUnavailable(err) ||
		apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || isConnRefused(err)
}
