package detector

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/bindings"
	"github.com/flotilla-io/flotilla/internal/handoff"
	"github.com/flotilla-io/flotilla/internal/memo"
	"github.com/flotilla-io/flotilla/internal/policymatch"
	"github.com/flotilla-io/flotilla/internal/resourceselector"
)

// ReplicaInterpreter reads a template's replicas and per-replica requirements.
type ReplicaInterpreter interface {
	GetReplicas(obj *unstructured.Unstructured) (int32, *workv1alpha2.ReplicaRequirements, error)
	// HasReplicas reports whether the kind's replicas are known, so a Divided placement
	// divides them.
	HasReplicas(obj *unstructured.Unstructured) bool
	// Revision is the revision of the kind's customization ("" without one): a binding
	// computed with another revision is computed again.
	Revision(gvk schema.GroupVersionKind) string
	// Components returns the components of a multi-component workload (a customization's
	// componentResource), nil for other kinds.
	Components(obj *unstructured.Unstructured) ([]workv1alpha2.Component, error)
}

// Dependencies is told of templates that exist, so that workloads waiting for them as
// dependencies (propagateDeps) go on.
type Dependencies interface {
	// Appeared reports whether some workload was waiting for the template.
	Appeared(gvk schema.GroupVersionKind, key types.NamespacedName) bool
}

// Placer places a binding that is about to be created (the scheduler's PlaceNew). It writes
// nothing; a binding it does not place is created unscheduled, for the scheduler.
type Placer interface {
	PlaceNew(ctx context.Context, rb client.Object) (bool, error)
}

// Reconciler binds templates to policies. Create it with New and add it with SetupWithManager.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the host.
	Client client.Client
	// APIReader reads templates whole, straight from the host.
	APIReader client.Reader
	// Recorder emits events on templates.
	Recorder events.EventRecorder
	// Interpreter reads replicas and requirements.
	Interpreter ReplicaInterpreter
	// Dependencies, when set, hears of every template in scope.
	Dependencies Dependencies
	// Templates, when set, is handed every template read whole for a binding, so that the
	// binding controller renders that version without reading it again.
	Templates *handoff.Templates
	// Placer, when set, gives a new binding its first placement before it is created.
	Placer Placer

	watcher *watcher

	// warned holds templates that got the "no policy" warning, so it is sent once.
	warned memo.Map[Key, struct{}]
	// created holds the bindings this detector created recently (key → time), so that a
	// reconcile racing the cache neither reads the template nor tries to create it again.
	created memo.Map[Key, time.Time]
	// waiting holds, per template, the dependent overrides it was last reported waiting for.
	waiting memo.Map[Key, string]
}

// +kubebuilder:rbac:groups=policy.karmada.io,resources=propagationpolicies;clusterpropagationpolicies,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=work.karmada.io,resources=resourcebindings;clusterresourcebindings,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=work.karmada.io,resources=resourcebindings/status;clusterresourcebindings/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// The detector reads every kind that can be a template, including custom resources unknown at
// install, so it needs get, list and watch on all resources. It writes nothing to templates:
// the claim is on the binding.
// +kubebuilder:rbac:groups=*,resources=*,verbs=get;list;watch

// Reconcile binds one template: it reads the template and its binding (which holds the claim),
// chooses the policy, and writes the binding once. The template is only read.
func (r *Reconciler) Reconcile(ctx context.Context, key Key) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("template", key.String())
	ctx = ctrl.LoggerInto(ctx, log)

	// Read: the template (metadata) and its binding.
	tmpl := &metav1.PartialObjectMetadata{}
	tmpl.SetGroupVersionKind(key.GVK)
	if err := r.Client.Get(ctx, key.NamespacedName, tmpl); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		r.warned.Delete(key)
		r.waiting.Delete(key)
		// The template is gone: its binding goes, and with it the member objects unless the
		// policy preserves them.
		return ctrl.Result{}, r.deleteBinding(ctx, key, false)
	}
	if tmpl.DeletionTimestamp != nil {
		return ctrl.Result{}, r.deleteBinding(ctx, key, false)
	}
	if terminating, err := r.namespaceTerminating(ctx, tmpl.Namespace); err != nil || terminating {
		// The namespace is being deleted with everything in it: its templates are going,
		// whatever order the host deletes them and their policy in, so their member objects
		// go too (unless the policy preserves them) rather than being unclaimed and kept.
		return ctrl.Result{}, errors.Join(err, r.deleteBinding(ctx, key, false))
	}
	rb, err := r.binding(ctx, key)
	if err != nil {
		return ctrl.Result{}, err
	}

	// Desired state: in scope, and the policy that claims it.
	inScope, err := r.inScope(ctx, tmpl)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !inScope {
		r.warned.Delete(key)
		_, err := r.unclaim(ctx, tmpl, rb)
		return retryOn(err)
	}
	// A workload waiting for this template as a dependency goes on now.
	required := r.Dependencies != nil && r.Dependencies.Appeared(key.GVK, key.NamespacedName)

	policies, err := r.candidatePolicies(ctx, tmpl)
	if err != nil {
		return ctrl.Result{}, err
	}
	prev := claimOf(rb, tmpl)
	choice, chooseErr := policymatch.Choose(selectable(tmpl), prev, policies)
	if chooseErr != nil {
		log.Error(chooseErr, "Some policies have invalid selectors and were skipped")
	}
	if choice.Policy == nil {
		attached, err := r.orphan(ctx, tmpl, rb)
		if err != nil {
			return retryOn(err)
		}
		if attached || required {
			// It propagates as a workload's dependency: no policy is needed.
			return ctrl.Result{}, nil
		}
		// Cluster-scoped objects are all candidates for ClusterPropagationPolicies; only the
		// templates of opted-in namespaces are expected to propagate, so only they are warned.
		if _, already := r.warned.LoadOrStore(key, struct{}{}); !already && tmpl.Namespace != "" {
			r.Recorder.Eventf(tmpl, nil, corev1.EventTypeWarning, wellknown.EventReasonApplyPolicyFailed, "Propagate", wellknown.MessageNoPolicyMatch)
		}
		return ctrl.Result{}, nil
	}
	r.warned.Delete(key)
	p := choice.Policy

	if missing, err := r.missingOverrides(ctx, tmpl.Namespace, p); err != nil || len(missing) > 0 {
		if err == nil {
			r.reportWaiting(tmpl, key, p, missing)
		}
		// The OverridePolicy watch brings the template back when one is created.
		return ctrl.Result{}, err
	}
	r.waiting.Delete(key)

	// Write: the binding, which carries the claim.
	changed, err := r.ensureBinding(ctx, tmpl, p, rb)
	if errors.Is(err, errRetry) || errors.Is(err, errBindingGoing) {
		return retryOn(err)
	}
	if err != nil {
		r.Recorder.Eventf(tmpl, nil, corev1.EventTypeWarning, wellknown.EventReasonApplyPolicyFailed, "Propagate",
			"Cannot apply %s: %v", p, err)
		if ie := (*interpretError)(nil); errors.As(err, &ie) {
			// The binding keeps its last good spec, and says why it is not current.
			return ctrl.Result{}, errors.Join(err, r.setInterpreted(ctx, rb, ie))
		}
		return ctrl.Result{}, err
	}
	if err := r.setInterpreted(ctx, rb, nil); err != nil {
		return ctrl.Result{}, err
	}

	// Report: success is an event only when the template changes policy: a first claim is
	// told by the binding's FullyApplied event (one success event per propagation, not one
	// per stage).
	if changed && (choice.Preempted || (!prev.IsZero() && !prev.Matches(p))) {
		msg := fmt.Sprintf("Applied %s", p)
		if choice.Preempted {
			msg += " (preempted the previous policy)"
			// Karmada tells a preemption with its own reason as well as the apply's.
			r.Recorder.Eventf(tmpl, nil, corev1.EventTypeNormal, wellknown.EventReasonPreemptPolicySucceed, "Preempt",
				"%s preempted the policy that claimed the template", p)
		}
		r.Recorder.Eventf(tmpl, nil, corev1.EventTypeNormal, wellknown.EventReasonApplyPolicySucceed, "Propagate", msg)
	}
	return ctrl.Result{}, nil
}

