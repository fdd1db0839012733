// Package placementdecision is the PlacementDecision controller (opt-in, --placement-decisions):
// it publishes where each binding is scheduled as PlacementDecisions (multicluster.x-k8s.io/
// v1alpha1, KEP-5313), so that tools that follow a scheduler's decisions through that API
// (MultiKueue, Argo CD...) can follow Flotilla's placements.
//
// A ResourceBinding's decision is in its namespace; a ClusterResourceBinding's in the
// ClusterProfiles' namespace. It is sliced as the KEP says: at most 100 clusters a slice,
// slices named <binding>-<index> (crb-<binding>-<index>), labelled with one decision key and
// their index, each cluster referring to its ClusterProfile (controllers/clusterprofile).
// Slices are owned by their binding.
//
// Each reconcile computes the slices (desired), applies those that differ from the cache with
// server-side apply (write), deletes the slices a shrunk placement no longer needs, or all of
// them when the binding is gone or being deleted (prune), and records an event on the binding
// when the set of clusters changed (report).
package placementdecision

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	inventoryv1alpha1 "github.com/flotilla-io/flotilla/api/clusterinventory/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/bindings"
)

const (
	// ControllerName names the controller, its logger and its events.
	ControllerName = "placement-decision"
	// FieldOwner is the field manager of the slices' server-side applies.
	FieldOwner = "flotilla-placement-decision"
	// DefaultWorkers is how many bindings of a kind are reconciled at once.
	DefaultWorkers = 2

	// EventReasonPublished: the binding's decision was first published.
	EventReasonPublished = "PlacementDecisionPublished"
	// EventReasonUpdated: the binding's decision lists other clusters.
	EventReasonUpdated = "PlacementDecisionUpdated"
	// EventReasonFailed: the decision could not be written.
	EventReasonFailed = "PlacementDecisionFailed"
)

// Reconciler keeps the PlacementDecisions of one kind of binding. SetupWithManager fills what
// is left unset.
type Reconciler struct {
	// Client reads bindings and slices from the manager's cache and writes slices.
	Client client.Client
	// Recorder records events on bindings.
	Recorder events.EventRecorder
	// NewBinding returns an empty ResourceBinding or ClusterResourceBinding.
	NewBinding func() client.Object
	// ProfileNamespace is the ClusterProfiles' namespace (clusterprofile.Options.Namespace).
	ProfileNamespace string
	// Workers is how many bindings are reconciled at once; 0 is DefaultWorkers.
	Workers int
	// SuccessEvents records PlacementDecisionPublished when a binding's decision is first
	// published (--record-success-events); a change of clusters is always recorded.
	SuccessEvents bool
}

// +kubebuilder:rbac:groups=multicluster.x-k8s.io,resources=placementdecisions,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=work.karmada.io,resources=resourcebindings;clusterresourcebindings,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings the slices of one binding in line with its placement.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := r.NewBinding()
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		if apierrors.IsNotFound(err) {
			_, err := r.prune(ctx, req.Namespace, req.Name, 0)
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, err
	}
	if !b.GetDeletionTimestamp().IsZero() {
		_, err := r.prune(ctx, b.GetNamespace(), b.GetName(), 0)
		return ctrl.Result{}, err
	}
	desired := Desired(Input{Binding: b, ProfileNamespace: r.ProfileNamespace})
	current, err := r.current(ctx, b.GetNamespace(), b.GetName())
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.write(ctx, current, desired); err != nil {
		r.Recorder.Eventf(b, nil, corev1.EventTypeWarning, EventReasonFailed, "Publish", "Cannot write the PlacementDecision: %v", err)
		return ctrl.Result{}, err
	}
	if _, err := r.prune(ctx, b.GetNamespace(), b.GetName(), len(desired)); err != nil {
		return ctrl.Result{}, err
	}
	r.report(b, current, desired)
	return ctrl.Result{}, nil
}

// current are the binding's slices in the cache, by name.
func (r *Reconciler) current(ctx context.Context, namespace, name string) (map[string]*inventoryv1alpha1.PlacementDecision, error) {
	ns, _ := Location(namespace, name, r.ProfileNamespace)
	list := &inventoryv1alpha1.PlacementDecisionList{}
	if err := r.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{
		inventoryv1alpha1.DecisionKeyLabel: DecisionKey(namespace, name), wellknown.InventoryManagedByLabel: wellknown.InventoryManagedBy,
	}); err != nil {
		return nil, fmt.Errorf("list the PlacementDecisions of %s: %w", name, err)
	}
	out := make(map[string]*inventoryv1alpha1.PlacementDecision, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out, nil
}

