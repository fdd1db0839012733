// Package binding turns scheduled bindings into Works: for each target cluster it revises the
// template's replicas, applies ClusterOverridePolicies then OverridePolicies, and writes one
// Work in the cluster's execution namespace. It removes the Works of clusters no longer
// scheduled, and on binding deletion deletes all of them (telling them to keep the member
// objects when the binding says so).
package binding

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"
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
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers/rollout"
	"github.com/flotilla-io/flotilla/internal/bindings"
	"github.com/flotilla-io/flotilla/internal/failover"
	"github.com/flotilla-io/flotilla/internal/handoff"
	"github.com/flotilla-io/flotilla/internal/memo"
	"github.com/flotilla-io/flotilla/internal/overrides"
	"github.com/flotilla-io/flotilla/internal/resourceselector"
	"github.com/flotilla-io/flotilla/internal/shard"
)

// Interpreter prepares a template for a member.
type Interpreter interface {
	// Prune removes the fields the host filled in.
	Prune(obj *unstructured.Unstructured) *unstructured.Unstructured
	// ReviseReplicas sets the replicas a cluster was assigned.
	ReviseReplicas(obj *unstructured.Unstructured, replicas int64) (*unstructured.Unstructured, error)
}

// RolloutGate gates a template's revisions per cluster: it returns, for the binding, how each
// cluster's template is made and the labels its Work carries, or nil when no rollout governs
// the binding (every cluster is rendered from the template as it is).
type RolloutGate interface {
	For(ctx context.Context, rb client.Object, tmpl *unstructured.Unstructured) (rollout.ClusterTemplate, error)
}

// FieldOwner is the field manager of the binding controller's status fields.
const FieldOwner = "flotilla-binding"

// Reconciler renders the Works of one kind of binding.
type Reconciler struct {
	// Shards, when set, is this replica's share of a sharded manager: only the keys of its
	// shards are reconciled (nil: every key).
	Shards *shard.Set

	Client      client.Client
	APIReader   client.Reader
	Recorder    events.EventRecorder
	Interpreter Interpreter
	// NewBinding returns an empty ResourceBinding or ClusterResourceBinding.
	NewBinding func() client.Object
	// Templates, when set, holds the templates the detector read for their bindings: the
	// version a binding names is taken from there rather than read from the host again.
	Templates *handoff.Templates
	// Rollouts, when set, says which revision of the template each cluster's Work carries
	// (progressive rollouts, controllers/rollout).
	Rollouts RolloutGate
	// SuccessEvents records SyncWorkSucceed when a binding's Works are written anew
	// (--record-success-events); failures are always recorded.
	SuccessEvents bool

	// created remembers, by binding (its permanent id), the Works this controller created
	// that its cache may not show yet. The binding's deletion can come before they do (a
	// template deleted right after its binding was made), and a finalizer released on a
	// cache without them would leave them, and their member objects, with no binding.
	created memo.Map[string, map[string]createdWork]
	// overridden remembers, by binding UID, the Overridden condition this controller last
	// wrote (see setOverridden). Only bindings that had an override fail have one.
	overridden memo.Map[types.UID, metav1.Condition]
}

// createdWork is a Work created for one cluster of a binding.
type createdWork struct {
	uid types.UID
	at  time.Time
}

// createdSeenWithin bounds how long a created Work is waited for in the cache: a cache lags
// by moments, and a Work deleted before the cache saw it is never seen.
const createdSeenWithin = time.Minute