// FieldOwner owns the conditions the detector writes on bindings (Interpreted).
const FieldOwner = "flotilla-detector"

// interpretError is a failure to read a template's replicas, requirements or components: a
// customization's script that failed, timed out or returned the wrong shape (its message names
// the customization, the operation and the line).
type interpretError struct{ err error }

func (e *interpretError) Error() string { return e.err.Error() }
func (e *interpretError) Unwrap() error { return e.err }

// setInterpreted records on the template's binding (rb as read; nil: none yet) whether its
// template could be interpreted: False with the failure, True again once it can. Nothing is
// written while it never failed, nor when the condition already says so.
func (r *Reconciler) setInterpreted(ctx context.Context, rb client.Object, failure error) error {
	if rb == nil || rb.GetDeletionTimestamp() != nil {
		return nil
	}
	status := bindings.Status(rb)
	cond := metav1.Condition{Type: wellknown.ConditionInterpreted, Status: metav1.ConditionTrue,
		Reason: wellknown.ReasonInterpreted, Message: "The template's replicas, requirements and components were read", ObservedGeneration: rb.GetGeneration()}
	if failure != nil {
		cond.Status, cond.Reason = metav1.ConditionFalse, wellknown.ReasonInterpreterFailed
		msg := failure.Error()
		if len(msg) > 32*1024 {
			msg = msg[:32*1024]
		}
		cond.Message = msg
	}
	old := meta.FindStatusCondition(status.Conditions, cond.Type)
	if (failure == nil && (old == nil || old.Status == metav1.ConditionTrue)) ||
		(old != nil && old.Status == cond.Status && old.Reason == cond.Reason && old.Message == cond.Message) {
		return nil
	}
	return client.IgnoreNotFound(bindings.ApplyStatus(ctx, r.Client, rb, FieldOwner, map[string]any{
		"conditions": []metav1.Condition{bindings.Condition(status.Conditions, cond)},
	}))
}

// retryOn turns the detector's retry errors into a requeue: errRetry looks again once the
// cache has caught up with a write, errBindingGoing once the previous binding is gone.
func retryOn(err error) (ctrl.Result, error) {
	switch {
	case errors.Is(err, errRetry):
		return ctrl.Result{RequeueAfter: retryAfter}, nil
	case errors.Is(err, errBindingGoing):
		return ctrl.Result{RequeueAfter: bindingGoingRetry}, nil
	}
	return ctrl.Result{}, err
}

// binding reads the template's binding from the cache; nil when it has none.
func (r *Reconciler) binding(ctx context.Context, key Key) (client.Object, error) {
	rb := newBinding(key)
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(rb), rb); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return rb, nil
}

// inScope reports whether the template may be propagated: cluster-scoped, or in an opted-in,
// non-system namespace; and not one of the objects the host makes everywhere.
func (r *Reconciler) inScope(ctx context.Context, tmpl *metav1.PartialObjectMetadata) (bool, error) {
	if skippedObject(tmpl.GroupVersionKind(), tmpl.Name) {
		return false, nil
	}
	if tmpl.Namespace == "" {
		return true, nil
	}
	return r.namespaceOptedIn(ctx, tmpl.Namespace)
}

