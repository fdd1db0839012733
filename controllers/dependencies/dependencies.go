// Package dependencies propagates what workloads need, for policies with propagateDeps: the
// ConfigMaps, Secrets, ServiceAccounts and claims a Deployment's pods mount (or whatever a
// customization's dependencyInterpretation lists) follow the workload to its clusters.
//
// Each dependency gets an attached ResourceBinding, named as any binding of its template
// (<name>-<kind>), without a placement of its own. Its spec.requiredBy lists a snapshot
// (namespace, name, clusters) of every workload binding that needs it; the binding controller
// sends it to the union of those clusters (bindings.Targets), so two workloads sharing a
// ConfigMap share one binding, and a cluster loses the ConfigMap only when no workload there
// needs it. A dependency that has a policy of its own keeps its binding: the policy's
// placement, overrides and conflict resolution apply, and the workloads' clusters are added
// (as in Karmada). A dependency that does not exist yet is reported on the workload and
// propagated as soon as it appears (the detector tells Appeared).
package dependencies

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers/detector"
	"github.com/flotilla-io/flotilla/internal/bindings"
	"github.com/flotilla-io/flotilla/internal/memo"
)

// Interpreter lists a template's dependencies.
type Interpreter interface {
	GetDependencies(obj *unstructured.Unstructured) ([]configv1alpha1.DependentObjectReference, error)
}

// Reconciler keeps the attached bindings of every ResourceBinding with propagateDeps, and
// drops the requiredBy entries of workloads that are gone. Create it with New.
type Reconciler struct {
	// Client reads bindings from the manager's cache and writes them.
	Client client.Client
	// APIReader reads templates and dependencies straight from the host.
	APIReader client.Reader
	// Recorder emits events on workload templates.
	Recorder events.EventRecorder
	// Interpreter lists dependencies.
	Interpreter Interpreter
	// SuccessEvents records SyncScheduleResultToDependenciesSucceed when a dependency's
	// binding is written (--record-success-events); failures are always recorded.
	SuccessEvents bool

	waits *waitlist
	// announced holds, per workload binding, the missing dependencies last reported, so
	// that each change is reported once.
	announced memo.Map[types.NamespacedName, string]
}

// New returns a Reconciler.
func New(c client.Client, apiReader client.Reader, recorder events.EventRecorder, interp Interpreter) *Reconciler {
	return &Reconciler{Client: c, APIReader: apiReader, Recorder: recorder, Interpreter: interp, waits: newWaitlist()}
}

// +kubebuilder:rbac:groups=work.karmada.io,resources=resourcebindings,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile syncs one binding: as a workload, the attached bindings of its dependencies; as a
// dependency, its requiredBy entries of workloads that are gone.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rb := &workv1alpha2.ResourceBinding{}
	err := r.Client.Get(ctx, req.NamespacedName, rb)
	found := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	var wanted map[string]bool
	if found && rb.DeletionTimestamp == nil && rb.Spec.PropagateDeps {
		// Held until the dependencies are released (below, once it is deleted).
		if err := r.setFinalizer(ctx, rb, true); err != nil {
			return ctrl.Result{}, err
		}
		if wanted, err = r.syncDependencies(ctx, rb); err != nil {
			// Release nothing on a partial view of what the workload needs.
			if errors.Is(err, errRace) {
				return ctrl.Result{RequeueAfter: raceRetry}, nil
			}
			return ctrl.Result{}, err
		}
	} else {
		r.waits.set(req.NamespacedName, nil)
		r.announced.Delete(req.NamespacedName)
	}
	var preserve bool
	if found && rb.DeletionTimestamp != nil {
		preserve = ptr.Deref(rb.Spec.PreserveResourcesOnDeletion, false)
	}
	err = r.release(ctx, req.NamespacedName, wanted, preserve)
	if err == nil && found && (rb.DeletionTimestamp != nil || !rb.Spec.PropagateDeps) {
		// Released with the workload's own decision to preserve: the binding may go.
		err = r.setFinalizer(ctx, rb, false)
	}
	if err == nil && found && len(rb.Spec.RequiredBy) > 0 {
		err = r.pruneStale(ctx, rb)
	}
	if errors.Is(err, errRace) {
		return ctrl.Result{RequeueAfter: raceRetry}, nil
	}
	return ctrl.Result{}, err
}