// +kubebuilder:rbac:groups=work.karmada.io,resources=resourcebindings;clusterresourcebindings,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=work.karmada.io,resources=resourcebindings/status;clusterresourcebindings/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=work.karmada.io,resources=works,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy.karmada.io,resources=overridepolicies;clusteroverridepolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.karmada.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile renders one binding's Works.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rb := r.NewBinding()
	if err := r.Client.Get(ctx, req.NamespacedName, rb); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	spec := bindings.Spec(rb)
	log := ctrl.LoggerFrom(ctx).WithValues(bindings.Kind(rb), req.String())
	ctx = ctrl.LoggerInto(ctx, log)

	if rb.GetDeletionTimestamp() != nil {
		r.overridden.Delete(rb.GetUID())
		return r.finalize(ctx, rb)
	}
	if !controllerutil.ContainsFinalizer(rb, wellknown.BindingControllerFinalizer) {
		// A binding written by someone else than the detector: add the finalizer and go on
		// (the patch changes no generation, so it is not an event that comes back here).
		patch := client.MergeFrom(rb.DeepCopyObject().(client.Object))
		controllerutil.AddFinalizer(rb, wellknown.BindingControllerFinalizer)
		if err := r.Client.Patch(ctx, rb, patch); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}

	existing, err := bindings.WorksByCluster(ctx, r.Client, rb)
	if err != nil {
		return ctrl.Result{}, err
	}
	// Works this replica created that its cache does not show yet: one of a cluster the
	// binding has left since is deleted once the cache shows it (its creation brings no
	// binding back, so the pass comes back for it).
	unseen := r.unseen(rb, existing)
	var renderErrs, writeErrs []error
	var written []string
	var writes []workWrite
	var waiting bool
	wanted := map[string]bool{}
	if targets := bindings.Targets(spec); len(targets) > 0 {
		tmpl, err := r.template(ctx, &spec.Resource)
		if err != nil {
			// A missing template means the detector is about to delete this binding.
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		cops, ops, err := r.overridePolicies(ctx, tmpl)
		if err != nil {
			return ctrl.Result{}, err
		}
		var gate rollout.ClusterTemplate
		if r.Rollouts != nil {
			if gate, err = r.Rollouts.For(ctx, rb, tmpl); err != nil {
				return ctrl.Result{}, err
			}
		}
		for _, tc := range targets {
			wanted[tc.Name] = true
			cluster := &clusterv1alpha1.Cluster{}
			if err := r.Client.Get(ctx, types.NamespacedName{Name: tc.Name}, cluster); err != nil {
				if apierrors.IsNotFound(err) {
					continue // the scheduler moves the binding off a removed cluster
				}
				return ctrl.Result{}, err
			}
			if !cluster.DeletionTimestamp.IsZero() {
				// The Cluster is being deleted: its controller deletes its Works, and writing
				// them again would keep it from going. The scheduler moves the binding off it.
				continue
			}
			clusterTmpl, revision := tmpl, map[string]string(nil)
			if gate != nil {
				clusterTmpl, revision = gate(tc.Name)
			}
			work, err := r.render(rb, clusterTmpl, cluster, tc.Replicas, cops, ops)
			if err != nil {
				renderErrs = append(renderErrs, fmt.Errorf("cluster %s: %w", tc.Name, err))
				continue
			}
			maps.Copy(work.Labels, revision)
			if cur := existing[tc.Name]; cur != nil && cur.DeletionTimestamp != nil {
				// Its deletion event brings the binding back to write it anew.
				waiting = true
				continue
			}
			writes = append(writes, workWrite{cluster: tc.Name, cur: existing[tc.Name], want: work})
		}
	}
	// The Works go to different clusters and do not depend on each other: they are written
	// at once, so a binding costs one request's time, not one per cluster.
	r.writeWorks(ctx, writes)
	r.remember(rb, writes)
	for _, w := range writes {
		switch {
		case errors.Is(w.err, errWorkGoing):
			waiting = true
		case apierrors.HasStatusCause(w.err, corev1.NamespaceTerminatingCause):
			// The cluster's execution namespace is still going, from an unjoin of a cluster
			// of this name that has since joined again: its controller makes it anew once
			// it is gone. Nothing is wrong; the Work is written then.
			log.V(1).Info("Waiting for the cluster's execution namespace to be made anew", "Cluster", w.cluster, "Namespace", w.want.Namespace)
			waiting = true
		case w.err != nil:
			// One cluster's failure does not hold back the others' Works.
			r.Recorder.Eventf(rb, nil, corev1.EventTypeWarning, wellknown.EventReasonSyncWorkFailed, "SyncWork",
				"Cannot write Work %s/%s: %v", w.want.Namespace, w.want.Name, w.err)
			writeErrs = append(writeErrs, fmt.Errorf("cluster %s: %w", w.cluster, w.err))
		case w.changed && w.cur != nil:
			// Works written anew (not created) are news; a first propagation is told by the
			// binding's FullyApplied event (one success event per propagation, not per stage).
			written = append(written, w.cluster)
		}
	}
	// A cluster being left gracefully keeps its Work, as it is, until its eviction task is
	// done (controllers/failover).
	for i := range spec.GracefulEvictionTasks {
		if t := &spec.GracefulEvictionTasks[i]; failover.KeepsWork(t) {
			wanted[t.FromCluster] = true
		}
	}
	for name, w := range existing {
		if !wanted[name] && w.DeletionTimestamp == nil {
			if err := r.deleteUnscheduled(ctx, w); err != nil {
				writeErrs = append(writeErrs, fmt.Errorf("cluster %s: delete Work: %w", name, err))
				continue
			}
			log.Info("Removed Work of a cluster no longer scheduled", "Cluster", name, "Work", w.Name)
		}
	}
	for name := range unseen {
		if !wanted[name] {
			log.V(1).Info("Waiting for the cache to show the Work just created of a cluster no longer scheduled", "Cluster", name)
			waiting = true
		}
	}
	if len(written) > 0 && r.SuccessEvents {
		r.Recorder.Eventf(rb, nil, corev1.EventTypeNormal, wellknown.EventReasonSyncWorkSucceed, "SyncWork",
			"Synced Works to %s", strings.Join(written, ", "))
	}
	if err := r.setOverridden(ctx, rb, errors.Join(renderErrs...)); err != nil {
		writeErrs = append(writeErrs, err)
	}
	if err := errors.Join(writeErrs...); err != nil {
		return ctrl.Result{}, err
	}
	if waiting {
		return ctrl.Result{RequeueAfter: workGoneRetry}, nil
	}
	return ctrl.Result{}, nil
}