// write applies each slice that differs from the cache's.
func (r *Reconciler) write(ctx context.Context, current map[string]*inventoryv1alpha1.PlacementDecision, desired []*inventoryv1alpha1.PlacementDecision) error {
	for _, d := range desired {
		if c := current[d.Name]; c != nil && applied(c, d) {
			continue
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
		if err != nil {
			return fmt.Errorf("convert PlacementDecision %s/%s: %w", d.Namespace, d.Name, err)
		}
		u := &unstructured.Unstructured{Object: m}
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("apply PlacementDecision %s/%s: %w", d.Namespace, d.Name, err)
		}
	}
	return nil
}

// prune deletes the binding's slices from index keep on, and reports how many it deleted.
func (r *Reconciler) prune(ctx context.Context, namespace, name string, keep int) (int, error) {
	current, err := r.current(ctx, namespace, name)
	if err != nil {
		return 0, err
	}
	deleted := 0
	for _, c := range current {
		i, err := strconv.Atoi(c.Labels[inventoryv1alpha1.DecisionIndexLabel])
		if err == nil && i < keep {
			continue
		}
		if err := r.Client.Delete(ctx, c, client.Preconditions{UID: &c.UID}); client.IgnoreNotFound(err) != nil {
			return deleted, fmt.Errorf("delete PlacementDecision %s/%s: %w", c.Namespace, c.Name, err)
		}
		deleted++
	}
	return deleted, nil
}

// report records the first publication, and a change of the set of clusters, on the binding.
func (r *Reconciler) report(b client.Object, current map[string]*inventoryv1alpha1.PlacementDecision, desired []*inventoryv1alpha1.PlacementDecision) {
	want := clusterNames(desired)
	if len(current) == 0 {
		if !r.SuccessEvents {
			return
		}
		r.Recorder.Eventf(b, nil, corev1.EventTypeNormal, EventReasonPublished, "Publish", "Published as %d PlacementDecision slice(s) %s-*: %s",
			len(desired), strings.TrimSuffix(desired[0].Name, "-0"), summary(want))
		return
	}
	had := clusterNames(mapValues(current))
	if !slices.Equal(had, want) {
		r.Recorder.Eventf(b, nil, corev1.EventTypeNormal, EventReasonUpdated, "Publish", "PlacementDecision now lists %s (was %s)", summary(want), summary(had))
	}
}

func applied(current, desired *inventoryv1alpha1.PlacementDecision) bool {
	for k, v := range desired.Labels {
		if current.Labels[k] != v {
			return false
		}
	}
	for k, v := range desired.Annotations {
		if current.Annotations[k] != v {
			return false
		}
	}
	return len(current.OwnerReferences) > 0 && current.OwnerReferences[0].UID == desired.OwnerReferences[0].UID &&
		current.SchedulerName == desired.SchedulerName && equality.Semantic.DeepEqual(nonNil(current.Decisions), nonNil(desired.Decisions))
}

func nonNil(d []inventoryv1alpha1.ClusterDecision) []inventoryv1alpha1.ClusterDecision {
	if d == nil {
		return []inventoryv1alpha1.ClusterDecision{}
	}
	return d
}

func mapValues(m map[string]*inventoryv1alpha1.PlacementDecision) []*inventoryv1alpha1.PlacementDecision {
	out := make([]*inventoryv1alpha1.PlacementDecision, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// clusterNames are the clusters the slices list, sorted.
func clusterNames(ds []*inventoryv1alpha1.PlacementDecision) []string {
	var out []string
	for _, d := range ds {
		for _, c := range d.Decisions {
			out = append(out, c.ClusterProfileRef.Name)
		}
	}
	slices.Sort(out)
	return out
}

func summary(names []string) string {
	switch {
	case len(names) == 0:
		return "no cluster"
	case len(names) > 10:
		return fmt.Sprintf("%d clusters (%s, ...)", len(names), strings.Join(names[:10], ", "))
	}
	return strings.Join(names, ", ")
}

// SetupWithManager registers the controller with mgr, to run on the leader only.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder(ControllerName)
	}
	if r.ProfileNamespace == "" {
		r.ProfileNamespace = wellknown.ClusterInventoryNamespace
	}
	workers := r.Workers
	if workers <= 0 {
		workers = DefaultWorkers
	}
	b := r.NewBinding()
	return ctrl.NewControllerManagedBy(mgr).Named(ControllerName+"-"+strings.ToLower(bindings.Kind(b))).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		// The decision follows spec.clusters and the scheduler's name: the generation.
		For(b, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A slice changed or deleted by someone else is put back.
		Owns(&inventoryv1alpha1.PlacementDecision{}).
		Complete(r)
}