// namespaceTerminating reports whether the template's namespace is being deleted.
func (r *Reconciler) namespaceTerminating(ctx context.Context, name string) (bool, error) {
	if name == "" {
		return false, nil
	}
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: name}, ns); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return ns.DeletionTimestamp != nil, nil
}

func (r *Reconciler) namespaceOptedIn(ctx context.Context, name string) (bool, error) {
	if systemNamespace(name) {
		return false, nil
	}
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: name}, ns); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return ns.Labels[wellknown.PropagationLabel] == wellknown.PropagationEnabled, nil
}

// candidatePolicies returns the PropagationPolicies of the template's namespace and the
// ClusterPropagationPolicies that may select it: those indexed under its kind, or its kind and
// name (IndexPolicyBySelector). policymatch.Choose decides among them.
func (r *Reconciler) candidatePolicies(ctx context.Context, tmpl *metav1.PartialObjectMetadata) ([]*policymatch.Policy, error) {
	var out []*policymatch.Policy
	seen := map[types.NamespacedName]bool{}
	gvk := tmpl.GroupVersionKind()
	for _, key := range resourceselector.CandidateKeys(gvk.GroupVersion().String(), gvk.Kind, tmpl.Name) {
		if key == resourceselector.AllKey {
			continue // propagation policies without selectors select nothing
		}
		if tmpl.Namespace != "" {
			pps := &policyv1alpha1.PropagationPolicyList{}
			if err := r.Client.List(ctx, pps, client.InNamespace(tmpl.Namespace), client.MatchingFields{IndexPolicyBySelector: key},
				client.UnsafeDisableDeepCopy); err != nil {
				return nil, err
			}
			for i := range pps.Items {
				pp := &pps.Items[i]
				if id := client.ObjectKeyFromObject(pp); !seen[id] {
					seen[id] = true
					out = append(out, &policymatch.Policy{Namespace: pp.Namespace, Name: pp.Name, Spec: &pp.Spec,
						PermanentID: PermanentID(pp, wellknown.PropagationPolicyPermanentIDLabel), Deleting: pp.DeletionTimestamp != nil})
				}
			}
		}
		cpps := &policyv1alpha1.ClusterPropagationPolicyList{}
		if err := r.Client.List(ctx, cpps, client.MatchingFields{IndexPolicyBySelector: key}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		for i := range cpps.Items {
			cpp := &cpps.Items[i]
			if id := client.ObjectKeyFromObject(cpp); !seen[id] {
				seen[id] = true
				out = append(out, &policymatch.Policy{Name: cpp.Name, Spec: &cpp.Spec,
					PermanentID: PermanentID(cpp, wellknown.ClusterPropagationPolicyPermanentIDLabel), Deleting: cpp.DeletionTimestamp != nil})
			}
		}
	}
	return out, nil
}

// selectable is the template as the selector matcher needs it.
func selectable(tmpl *metav1.PartialObjectMetadata) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(tmpl.GroupVersionKind())
	u.SetNamespace(tmpl.Namespace)
	u.SetName(tmpl.Name)
	u.SetLabels(tmpl.Labels)
	return u
}

// claimOf reads who claims the template from its binding (nil: none): the policy's
// permanent-id label and its name annotations. A binding of another template of the same name
// (another group's kind) claims nothing for this one.
func claimOf(rb client.Object, tmpl *metav1.PartialObjectMetadata) policymatch.Claim {
	if rb == nil {
		return policymatch.Claim{}
	}
	res := bindings.Spec(rb).Resource
	if res.Kind != tmpl.GetObjectKind().GroupVersionKind().Kind || groupOf(res.APIVersion) != tmpl.GroupVersionKind().Group {
		return policymatch.Claim{}
	}
	l, a := rb.GetLabels(), rb.GetAnnotations()
	if id := l[wellknown.PropagationPolicyPermanentIDLabel]; id != "" {
		return policymatch.Claim{Namespace: cmp.Or(a[wellknown.PropagationPolicyNamespaceAnnotation], rb.GetNamespace()),
			Name: a[wellknown.PropagationPolicyNameAnnotation], PermanentID: id}
	}
	if id := l[wellknown.ClusterPropagationPolicyPermanentIDLabel]; id != "" {
		return policymatch.Claim{Cluster: true, Name: a[wellknown.ClusterPropagationPolicyNameAnnotation], PermanentID: id}
	}
	return policymatch.Claim{}
}

// groupOf is the group of an apiVersion ("" for the core group).
func groupOf(apiVersion string) string {
	if g, _, ok := strings.Cut(apiVersion, "/"); ok {
		return g
	}
	return ""
}

// claimLabels and claimAnnotations are the keys of a claim on a binding (bindingClaim).
var claimLabels = []string{wellknown.PropagationPolicyPermanentIDLabel, wellknown.ClusterPropagationPolicyPermanentIDLabel}
var claimAnnotations = []string{wellknown.PropagationPolicyNamespaceAnnotation, wellknown.PropagationPolicyNameAnnotation, wellknown.ClusterPropagationPolicyNameAnnotation}

// unclaim releases a template that is no longer in scope (its namespace opted out): its
// binding goes, and its member objects stay, released to the members. A binding that
// workloads require as a dependency stays, without the policy's part: attached reports so.
// rb is the binding as read (nil: none in the cache).
func (r *Reconciler) unclaim(ctx context.Context, tmpl *metav1.PartialObjectMetadata, rb client.Object) (attached bool, err error) {
	key := Key{GVK: tmpl.GroupVersionKind(), NamespacedName: client.ObjectKeyFromObject(tmpl)}
	if rb != nil && rb.GetDeletionTimestamp() == nil && len(bindings.Spec(rb).RequiredBy) > 0 {
		r.created.Delete(key)
		return true, r.detach(ctx, rb.DeepCopyObject().(client.Object), tmpl, false)
	}
	return false, r.deleteBinding(ctx, key, true)
}