// workWrite is one Work to write and how it went.
type workWrite struct {
	cluster   string
	cur, want *workv1alpha1.Work
	changed   bool
	err       error
}

// maxParallelWrites bounds the requests one reconcile has in flight at once.
const maxParallelWrites = 8

// writeWorks writes the Works concurrently, recording each outcome in its workWrite.
func (r *Reconciler) writeWorks(ctx context.Context, writes []workWrite) {
	parallel(len(writes), func(i int) {
		w := &writes[i]
		w.changed, w.err = r.apply(ctx, w.cur, w.want)
		if apierrors.IsAlreadyExists(w.err) {
			// A Work of the same name that is not (yet) this binding's: one of the
			// template's previous binding. Wait while it is being deleted; take it over
			// when it was left behind.
			w.changed, w.err = r.adopt(ctx, w.want)
		}
	})
}

// parallel runs f(0) ... f(n-1), at most maxParallelWrites at once, and waits for them all.
func parallel(n int, f func(i int)) {
	if n == 1 {
		f(0)
		return
	}
	var g errgroup.Group
	g.SetLimit(maxParallelWrites)
	for i := range n {
		g.Go(func() error { f(i); return nil })
	}
	_ = g.Wait()
}

// template returns the binding's template: the version the binding names when the detector
// handed it over, else the host's current one.
func (r *Reconciler) template(ctx context.Context, ref *workv1alpha2.ObjectReference) (*unstructured.Unstructured, error) {
	if tmpl, ok := r.Templates.Take(ref.UID, ref.ResourceVersion); ok {
		return tmpl, nil
	}
	tmpl := &unstructured.Unstructured{}
	tmpl.SetAPIVersion(ref.APIVersion)
	tmpl.SetKind(ref.Kind)
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, tmpl)
	return tmpl, err
}