// setFinalizer adds or removes the DependenciesFinalizer of a workload's binding, when it
// has to change.
func (r *Reconciler) setFinalizer(ctx context.Context, rb *workv1alpha2.ResourceBinding, want bool) error {
	if controllerutil.ContainsFinalizer(rb, wellknown.DependenciesFinalizer) == want {
		return nil
	}
	before := rb.DeepCopy()
	if want {
		controllerutil.AddFinalizer(rb, wellknown.DependenciesFinalizer)
	} else {
		controllerutil.RemoveFinalizer(rb, wellknown.DependenciesFinalizer)
	}
	// The lock keeps the finalizers of others (the binding controller's) as they are now.
	return raced(r.Client.Patch(ctx, rb, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})))
}

// syncDependencies makes sure every dependency of the workload has an attached binding that
// lists it, and returns those bindings' names.
func (r *Reconciler) syncDependencies(ctx context.Context, rb *workv1alpha2.ResourceBinding) (map[string]bool, error) {
	parent := client.ObjectKeyFromObject(rb)
	res := rb.Spec.Resource
	tmpl := &unstructured.Unstructured{}
	tmpl.SetAPIVersion(res.APIVersion)
	tmpl.SetKind(res.Kind)
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: res.Namespace, Name: res.Name}, tmpl); err != nil {
		// A workload without its template is about to be unbound by the detector.
		return nil, client.IgnoreNotFound(err)
	}
	deps, err := r.Interpreter.GetDependencies(tmpl)
	if err != nil {
		r.Recorder.Eventf(tmpl, rb, corev1.EventTypeWarning, wellknown.EventReasonGetDependenciesFailed, "PropagateDeps",
			"Cannot list the dependencies: %v", err)
		return nil, err
	}
	snapshot := workv1alpha2.BindingSnapshot{Namespace: rb.Namespace, Name: rb.Name}
	for _, tc := range bindings.Targets(&rb.Spec) {
		snapshot.Clusters = append(snapshot.Clusters, workv1alpha2.TargetCluster{Name: tc.Name, Replicas: tc.Replicas})
	}
	wanted := map[string]bool{}
	var missing, refused, written []string
	var raced bool
	var waitFor []waitKey
	var errs []error
	for _, d := range deps {
		ns := d.Namespace
		if ns == "" {
			ns = rb.Namespace
		}
		ref := fmt.Sprintf("%s %s/%s", d.Kind, ns, d.Name)
		if d.LabelSelector != nil {
			ref = fmt.Sprintf("%s in %s selected by %s", d.Kind, ns, metav1.FormatLabelSelector(d.LabelSelector))
		}
		if ns != rb.Namespace {
			// An attached binding lives beside its template, in a namespace that may not be
			// opted in; dependencies are the workload's own namespace's.
			refused = append(refused, ref)
			continue
		}
		gv, err := schema.ParseGroupVersion(d.APIVersion)
		if err != nil || d.Kind == "" {
			refused = append(refused, ref)
			continue
		}
		gvk := gv.WithKind(d.Kind)
		objs, err := r.resolve(ctx, gvk, ns, d)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", ref, err))
			continue
		}
		if len(objs) == 0 && d.Name != "" {
			missing = append(missing, ref)
			waitFor = append(waitFor, waitKey{gk: gvk.GroupKind(), NamespacedName: types.NamespacedName{Namespace: ns, Name: d.Name}})
			continue
		}
		for _, o := range objs {
			name := detector.BindingName(gvk.Kind, o.Name)
			wanted[name] = true
			changed, err := r.attach(ctx, gvk, o, name, snapshot, rb)
			if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
				// Another workload (or the detector) wrote the binding first: look again.
				raced = true
				continue
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%s %s: %w", gvk.Kind, o.Name, err))
				continue
			}
			if changed {
				written = append(written, gvk.Kind+" "+o.Name)
			}
		}
	}
	r.waits.set(parent, waitFor)
	r.announce(tmpl, rb, missing, refused)
	if len(written) > 0 && r.SuccessEvents {
		r.Recorder.Eventf(tmpl, rb, corev1.EventTypeNormal, wellknown.EventReasonSyncScheduleResultToDependenciesSucceed, "PropagateDeps",
			"Dependencies follow the workload: %s", strings.Join(written, ", "))
	}
	if err := errors.Join(errs...); err != nil {
		r.Recorder.Eventf(tmpl, rb, corev1.EventTypeWarning, wellknown.EventReasonSyncScheduleResultToDependenciesFailed, "PropagateDeps",
			"Cannot propagate dependencies: %v", err)
		return nil, err
	}
	if raced {
		return nil, errRace
	}
	return wanted, nil
}