// orphan is what becomes of the binding of a template in scope that no policy claims any more
// (the policy was deleted, or no longer selects it). As in Karmada, the binding lives as long
// as the template: it stays, without the claim, so that the member objects stay where they
// are, managed, and are deleted with the template (unless the policy had
// preserveResourcesOnDeletion), whichever of the two is deleted first (`kubectl delete -f`
// of a file holding both). It keeps its clusters and replicas but no placement, so nothing
// schedules it again; the template's edits still reach those clusters (its resource follows
// the template, as a dependency's does). A binding that was never scheduled has nothing in
// the members and goes. attached reports a binding that workloads require (no warning is due).
func (r *Reconciler) orphan(ctx context.Context, tmpl *metav1.PartialObjectMetadata, rb client.Object) (attached bool, err error) {
	key := Key{GVK: tmpl.GroupVersionKind(), NamespacedName: client.ObjectKeyFromObject(tmpl)}
	if rb == nil {
		if rb, err = r.justCreated(ctx, key); rb == nil || err != nil {
			return false, err
		}
	}
	defer func() {
		if !errors.Is(err, errRetry) {
			// Done with: a retry must still find a binding the cache does not show yet.
			r.created.Delete(key)
		}
	}()
	if rb.GetDeletionTimestamp() != nil {
		return false, nil
	}
	spec := bindings.Spec(rb)
	required := len(spec.RequiredBy) > 0
	if len(spec.Clusters) == 0 && !required {
		// Deleted only as read: scheduled since, it has member objects to keep.
		err := r.Client.Delete(ctx, rb, client.Preconditions{ResourceVersion: ptr.To(rb.GetResourceVersion())})
		if apierrors.IsConflict(err) {
			return false, errRetry
		}
		return false, client.IgnoreNotFound(err)
	}
	return required, r.detach(ctx, rb.DeepCopyObject().(client.Object), tmpl, true)
}

// detach turns the binding of a template that no policy claims into one with no policy
// labels, placement or schedule of its own, whose resource follows the template so that
// changes to it reach the members. keepClusters (orphan) keeps the clusters and replicas the
// scheduler last gave it; without (a dependency of a template out of scope), it goes only
// where the workloads that require it go (spec.requiredBy).
//
// Whether workloads require it was read from rb, so the write holds only if rb is the
// binding's current version (optimistic lock): the last workload may have let go a moment
// ago, and a binding detached then would stay, required by nothing and claimed by nothing
// (found by a soak). A conflict is errRetry: the next pass decides on the newer version.
func (r *Reconciler) detach(ctx context.Context, rb client.Object, tmpl *metav1.PartialObjectMetadata, keepClusters bool) error {
	before := rb.DeepCopyObject().(client.Object)
	labels := rb.GetLabels()
	for _, k := range claimLabels {
		delete(labels, k)
	}
	rb.SetLabels(labels)
	if ann := rb.GetAnnotations(); ann != nil {
		delete(ann, wellknown.AppliedPlacementAnnotation)
		for _, k := range claimAnnotations {
			delete(ann, k)
		}
		rb.SetAnnotations(ann)
	}
	spec := bindings.Spec(rb)
	spec.Resource.UID = tmpl.UID
	spec.Resource.ResourceVersion = tmpl.ResourceVersion
	spec.Placement, spec.Failover, spec.SchedulePriority, spec.SchedulerName = nil, nil, nil, ""
	// Workload-affinity groups are the policy's: a template no policy claims is in none.
	spec.WorkloadAffinityGroups = nil
	if !keepClusters {
		spec.Clusters, spec.Suspension = nil, nil
		spec.PropagateDeps, spec.Replicas, spec.ReplicaRequirements = false, 0, nil
	}
	if equality.Semantic.DeepEqual(before, rb) {
		return nil
	}
	err := r.Client.Patch(ctx, rb, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsConflict(err) {
		return errRetry
	}
	if err == nil && len(before.GetLabels()) != len(rb.GetLabels()) {
		if keepClusters {
			ctrl.LoggerFrom(ctx).Info("No policy claims the template any more; its binding stays, and its member objects with it, until the template is deleted",
				"binding", rb.GetName(), "clusters", bindings.Scheduled(spec))
		} else {
			ctrl.LoggerFrom(ctx).Info("Policy released a template that workloads require; it stays where they need it", "binding", rb.GetName())
		}
	}
	return client.IgnoreNotFound(err)
}

// deleteBinding deletes the template's binding. With preserve (the template is released, not
// deleted), the binding is first marked preserveResourcesOnDeletion so that the binding
// controller leaves the member objects; and since workloads may require a released template
// (see detach), both writes hold only on the version read, which requires nothing: a
// conflict is errRetry.
func (r *Reconciler) deleteBinding(ctx context.Context, key Key, preserve bool) error {
	err := r.deleteBindingOnce(ctx, key, preserve)
	if !errors.Is(err, errRetry) {
		// Done with: the next pass, if any, must still find a binding just created that
		// the cache does not show.
		r.created.Delete(key)
	}
	return err
}

// deleteBindingOnce is one attempt of deleteBinding.
func (r *Reconciler) deleteBindingOnce(ctx context.Context, key Key, preserve bool) error {
	rb := newBinding(key)
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(rb), rb); err != nil {
		if !apierrors.IsNotFound(err) {
			return err
		}
		if rb, err = r.justCreated(ctx, key); rb == nil || err != nil {
			return err
		}
	}
	if rb.GetDeletionTimestamp() != nil {
		return nil
	}
	if !preserve {
		return client.IgnoreNotFound(r.Client.Delete(ctx, rb))
	}
	spec := bindings.Spec(rb)
	if len(spec.RequiredBy) > 0 {
		return errRetry // required since it was read: the next pass detaches it
	}
	if !ptr.Deref(spec.PreserveResourcesOnDeletion, false) {
		before := rb.DeepCopyObject().(client.Object)
		spec.PreserveResourcesOnDeletion = ptr.To(true)
		if err := r.Client.Patch(ctx, rb, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) {
				return errRetry
			}
			return client.IgnoreNotFound(err)
		}
	}
	ctrl.LoggerFrom(ctx).Info("Unbinding template; member objects are kept", "binding", rb.GetName())
	err := r.Client.Delete(ctx, rb, client.Preconditions{ResourceVersion: ptr.To(rb.GetResourceVersion())})
	if apierrors.IsConflict(err) {
		return errRetry
	}
	return client.IgnoreNotFound(err)
}