// templateStays reports whether the binding's template is still on the host and not being
// deleted: the same object (its UID, when the binding records one), read from the host, not
// the cache, since a cache that lags would keep the member objects of a deleted template
// managed. A kind the host no longer serves is gone.
func (r *Reconciler) templateStays(ctx context.Context, ref *workv1alpha2.ObjectReference) (bool, error) {
	tmpl := &metav1.PartialObjectMetadata{}
	tmpl.SetGroupVersionKind(schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind))
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, tmpl); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return false, nil
		}
		return false, fmt.Errorf("read template %s %s/%s: %w", ref.Kind, ref.Namespace, ref.Name, err)
	}
	return tmpl.DeletionTimestamp == nil && (ref.UID == "" || tmpl.UID == ref.UID), nil
}

// workGoneRetry is when a binding waiting for one of its Works to finish deleting, or for a
// cluster's execution namespace to be made anew, looks again (in case the event was missed).
const workGoneRetry = 2 * time.Second

// overridePolicies returns the ClusterOverridePolicies and the OverridePolicies of the
// template's namespace that may select it: those indexed under its kind, its kind and name,
// or that select everything (IndexOverrideBySelector). overrides.Apply decides among them.
func (r *Reconciler) overridePolicies(ctx context.Context, tmpl *unstructured.Unstructured) ([]policyv1alpha1.ClusterOverridePolicy, []policyv1alpha1.OverridePolicy, error) {
	var cops []policyv1alpha1.ClusterOverridePolicy
	var ops []policyv1alpha1.OverridePolicy
	seen := map[types.NamespacedName]bool{}
	for _, key := range resourceselector.CandidateKeys(tmpl.GetAPIVersion(), tmpl.GetKind(), tmpl.GetName()) {
		cl := &policyv1alpha1.ClusterOverridePolicyList{}
		if err := r.Client.List(ctx, cl, client.MatchingFields{IndexOverrideBySelector: key}); err != nil {
			return nil, nil, err
		}
		for _, p := range cl.Items {
			if id := client.ObjectKeyFromObject(&p); !seen[id] {
				seen[id] = true
				cops = append(cops, p)
			}
		}
		if tmpl.GetNamespace() == "" {
			continue
		}
		l := &policyv1alpha1.OverridePolicyList{}
		if err := r.Client.List(ctx, l, client.InNamespace(tmpl.GetNamespace()), client.MatchingFields{IndexOverrideBySelector: key}); err != nil {
			return nil, nil, err
		}
		for _, p := range l.Items {
			if id := client.ObjectKeyFromObject(&p); !seen[id] {
				seen[id] = true
				ops = append(ops, p)
			}
		}
	}
	return cops, ops, nil
}