// errRace says another writer changed a dependency's binding first.
var errRace = errors.New("a dependency's binding changed meanwhile")

// raceRetry is how soon a workload that raced another writer looks again.
const raceRetry = 100 * time.Millisecond

// announce reports missing and refused dependencies on the template, once per change.
func (r *Reconciler) announce(tmpl *unstructured.Unstructured, rb *workv1alpha2.ResourceBinding, missing, refused []string) {
	key := client.ObjectKeyFromObject(rb)
	msg := ""
	if len(missing) > 0 {
		msg = fmt.Sprintf("Waiting for %s: the workload's pods need them on its clusters; they propagate when created", strings.Join(missing, ", "))
	}
	if len(refused) > 0 {
		if msg != "" {
			msg += ". "
		}
		msg += fmt.Sprintf("Not propagated: %s (a dependency must be a named or selected object of the workload's own namespace, with an apiVersion and kind)", strings.Join(refused, ", "))
	}
	if prev, _ := r.announced.Load(key); prev == msg { // nothing announced counts as ""
		return
	}
	r.announced.Store(key, msg)
	if msg != "" {
		r.Recorder.Eventf(tmpl, rb, corev1.EventTypeWarning, wellknown.EventReasonDependencyMissing, "PropagateDeps", msg)
	}
}

// resolve finds the objects a dependency names: the named one (none when it does not exist)
// or those its label selector selects.
func (r *Reconciler) resolve(ctx context.Context, gvk schema.GroupVersionKind, ns string, d configv1alpha1.DependentObjectReference) ([]*metav1.PartialObjectMetadata, error) {
	if d.LabelSelector == nil {
		o := &metav1.PartialObjectMetadata{}
		o.SetGroupVersionKind(gvk)
		if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: ns, Name: d.Name}, o); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil
			}
			return nil, err
		}
		if o.DeletionTimestamp != nil {
			return nil, nil
		}
		return []*metav1.PartialObjectMetadata{o}, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(d.LabelSelector)
	if err != nil {
		return nil, err
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := r.APIReader.List(ctx, list, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, err
	}
	out := make([]*metav1.PartialObjectMetadata, 0, len(list.Items))
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp == nil {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// attach creates the dependency's binding, or adds the workload's snapshot to it. It reports
// whether it wrote.
func (r *Reconciler) attach(ctx context.Context, gvk schema.GroupVersionKind, dep *metav1.PartialObjectMetadata, name string,
	snapshot workv1alpha2.BindingSnapshot, parent *workv1alpha2.ResourceBinding) (bool, error) {
	resource := workv1alpha2.ObjectReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: dep.Namespace,
		Name: dep.Name, UID: dep.UID, ResourceVersion: dep.ResourceVersion}
	cur := &workv1alpha2.ResourceBinding{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: dep.Namespace, Name: name}, cur)
	if apierrors.IsNotFound(err) {
		rb := &workv1alpha2.ResourceBinding{
			ObjectMeta: metav1.ObjectMeta{
				Namespace:  dep.Namespace,
				Name:       name,
				Labels:     map[string]string{wellknown.ResourceBindingPermanentIDLabel: uuid.NewString()},
				Finalizers: []string{wellknown.BindingControllerFinalizer},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: resource.APIVersion, Kind: resource.Kind, Name: dep.Name,
					UID: dep.UID, Controller: ptr.To(true)}},
			},
			Spec: workv1alpha2.ResourceBindingSpec{
				Resource:           resource,
				RequiredBy:         []workv1alpha2.BindingSnapshot{snapshot},
				ConflictResolution: parent.Spec.ConflictResolution,
			},
		}
		if err := r.Client.Create(ctx, rb); err != nil {
			// AlreadyExists: the detector or another workload got there first; the retry
			// updates it.
			return false, err
		}
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if cur.DeletionTimestamp != nil {
		return false, fmt.Errorf("its binding %s is being deleted; trying again", name)
	}
	before := cur.DeepCopy()
	cur.Spec.RequiredBy = withSnapshot(cur.Spec.RequiredBy, snapshot)
	if !claimed(cur) {
		// The detector keeps the resource of a binding a policy claims; an attached one's
		// is kept here and by the detector when the dependency changes.
		if cur.Spec.Resource.UID != dep.UID {
			cur.Spec.Resource = resource
			cur.OwnerReferences = []metav1.OwnerReference{{APIVersion: resource.APIVersion, Kind: resource.Kind, Name: dep.Name,
				UID: dep.UID, Controller: ptr.To(true)}}
		}
		if cur.Spec.Placement == nil {
			cur.Spec.ConflictResolution = parent.Spec.ConflictResolution
		}
	}
	if equality.Semantic.DeepEqual(before, cur) {
		return false, nil
	}
	// The lock keeps two workloads from overwriting each other's requiredBy entries.
	return true, r.Client.Patch(ctx, cur, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}