// justCreated returns the template's binding, read from the host, when this detector created
// it a moment ago and the cache does not show it yet (a policy deleted right after it claimed
// the template): a cache miss is no proof it is gone, and nothing would bring the template
// back once the cache shows it. Otherwise, or when it is gone, nil.
func (r *Reconciler) justCreated(ctx context.Context, key Key) (client.Object, error) {
	if at, ok := r.created.Load(key); !ok || time.Since(at) >= createdTTL {
		return nil, nil
	}
	rb := newBinding(key)
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(rb), rb); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return rb, nil
}

// newBinding returns an empty binding object of the right kind and name for the template.
func newBinding(key Key) client.Object {
	name := BindingName(key.GVK.Kind, key.Name)
	if key.Namespace == "" {
		return &workv1alpha2.ClusterResourceBinding{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	return &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: name}}
}

// ensureBinding creates or updates the template's binding, rb as read (nil: none in the
// cache), with the policy's claim. It reads the whole template only when the binding is
// missing or stale. It reports whether it wrote.
func (r *Reconciler) ensureBinding(ctx context.Context, tmpl *metav1.PartialObjectMetadata, p *policymatch.Policy, rb client.Object) (bool, error) {
	key := Key{GVK: tmpl.GroupVersionKind(), NamespacedName: client.ObjectKeyFromObject(tmpl)}
	exists := rb != nil
	if exists {
		rb = rb.DeepCopyObject().(client.Object)
	}
	if !exists {
		if at, ok := r.created.Load(key); ok && time.Since(at) < createdTTL {
			return false, errRetry
		}
	} else {
		r.created.Delete(key)
	}
	if exists && rb.GetDeletionTimestamp() != nil {
		// Wait for the old binding to go (its Works are being cleaned up). The detector
		// does not watch bindings, so it looks again rather than wait for an event.
		return false, errBindingGoing
	}
	revision := r.Interpreter.Revision(key.GVK)
	// A CronFederatedHPA that scaled the template gives its binding its replicas.
	scale, err := r.cronScale(ctx, key)
	if err != nil {
		return false, err
	}
	// A FederatedHPA that decided gives it its desired replicas, over any CronFederatedHPA.
	auto, err := r.autoScale(ctx, key)
	if err != nil {
		return false, err
	}
	if auto != nil {
		scale = nil
	}
	unchanged := exists && templateCurrent(rb, tmpl, p) && rb.GetAnnotations()[wellknown.InterpreterRevisionAnnotation] == revision &&
		rb.GetAnnotations()[wellknown.CronScaleAnnotation] == scale.Marker() && rb.GetAnnotations()[wellknown.FederatedHPAAnnotation] == auto.Marker()
	if unchanged && p.Spec.ActivationPreference == policyv1alpha1.LazyActivation {
		// activationPreference: Lazy: the policy's changes reach a template it already binds
		// when the template changes, not before (a policy over many templates then rolls out
		// with their own changes). A new claim, and a template that changed, get the policy as
		// it is now.
		return false, nil
	}
	policySide, err := r.policyFields(ctx, tmpl, p)
	if err != nil {
		return false, err
	}
	if unchanged && policyCurrent(bindings.Spec(rb), policySide) {
		return false, nil
	}

	// The version the metadata watch showed, as a feed saw it whole; else read from the host.
	full, fed := r.watcher.fed(tmpl)
	if !fed {
		full = &unstructured.Unstructured{}
		full.SetGroupVersionKind(key.GVK)
		if err := r.APIReader.Get(ctx, key.NamespacedName, full); err != nil {
			return false, client.IgnoreNotFound(err)
		}
	}
	replicas, req, err := r.Interpreter.GetReplicas(full)
	if err != nil {
		return false, &interpretError{fmt.Errorf("reading replicas of %s: %w", key, err)}
	}
	components, err := r.Interpreter.Components(full)
	if err != nil {
		return false, &interpretError{fmt.Errorf("reading the components of %s: %w", key, err)}
	}
	if scale.Applies(replicas) && len(components) == 0 {
		// The fleet runs the CronFederatedHPA's replicas while the template asks for what it
		// asked for when the rule fired; an edit of the template's replicas wins.
		replicas = scale.FleetReplicas
	}
	if auto.Applies(replicas) && len(components) == 0 {
		// The fleet runs the FederatedHPA's replicas; the template keeps its own.
		replicas = auto.Replicas
	}
	// A multi-component workload is not divided either, but the scheduler places its whole set
	// on one cluster (not every cluster): no warning for it.
	if divided(policySide.Placement) && !r.Interpreter.HasReplicas(full) && len(components) == 0 {
		r.Recorder.Eventf(tmpl, nil, corev1.EventTypeWarning, wellknown.EventReasonReplicasNotDivided, "Propagate",
			"%s places it Divided, but Flotilla does not know the replicas of %s: every cluster gets it whole, as Duplicated. "+
				"A ResourceInterpreterCustomization with a replicaResource script makes the kind divisible", p, key.GVK.GroupKind())
	}

	desired := newBinding(key)
	labels, annotations := bindingClaim(p)
	desired.SetLabels(labels)
	annotations[wellknown.ResourceTemplateGenerationAnnotation] = fmt.Sprint(full.GetGeneration())
	annotations[TemplateMetadataAnnotation] = metadataFingerprint(full)
	if revision != "" {
		annotations[wellknown.InterpreterRevisionAnnotation] = revision
	}
	if m := scale.Marker(); m != "" {
		annotations[wellknown.CronScaleAnnotation] = m
	}
	if m := auto.Marker(); m != "" {
		annotations[wellknown.FederatedHPAAnnotation] = m
	}
	desired.SetAnnotations(annotations)
	desired.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: full.GetAPIVersion(), Kind: full.GetKind(), Name: full.GetName(), UID: full.GetUID(),
		Controller: ptr.To(true),
	}})
	spec := bindings.Spec(desired)
	*spec = policySide
	spec.Resource = workv1alpha2.ObjectReference{
		APIVersion: full.GetAPIVersion(), Kind: full.GetKind(), Namespace: full.GetNamespace(), Name: full.GetName(),
		UID: full.GetUID(), ResourceVersion: full.GetResourceVersion(),
	}
	spec.Replicas = replicas
	spec.ReplicaRequirements = req
	spec.Components = components

	if !exists {
		idLabel := wellknown.ResourceBindingPermanentIDLabel
		if key.Namespace == "" {
			idLabel = wellknown.ClusterResourceBindingPermanentIDLabel
		}
		l := desired.GetLabels()
		l[idLabel] = string(newUUID())
		desired.SetLabels(l)
		// The binding controller's finalizer, and the dependencies controller's for a binding
		// that propagates its dependencies, set now to save them a write.
		finalizers := []string{wellknown.BindingControllerFinalizer}
		if spec.PropagateDeps && key.Namespace != "" {
			finalizers = append(finalizers, wellknown.DependenciesFinalizer)
		}
		desired.SetFinalizers(finalizers)
		if r.Placer != nil {
			// Created scheduled when it can be: the scheduler need not write its spec.
			if _, err := r.Placer.PlaceNew(ctx, desired); err != nil {
				ctrl.LoggerFrom(ctx).V(1).Info("No first placement at creation; the scheduler places the binding", "error", err.Error())
			}
		}
		err := r.Client.Create(ctx, desired)
		if err == nil || apierrors.IsAlreadyExists(err) {
			r.created.Store(key, time.Now())
		}
		if err == nil {
			r.Templates.Put(full)
		}
		if err != nil {
			if apierrors.IsAlreadyExists(err) {
				// Another reconcile of this template got there first and the cache has not
				// caught up; look again once it has.
				return false, errRetry
			}
			return false, err
		}
		return true, nil
	}

	// Update only what the detector owns; spec.clusters and the rest belong to others.
	before := rb.DeepCopyObject().(client.Object)
	mergeMaps(rb, desired)
	if revision == "" {
		ann := rb.GetAnnotations()
		delete(ann, wellknown.InterpreterRevisionAnnotation)
		rb.SetAnnotations(ann)
	}
	if scale == nil {
		ann := rb.GetAnnotations()
		delete(ann, wellknown.CronScaleAnnotation)
		rb.SetAnnotations(ann)
	}
	if auto == nil {
		ann := rb.GetAnnotations()
		delete(ann, wellknown.FederatedHPAAnnotation)
		rb.SetAnnotations(ann)
	}
	rb.SetOwnerReferences(desired.GetOwnerReferences())
	cur := bindings.Spec(rb)
	cur.Resource = spec.Resource
	cur.Replicas = spec.Replicas
	cur.ReplicaRequirements = spec.ReplicaRequirements
	cur.Components = spec.Components
	cur.Placement = spec.Placement
	cur.PropagateDeps = spec.PropagateDeps
	cur.SchedulerName = spec.SchedulerName
	cur.Failover = spec.Failover
	cur.ConflictResolution = spec.ConflictResolution
	cur.PreserveResourcesOnDeletion = spec.PreserveResourcesOnDeletion
	cur.SchedulePriority = spec.SchedulePriority
	cur.WorkloadAffinityGroups = spec.WorkloadAffinityGroups
	cur.Suspension = mergeSuspension(cur.Suspension, spec.Suspension)
	if equality.Semantic.DeepEqual(before, rb) {
		return false, nil
	}
	if err := r.Client.Patch(ctx, rb, client.MergeFrom(before)); err != nil {
		return false, err
	}
	r.Templates.Put(full)
	return true, nil
}