// render builds the Work that carries the template to one cluster.
func (r *Reconciler) render(rb client.Object, tmpl *unstructured.Unstructured, cluster *clusterv1alpha1.Cluster, replicas int32,
	cops []policyv1alpha1.ClusterOverridePolicy, ops []policyv1alpha1.OverridePolicy) (*workv1alpha1.Work, error) {
	spec := bindings.Spec(rb)
	obj := r.Interpreter.Prune(tmpl)
	if spec.Replicas > 0 && !retainsReplicas(tmpl) {
		var err error
		if obj, err = r.Interpreter.ReviseReplicas(obj, int64(replicas)); err != nil {
			return nil, err
		}
	}
	obj, applied, err := overrides.Apply(obj, cluster, cops, ops)
	if err != nil {
		return nil, err
	}
	work := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{
		Namespace: wellknown.ExecutionNamespace(cluster.Name),
		Name:      bindings.WorkName(tmpl.GetKind(), tmpl.GetNamespace(), tmpl.GetName()),
		Labels: map[string]string{
			bindings.WorkBindingLabel(rb): bindings.PermanentID(rb),
			wellknown.ManagedLabel:        wellknown.ManagedLabelValue,
		},
		Annotations: map[string]string{},
	}}
	if rb.GetNamespace() == "" {
		work.Annotations[wellknown.ClusterResourceBindingNameAnnotation] = rb.GetName()
	} else {
		work.Annotations[wellknown.ResourceBindingNamespaceAnnotation] = rb.GetNamespace()
		work.Annotations[wellknown.ResourceBindingNameAnnotation] = rb.GetName()
	}
	for k, v := range applied {
		work.Annotations[k] = v
	}
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	// State carried from the clusters the workload failed over from (statePreservation).
	for k, v := range failover.PreservedLabels(spec, cluster.Name) {
		labels[k] = v
	}
	labels[wellknown.ManagedLabel] = wellknown.ManagedLabelValue
	obj.SetLabels(labels)
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[wellknown.WorkNamespaceAnnotation] = work.Namespace
	ann[wellknown.WorkNameAnnotation] = work.Name
	ann[wellknown.ResourceTemplateUIDAnnotation] = string(tmpl.GetUID())
	ann[wellknown.ResourceTemplateGenerationAnnotation] = fmt.Sprint(tmpl.GetGeneration())
	if spec.ConflictResolution == policyv1alpha1.ConflictOverwrite {
		ann[wellknown.ConflictResolutionAnnotation] = wellknown.ConflictResolutionOverwrite
	}
	obj.SetAnnotations(ann)
	raw, err := obj.MarshalJSON()
	if err != nil {
		return nil, err
	}
	work.Spec.Workload.Manifests = []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}
	if bindings.DispatchSuspended(spec, cluster.Name) {
		work.Spec.SuspendDispatching = ptr.To(true)
	}
	// spec.preserveResourcesOnDeletion is not copied here: it keeps member objects when the
	// binding goes (finalize tells its Works then), not when its placement leaves a cluster.
	return work, nil
}

func retainsReplicas(tmpl *unstructured.Unstructured) bool {
	return tmpl.GetLabels()[wellknown.RetainReplicasLabel] == "true"
}

// apply creates the Work, or patches it when it differs from what is wanted, and reports
// whether it wrote.
func (r *Reconciler) apply(ctx context.Context, cur, want *workv1alpha1.Work) (bool, error) {
	if cur == nil {
		controllerutil.AddFinalizer(want, wellknown.ExecutionControllerFinalizer)
		want.Labels[wellknown.WorkPermanentIDLabel] = string(uuidFor(want))
		return true, r.Client.Create(ctx, want)
	}
	before := cur.DeepCopy()
	if cur.Labels == nil {
		cur.Labels = map[string]string{}
	}
	for k, v := range want.Labels {
		cur.Labels[k] = v
	}
	if cur.Annotations == nil {
		cur.Annotations = map[string]string{}
	}
	for _, k := range []string{wellknown.AppliedOverridesAnnotation, wellknown.AppliedClusterOverridesAnnotation} {
		delete(cur.Annotations, k)
	}
	for k, v := range want.Annotations {
		cur.Annotations[k] = v
	}
	if !manifestsEqual(cur.Spec.Workload.Manifests, want.Spec.Workload.Manifests) {
		cur.Spec.Workload = want.Spec.Workload
	}
	cur.Spec.SuspendDispatching = want.Spec.SuspendDispatching
	cur.Spec.PreserveResourcesOnDeletion = want.Spec.PreserveResourcesOnDeletion
	if equality.Semantic.DeepEqual(before, cur) {
		return false, nil
	}
	return true, r.Client.Patch(ctx, cur, client.MergeFrom(before))
}

// deleteUnscheduled deletes the Work of a cluster the binding no longer goes to, and with it
// its member objects: a Work an earlier version told to preserve them is told otherwise
// first, since preserving is for the binding's deletion (see finalize).
func (r *Reconciler) deleteUnscheduled(ctx context.Context, w *workv1alpha1.Work) error {
	if ptr.Deref(w.Spec.PreserveResourcesOnDeletion, false) {
		before := w.DeepCopy()
		w.Spec.PreserveResourcesOnDeletion = nil
		if err := r.Client.Patch(ctx, w, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return client.IgnoreNotFound(err)
		}
	}
	return client.IgnoreNotFound(r.Client.Delete(ctx, w, client.Preconditions{UID: ptr.To(w.UID)}))
}