// release removes the workload from the requiredBy of the attached bindings it no longer
// needs (all of them when wanted is nil), deleting the ones nobody needs and no policy claims.
// preserve marks them preserveResourcesOnDeletion first: the workload is being unbound with
// its member objects kept, and its dependencies stay with it.
func (r *Reconciler) release(ctx context.Context, parent types.NamespacedName, wanted map[string]bool, preserve bool) error {
	list := &workv1alpha2.ResourceBindingList{}
	if err := r.Client.List(ctx, list, client.InNamespace(parent.Namespace), client.MatchingFields{IndexRequiredBy: parent.String()}); err != nil {
		return err
	}
	var errs []error
	for i := range list.Items {
		b := &list.Items[i]
		if wanted[b.Name] || b.DeletionTimestamp != nil {
			continue
		}
		errs = append(errs, r.drop(ctx, b, func(s workv1alpha2.BindingSnapshot) bool {
			return s.Namespace == parent.Namespace && s.Name == parent.Name
		}, preserve))
	}
	return errors.Join(errs...)
}

// pruneStale drops the requiredBy entries of workloads that are gone or no longer propagate
// their dependencies (their own reconcile may have been missed while the manager was down).
func (r *Reconciler) pruneStale(ctx context.Context, rb *workv1alpha2.ResourceBinding) error {
	if rb.DeletionTimestamp != nil {
		return nil
	}
	stale := map[types.NamespacedName]bool{}
	for _, s := range rb.Spec.RequiredBy {
		key := types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
		if key.Namespace == "" {
			key.Namespace = rb.Namespace
		}
		p := &workv1alpha2.ResourceBinding{}
		err := r.Client.Get(ctx, key, p)
		switch {
		case apierrors.IsNotFound(err):
			stale[key] = true
		case err != nil:
			return err
		case !p.Spec.PropagateDeps:
			stale[key] = true
		}
	}
	if len(stale) == 0 {
		return nil
	}
	return r.drop(ctx, rb, func(s workv1alpha2.BindingSnapshot) bool {
		ns := s.Namespace
		if ns == "" {
			ns = rb.Namespace
		}
		return stale[types.NamespacedName{Namespace: ns, Name: s.Name}]
	}, false)
}