// policyFields is the part of a binding's spec that comes from the policy (and the template's
// conflict-resolution annotation).
func (r *Reconciler) policyFields(ctx context.Context, tmpl *metav1.PartialObjectMetadata, p *policymatch.Policy) (workv1alpha2.ResourceBindingSpec, error) {
	s := p.Spec
	out := workv1alpha2.ResourceBindingSpec{
		Placement: s.Placement.DeepCopy(),
		// association is Karmada's deprecated name for propagateDeps.
		PropagateDeps:               s.PropagateDeps || s.Association,
		SchedulerName:               s.SchedulerName,
		Failover:                    s.Failover.DeepCopy(),
		ConflictResolution:          s.ConflictResolution,
		PreserveResourcesOnDeletion: copyBool(s.PreserveResourcesOnDeletion),
	}
	if out.SchedulerName == "" {
		out.SchedulerName = wellknown.DefaultSchedulerName
	}
	if out.ConflictResolution == "" {
		out.ConflictResolution = policyv1alpha1.ConflictAbort
	}
	switch tmpl.Annotations[wellknown.ConflictResolutionAnnotation] {
	case wellknown.ConflictResolutionOverwrite:
		out.ConflictResolution = policyv1alpha1.ConflictOverwrite
	case wellknown.ConflictResolutionAbort:
		out.ConflictResolution = policyv1alpha1.ConflictAbort
	}
	if s.Suspension != nil {
		out.Suspension = &workv1alpha2.Suspension{Suspension: *s.Suspension.DeepCopy()}
	}
	out.WorkloadAffinityGroups = WorkloadAffinityGroups(tmpl, s.Placement.WorkloadAffinity)
	if s.SchedulePriority != nil && s.SchedulePriority.PriorityClassSource == policyv1alpha1.KubePriorityClass {
		pc := &schedulingv1.PriorityClass{}
		if err := r.Client.Get(ctx, types.NamespacedName{Name: s.SchedulePriority.PriorityClassName}, pc); err != nil {
			if !apierrors.IsNotFound(err) {
				return out, err
			}
			return out, fmt.Errorf("%s: schedulePriority.priorityClassName %q: no such PriorityClass", p, s.SchedulePriority.PriorityClassName)
		}
		out.SchedulePriority = &workv1alpha2.SchedulePriority{Priority: pc.Value}
	}
	return out, nil
}