// errWorkGoing says a Work of the same name is being deleted.
var errWorkGoing = errors.New("a Work of the same name is being deleted")

// adopt takes over the Work named like want that another binding of the same template left,
// or reports errWorkGoing while that Work is being deleted.
func (r *Reconciler) adopt(ctx context.Context, want *workv1alpha1.Work) (bool, error) {
	cur := &workv1alpha1.Work{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(want), cur); err != nil {
		if apierrors.IsNotFound(err) {
			return false, errWorkGoing // gone meanwhile: write it on the next pass
		}
		return false, err
	}
	if cur.DeletionTimestamp != nil {
		return false, errWorkGoing
	}
	return r.apply(ctx, cur, want)
}

func manifestsEqual(a, b []workv1alpha1.Manifest) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		var x, y map[string]any
		if err := unmarshal(a[i].Raw, &x); err != nil {
			return false
		}
		if err := unmarshal(b[i].Raw, &y); err != nil {
			return false
		}
		if !equality.Semantic.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

// remember records the Works just created for rb, until its cache shows them.
func (r *Reconciler) remember(rb client.Object, writes []workWrite) {
	var created map[string]createdWork
	for _, w := range writes {
		if w.cur != nil || w.err != nil || w.want.UID == "" {
			continue
		}
		if created == nil {
			prev, _ := r.created.Load(bindings.PermanentID(rb))
			created = maps.Clone(prev)
			if created == nil {
				created = map[string]createdWork{}
			}
		}
		created[w.cluster] = createdWork{uid: w.want.UID, at: time.Now()}
	}
	if created != nil {
		r.created.Store(bindings.PermanentID(rb), created)
	}
}

// unseen returns, of the Works created for rb, those its cache does not show yet (works, by
// cluster, are what it shows), and forgets the others.
func (r *Reconciler) unseen(rb client.Object, works map[string]*workv1alpha1.Work) map[string]createdWork {
	id := bindings.PermanentID(rb)
	created, ok := r.created.Load(id)
	if !ok {
		return nil
	}
	out := map[string]createdWork{}
	for cluster, c := range created {
		if w := works[cluster]; (w == nil || w.UID != c.uid) && time.Since(c.at) < createdSeenWithin {
			out[cluster] = c
		}
	}
	switch {
	case len(out) == 0:
		r.created.Delete(id)
	case len(out) < len(created):
		r.created.Store(id, out)
	}
	return out
}

