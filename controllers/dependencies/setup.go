package dependencies

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

// IndexRequiredBy indexes ResourceBindings by the bindings in their spec.requiredBy
// ("namespace/name").
const IndexRequiredBy = "flotilla.binding.requiredby"

// SetupIndexes registers the index the controller uses. Call it once.
func SetupIndexes(ctx context.Context, mgr ctrl.Manager) error {
	return mgr.GetFieldIndexer().IndexField(ctx, &workv1alpha2.ResourceBinding{}, IndexRequiredBy, func(o client.Object) []string {
		rb := o.(*workv1alpha2.ResourceBinding)
		out := make([]string, 0, len(rb.Spec.RequiredBy))
		for _, s := range rb.Spec.RequiredBy {
			ns := s.Namespace
			if ns == "" {
				ns = rb.Namespace
			}
			out = append(out, types.NamespacedName{Namespace: ns, Name: s.Name}.String())
		}
		return out
	})
}

// SetupWithManager registers the controller. Bindings that propagate their dependencies, or
// are required by others, are reconciled when created, deleted or their spec changes; the
// workloads waiting for a dependency are reconciled when the detector reports it appeared.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.waits == nil {
		r.waits = newWaitlist()
	}
	// A binding that still holds DependenciesFinalizer is involved too: its propagateDeps may
	// have been turned off while no replica ran this controller (a leader change), and only
	// this controller lets go of it.
	involved := func(o client.Object) bool {
		rb, ok := o.(*workv1alpha2.ResourceBinding)
		return ok && (rb.Spec.PropagateDeps || len(rb.Spec.RequiredBy) > 0 ||
			controllerutil.ContainsFinalizer(rb, wellknown.DependenciesFinalizer))
	}
	return ctrl.NewControllerManagedBy(mgr).Named("dependencies").
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&workv1alpha2.ResourceBinding{}, builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(e event.CreateEvent) bool { return involved(e.Object) },
			UpdateFunc: func(e event.UpdateEvent) bool {
				if !involved(e.ObjectOld) && !involved(e.ObjectNew) {
					return false
				}
				return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
					!e.ObjectOld.GetDeletionTimestamp().Equal(e.ObjectNew.GetDeletionTimestamp())
			},
			DeleteFunc:  func(e event.DeleteEvent) bool { return involved(e.Object) },
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		WatchesRawSource(source.Channel(r.waits.events, &handler.EnqueueRequestForObject{})).
		Complete(r)
}

// Appeared tells the controller that a template exists, so that workloads waiting for it as
// a dependency go on. It reports whether any was waiting. The detector calls it.
func (r *Reconciler) Appeared(gvk schema.GroupVersionKind, key types.NamespacedName) bool {
	return r.waits.appeared(waitKey{gk: gvk.GroupKind(), NamespacedName: key})
}

// waitKey is a dependency that does not exist yet.
type waitKey struct {
	gk schema.GroupKind
	types.NamespacedName
}

// waitlist maps missing dependencies to the workload bindings that wait for them. It lives in
// memory: after a restart every workload is reconciled and lists what it waits for again.
type waitlist struct {
	mu       sync.Mutex
	byDep    map[waitKey]map[types.NamespacedName]bool
	byParent map[types.NamespacedName][]waitKey
	events   chan event.GenericEvent
}

func newWaitlist() *waitlist {
	return &waitlist{byDep: map[waitKey]map[types.NamespacedName]bool{}, byParent: map[types.NamespacedName][]waitKey{},
		events: make(chan event.GenericEvent, 1024)}
}

// set replaces what parent waits for.
func (w *waitlist) set(parent types.NamespacedName, deps []waitKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range w.byParent[parent] {
		delete(w.byDep[d], parent)
		if len(w.byDep[d]) == 0 {
			delete(w.byDep, d)
		}
	}
	if len(deps) == 0 {
		delete(w.byParent, parent)
		return
	}
	w.byParent[parent] = deps
	for _, d := range deps {
		if w.byDep[d] == nil {
			w.byDep[d] = map[types.NamespacedName]bool{}
		}
		w.byDep[d][parent] = true
	}
}

// appeared wakes the workloads waiting for d.
func (w *waitlist) appeared(d waitKey) bool {
	w.mu.Lock()
	parents := make([]types.NamespacedName, 0, len(w.byDep[d]))
	for p := range w.byDep[d] {
		parents = append(parents, p)
	}
	w.mu.Unlock()
	for _, p := range parents {
		rb := &workv1alpha2.ResourceBinding{}
		rb.Namespace, rb.Name = p.Namespace, p.Name
		e := event.GenericEvent{Object: rb}
		select {
		case w.events <- e:
		default:
			// The queue is full: hand it over without holding up the detector.
			go func() { w.events <- e }()
		}
	}
	return len(parents) > 0
}