// WorkloadAffinityGroups instantiates placement.workloadAffinity for a template, as Karmada's
// detector does: each group is "key=value", the template's label under the rule's
// groupByLabelKey. A template without that label is in no group for the rule. Groups are
// namespaced (the scheduler looks for peers in the template's namespace), so a
// cluster-scoped template, whose binding is a ClusterResourceBinding, gets none. Nil when
// there is no group.
func WorkloadAffinityGroups(tmpl metav1.Object, wa *policyv1alpha1.WorkloadAffinity) *workv1alpha2.WorkloadAffinityGroups {
	if wa == nil || tmpl.GetNamespace() == "" {
		return nil
	}
	group := func(t *policyv1alpha1.WorkloadAffinityTerm) string {
		if t == nil {
			return ""
		}
		if v, ok := tmpl.GetLabels()[t.GroupByLabelKey]; ok {
			return t.GroupByLabelKey + "=" + v
		}
		return ""
	}
	g := &workv1alpha2.WorkloadAffinityGroups{AffinityGroup: group(wa.Affinity), AntiAffinityGroup: group(wa.AntiAffinity)}
	if g.AffinityGroup == "" && g.AntiAffinityGroup == "" {
		return nil
	}
	return g
}

func copyBool(b *bool) *bool {
	if b == nil {
		return nil
	}
	return ptr.To(*b)
}

// templateCurrent reports whether the binding is the policy's and already reflects this
// version of the template, so the template need not be read.
func templateCurrent(rb client.Object, tmpl *metav1.PartialObjectMetadata, p *policymatch.Policy) bool {
	labels, annotations := bindingClaim(p)
	for k, v := range labels {
		if rb.GetLabels()[k] != v {
			return false
		}
	}
	for k, v := range annotations {
		if rb.GetAnnotations()[k] != v {
			return false
		}
	}
	spec := bindings.Spec(rb)
	if spec.Resource.UID != tmpl.UID {
		return false
	}
	if generationTracksContent(tmpl) {
		// The generation and the labels and annotations, not the resourceVersion: a label or
		// annotation edit changes no generation but must reach the members, while the status
		// the binding-status controller writes onto the template changes the resourceVersion
		// only (rewriting the binding for it would cost a write per stage, each time).
		if a := rb.GetAnnotations(); a[wellknown.ResourceTemplateGenerationAnnotation] != fmt.Sprint(tmpl.Generation) ||
			a[TemplateMetadataAnnotation] != metadataFingerprint(tmpl) {
			return false
		}
	} else if spec.Resource.ResourceVersion != tmpl.ResourceVersion {
		// Kinds whose generation does not follow every edit (a ConfigMap's data, a Role's
		// rules): any change counts.
		return false
	}
	return true
}

// policyCurrent reports whether the binding's spec already has the policy's part.
func policyCurrent(spec *workv1alpha2.ResourceBindingSpec, policySide workv1alpha2.ResourceBindingSpec) bool {
	var susp *workv1alpha2.Suspension
	if spec.Suspension != nil {
		susp = &workv1alpha2.Suspension{Suspension: spec.Suspension.Suspension}
	}
	return equality.Semantic.DeepEqual(spec.Placement, policySide.Placement) &&
		spec.PropagateDeps == policySide.PropagateDeps &&
		spec.SchedulerName == policySide.SchedulerName &&
		equality.Semantic.DeepEqual(spec.Failover, policySide.Failover) &&
		spec.ConflictResolution == policySide.ConflictResolution &&
		equality.Semantic.DeepEqual(spec.PreserveResourcesOnDeletion, policySide.PreserveResourcesOnDeletion) &&
		equality.Semantic.DeepEqual(spec.SchedulePriority, policySide.SchedulePriority) &&
		equality.Semantic.DeepEqual(spec.WorkloadAffinityGroups, policySide.WorkloadAffinityGroups) &&
		equality.Semantic.DeepEqual(susp, policySide.Suspension)
}

// generationTracksContent reports whether every edit of the template but its metadata and
// status changes its generation: custom resources (the apiextensions apiserver counts every
// other change), and the built-in kinds with a spec whose status Flotilla writes. Other
// kinds (ConfigMaps, Secrets, RBAC, Services, ...) keep no generation, or not for every field.
func generationTracksContent(tmpl *metav1.PartialObjectMetadata) bool {
	if tmpl.Generation == 0 {
		return false
	}
	switch g := tmpl.GroupVersionKind().Group; {
	case g == "apps" || g == "batch" || g == "policy" || g == "autoscaling":
		return true
	case g == "" || !strings.Contains(g, ".") || g == "k8s.io" || strings.HasSuffix(g, ".k8s.io"):
		return false // the core group and other built-in groups
	default:
		return true
	}
}