// finalize deletes the binding's Works, telling them to keep their member objects when the
// binding preserves resources (released, or still managed when the template stays), then
// lets the binding go. It waits while a Work it created
// is not in its cache yet: that Work's event brings the binding back.
func (r *Reconciler) finalize(ctx context.Context, rb client.Object) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(rb, wellknown.BindingControllerFinalizer) {
		return ctrl.Result{}, nil
	}
	preserve := ptr.Deref(bindings.Spec(rb).PreserveResourcesOnDeletion, false)
	works, err := bindings.WorksByCluster(ctx, r.Client, rb)
	if err != nil {
		return ctrl.Result{}, err
	}
	if unseen := r.unseen(rb, works); len(unseen) > 0 {
		ctrl.LoggerFrom(ctx).V(1).Info("Waiting for the cache to show the Works just created before deleting them", "clusters", slices.Sorted(maps.Keys(unseen)))
		return ctrl.Result{RequeueAfter: workGoneRetry}, nil
	}
	// A preserving binding that goes with its template releases the member objects (they
	// stay, no longer managed, as in Karmada); one that goes while its template stays (the
	// detector unbinds it: namespace opted out, policy deleted; or the binding was deleted)
	// keeps them managed, for the template's next binding to take back.
	list := make([]*workv1alpha1.Work, 0, len(works))
	for _, w := range works {
		list = append(list, w)
	}
	keepManaged := false
	if preserve && slices.ContainsFunc(list, func(w *workv1alpha1.Work) bool { return w.DeletionTimestamp == nil }) {
		if keepManaged, err = r.templateStays(ctx, &bindings.Spec(rb).Resource); err != nil {
			return ctrl.Result{}, err
		}
	}
	errs := make([]error, len(list))
	parallel(len(list), func(i int) {
		w := list[i]
		told := ptr.Deref(w.Spec.PreserveResourcesOnDeletion, false) && (w.Annotations[wellknown.KeepManagedAnnotation] == "true") == keepManaged
		if preserve && !told && w.DeletionTimestamp == nil {
			before := w.DeepCopy()
			w.Spec.PreserveResourcesOnDeletion = ptr.To(true)
			if keepManaged {
				metav1.SetMetaDataAnnotation(&w.ObjectMeta, wellknown.KeepManagedAnnotation, "true")
			} else {
				delete(w.Annotations, wellknown.KeepManagedAnnotation)
			}
			if err := r.Client.Patch(ctx, w, client.MergeFrom(before)); err != nil {
				// Not deleted unpreserved: the next pass tries again.
				errs[i] = err
				return
			}
		}
		if w.DeletionTimestamp != nil {
			// Being deleted already: a pass that runs again (another Work could not be
			// deleted) does not ask twice.
			return
		}
		errs[i] = r.Client.Delete(ctx, w)
	})
	for _, err := range errs {
		if client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
	}
	patch := client.MergeFrom(rb.DeepCopyObject().(client.Object))
	controllerutil.RemoveFinalizer(rb, wellknown.BindingControllerFinalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, rb, patch))
}

// setOverridden records override failures in the Overridden condition (and an event). An
// override error is the user's to fix, so it is not retried with backoff: the binding comes
// back when a policy, the template or a cluster changes.
func (r *Reconciler) setOverridden(ctx context.Context, rb client.Object, renderErr error) error {
	status := bindings.Status(rb)
	cond := metav1.Condition{Type: wellknown.ConditionOverridden, Status: metav1.ConditionTrue,
		Reason: wellknown.ReasonOverrideSucceeded, Message: "Every override applied", ObservedGeneration: rb.GetGeneration()}
	if renderErr != nil {
		cond.Status, cond.Reason = metav1.ConditionFalse, wellknown.ReasonOverrideFailed
		cond.Message = truncate(renderErr.Error(), 32*1024)
	}
	// Once this controller has written the condition, what it last wrote is what the status
	// says: the cached binding may not show that write yet (its event does not bring the
	// binding back), and a stale copy without the condition would take a fixed override for
	// one that never failed. Before the first write, the cached status is all there is.
	if last, written := r.overridden.Load(rb.GetUID()); written {
		if last.Status == cond.Status && last.Reason == cond.Reason && last.Message == cond.Message &&
			last.ObservedGeneration == cond.ObservedGeneration {
			return nil
		}
	} else {
		if bindings.ConditionCurrent(status.Conditions, cond) {
			return nil
		}
		if renderErr == nil && meta.FindStatusCondition(status.Conditions, cond.Type) == nil {
			return nil // success is the default; the condition is written once something failed
		}
	}
	if renderErr != nil {
		r.Recorder.Eventf(rb, nil, corev1.EventTypeWarning, wellknown.EventReasonApplyOverrideFailed, "Override", "%s", cond.Message)
	}
	if err := bindings.ApplyStatus(ctx, r.Client, rb, FieldOwner, map[string]any{
		"conditions": []metav1.Condition{bindings.Condition(status.Conditions, cond)},
	}); err != nil {
		return err
	}
	r.overridden.Store(rb.GetUID(), cond)
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

func unmarshal(raw []byte, into *map[string]any) error { return json.Unmarshal(raw, into) }

// uuidFor returns a new permanent id for a Work.
func uuidFor(*workv1alpha1.Work) types.UID { return types.UID(uuid.NewString()) }