// preserveAttempts bounds drop's fresh reads of a binding whose preserve patch met a conflict.
const preserveAttempts = 5

// errPreserveRace says the preserve patch of a binding about to be deleted met a conflict.
var errPreserveRace = errors.New("the binding changed before it was marked to preserve its member objects")

// drop removes the matching requiredBy entries; a binding left without any, and without a
// policy of its own, is deleted as it is, its requiredBy untouched: emptied first, a delete
// that then failed (the binding changed meanwhile) would leave a binding that no workload
// lists, that no retry would find again, and that nothing else deletes.
//
// When it is to preserve its member objects, a conflict on marking it so is retried here, on
// a fresh read, rather than at the next reconcile: by then the workload's binding may be gone,
// and with it the knowledge that the workload's member objects, and so its dependencies', are
// kept. Once marked, a delete that fails loses nothing.
func (r *Reconciler) drop(ctx context.Context, b *workv1alpha2.ResourceBinding, match func(workv1alpha2.BindingSnapshot) bool, preserve bool) error {
	for attempt := 1; ; attempt++ {
		err := r.dropOnce(ctx, b, match, preserve)
		if !errors.Is(err, errPreserveRace) {
			return err
		}
		if attempt == preserveAttempts {
			return fmt.Errorf("%w: %w", errRace, err)
		}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
			return client.IgnoreNotFound(err)
		}
	}
}

func (r *Reconciler) dropOnce(ctx context.Context, b *workv1alpha2.ResourceBinding, match func(workv1alpha2.BindingSnapshot) bool, preserve bool) error {
	remaining := slices.DeleteFunc(slices.Clone(b.Spec.RequiredBy), match)
	if len(remaining) == len(b.Spec.RequiredBy) {
		return nil
	}
	if len(remaining) == 0 && !claimed(b) {
		if preserve && !ptr.Deref(b.Spec.PreserveResourcesOnDeletion, false) {
			before := b.DeepCopy()
			b.Spec.PreserveResourcesOnDeletion = ptr.To(true)
			if err := r.Client.Patch(ctx, b, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
				if apierrors.IsConflict(err) {
					return fmt.Errorf("%w: %w", errPreserveRace, err)
				}
				return client.IgnoreNotFound(err)
			}
		}
		ctrl.LoggerFrom(ctx).Info("Removing a dependency no workload needs", "binding", client.ObjectKeyFromObject(b), "preserve", preserve)
		return raced(r.Client.Delete(ctx, b, client.Preconditions{ResourceVersion: ptr.To(b.ResourceVersion)}))
	}
	before := b.DeepCopy()
	b.Spec.RequiredBy = remaining
	return raced(r.Client.Patch(ctx, b, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})))
}

// raced turns a conflict (the binding changed since it was read) into errRace, for a retry
// on a newer copy; a binding already gone is no error.
func raced(err error) error {
	if apierrors.IsConflict(err) {
		return fmt.Errorf("%w: %w", errRace, err)
	}
	return client.IgnoreNotFound(err)
}

// withSnapshot returns list with s in place of the entry of the same binding, or added,
// sorted by namespace and name.
func withSnapshot(list []workv1alpha2.BindingSnapshot, s workv1alpha2.BindingSnapshot) []workv1alpha2.BindingSnapshot {
	out := slices.DeleteFunc(slices.Clone(list), func(e workv1alpha2.BindingSnapshot) bool {
		return e.Namespace == s.Namespace && e.Name == s.Name
	})
	out = append(out, s)
	slices.SortFunc(out, func(a, b workv1alpha2.BindingSnapshot) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// claimed reports whether the detector owns the binding: a policy claims it, or claimed it and
// was deleted (the binding then keeps its clusters until its template goes: it is not the
// dependencies' to delete when no workload needs it any more).
func claimed(b *workv1alpha2.ResourceBinding) bool {
	l := b.GetLabels()
	return l[wellknown.PropagationPolicyPermanentIDLabel] != "" || l[wellknown.ClusterPropagationPolicyPermanentIDLabel] != "" ||
		len(b.Spec.Clusters) > 0
}