// TemplateMetadataAnnotation on a binding is the fingerprint of its template's labels and
// annotations when the binding was last written (metadataFingerprint).
const TemplateMetadataAnnotation = "flotilla.io/template-metadata"

// metadataFingerprint is a short hash of o's labels and annotations, but for kubectl's
// last-applied-configuration: the interpreter prunes it from what reaches the members (it
// changes nothing there), and the detector does not cache it (trimTemplateMetadata).
func metadataFingerprint(o metav1.Object) string {
	h := sha256.New()
	for _, m := range []map[string]string{o.GetLabels(), o.GetAnnotations()} {
		keys := make([]string, 0, len(m))
		for k := range m {
			if k == corev1.LastAppliedConfigAnnotation {
				continue
			}
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(h, "%q=%q;", k, m[k])
		}
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// divided reports whether a placement divides replicas between clusters.
func divided(p *policyv1alpha1.Placement) bool {
	return p != nil && p.ReplicaScheduling != nil && p.ReplicaScheduling.ReplicaSchedulingType == policyv1alpha1.ReplicaSchedulingTypeDivided
}

// missingOverrides lists the policy's dependentOverrides that do not exist (or are being
// deleted) in the template's namespace. Cluster-scoped templates have no OverridePolicies;
// docs/guides/override-per-cluster.md says their policies' dependentOverrides are not waited for.
func (r *Reconciler) missingOverrides(ctx context.Context, namespace string, p *policymatch.Policy) ([]string, error) {
	if namespace == "" || len(p.Spec.DependentOverrides) == 0 {
		return nil, nil
	}
	var missing []string
	for _, name := range p.Spec.DependentOverrides {
		op := &policyv1alpha1.OverridePolicy{}
		err := r.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, op)
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, name)
		case err != nil:
			return nil, err
		case op.DeletionTimestamp != nil:
			missing = append(missing, name)
		}
	}
	return missing, nil
}

// reportWaiting tells, once per change, that the template waits for its policy's dependent
// overrides.
func (r *Reconciler) reportWaiting(tmpl *metav1.PartialObjectMetadata, key Key, p *policymatch.Policy, missing []string) {
	msg := fmt.Sprintf("Waiting for OverridePolicies %s in namespace %s, which %s lists in dependentOverrides: nothing is propagated before them",
		strings.Join(missing, ", "), tmpl.Namespace, p)
	if prev, ok := r.waiting.Load(key); ok && prev == msg {
		return
	}
	r.waiting.Store(key, msg)
	r.Recorder.Eventf(tmpl, nil, corev1.EventTypeWarning, wellknown.EventReasonDependentOverridesMissing, "Propagate", msg)
}

// mergeSuspension takes the policy's dispatching fields and keeps the binding's own
// scheduling pause, which users set on bindings directly.
func mergeSuspension(cur, fromPolicy *workv1alpha2.Suspension) *workv1alpha2.Suspension {
	var scheduling *bool
	if cur != nil {
		scheduling = cur.Scheduling
	}
	if fromPolicy == nil && scheduling == nil {
		return nil
	}
	out := &workv1alpha2.Suspension{Scheduling: scheduling}
	if fromPolicy != nil {
		out.Suspension = fromPolicy.Suspension
	}
	return out
}

// bindingClaim is the claim of a template by p, as its binding carries it (Karmada's keys):
// the policy's permanent-id label, and annotations with its name (and namespace).
func bindingClaim(p *policymatch.Policy) (labels, annotations map[string]string) {
	if p.IsCluster() {
		return map[string]string{wellknown.ClusterPropagationPolicyPermanentIDLabel: p.PermanentID},
			map[string]string{wellknown.ClusterPropagationPolicyNameAnnotation: p.Name}
	}
	return map[string]string{wellknown.PropagationPolicyPermanentIDLabel: p.PermanentID},
		map[string]string{wellknown.PropagationPolicyNamespaceAnnotation: p.Namespace, wellknown.PropagationPolicyNameAnnotation: p.Name}
}

// mergeMaps sets desired's labels and annotations on obj, keeping obj's others; the claim of
// the other policy kind is removed (a PP may take a template from a CPP).
func mergeMaps(obj, desired client.Object) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	for _, k := range claimLabels {
		delete(labels, k)
	}
	for k, v := range desired.GetLabels() {
		labels[k] = v
	}
	obj.SetLabels(labels)
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	for _, k := range claimAnnotations {
		delete(ann, k)
	}
	for k, v := range desired.GetAnnotations() {
		ann[k] = v
	}
	obj.SetAnnotations(ann)
}

func newUUID() types.UID { return types.UID(uuid.NewString()) }

// errRetry asks Reconcile to look again shortly without reporting an error.
var errRetry = errors.New("retry")

// errBindingGoing says the template's previous binding is still being deleted.
var errBindingGoing = errors.New("the previous binding is being deleted")

const (
	// retryAfter is how long to wait for the cache to catch up with a write of ours.
	retryAfter = 200 * time.Millisecond
	// createdTTL bounds how long a created binding that the cache does not show yet is
	// trusted to be on its way.
	createdTTL = 10 * time.Second
	// bindingGoingRetry is how often a template whose previous binding is being deleted
	// looks again.
	bindingGoingRetry = time.Second
)

// PermanentID is a policy's permanent id: its permanent-id label, which the policy labeler
// sets to the policy's UID, or the UID itself before the label is written.
func PermanentID(o client.Object, label string) string {
	if id := o.GetLabels()[label]; id != "" {
		return id
	}
	return string(o.GetUID())
}
