package namespace

import (
	"context"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/flotilla-io/flotilla/api/wellknown"
)

// Event reasons on Namespaces.
const (
	// EventReasonHeld: an opted-in namespace was marked held.
	EventReasonHeld = "TemplatesHeld"
	// EventReasonStillHeld: propagation is off, and the namespace's templates stay held until
	// the user removes the held label.
	EventReasonStillHeld = "TemplatesStillHeld"
)

// HeldReconciler marks every opted-in namespace held (label flotilla.io/held=true), so that
// the hold outlives the propagation label, and tells the user, on a namespace whose
// propagation is off but whose templates are still held, how to release them.
type HeldReconciler struct {
	Client   client.Client
	Recorder events.EventRecorder

	mu   sync.Mutex
	told map[string]bool // namespaces told they are still held, by this process
}

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;patch

// Reconcile marks or explains one namespace.
func (r *HeldReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, req.NamespacedName, ns); err != nil {
		if apierrors.IsNotFound(err) {
			r.setTold(req.Name, false)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ns.DeletionTimestamp != nil || isSystem(ns.Name) {
		r.setTold(ns.Name, false)
		return ctrl.Result{}, nil
	}
	optedIn := ns.Labels[wellknown.PropagationLabel] == wellknown.PropagationEnabled
	held := ns.Labels[wellknown.HeldLabel] == wellknown.HeldTrue
	switch {
	case optedIn && !held:
		apply := corev1ac.Namespace(ns.Name).WithLabels(map[string]string{wellknown.HeldLabel: wellknown.HeldTrue})
		if err := r.Client.Apply(ctx, apply, client.FieldOwner(wellknown.FieldManager), client.ForceOwnership); err != nil {
			return ctrl.Result{}, fmt.Errorf("labelling namespace %s %s=%s: %w", ns.Name, wellknown.HeldLabel, wellknown.HeldTrue, err)
		}
		r.Recorder.Eventf(ns, nil, corev1.EventTypeNormal, EventReasonHeld, "Hold",
			"Templates in this namespace run only on member clusters; the host's controllers are kept off them. Label %s=%s keeps them held even when %s is removed",
			wellknown.HeldLabel, wellknown.HeldTrue, wellknown.PropagationLabel)
		r.setTold(ns.Name, false)
	case !optedIn && held:
		if r.setTold(ns.Name, true) {
			r.Recorder.Eventf(ns, nil, corev1.EventTypeWarning, EventReasonStillHeld, "Hold",
				"Propagation is off (%s is not %q), and the templates here stay held: the host's controllers do not run them. To let the host run them, remove the label %s",
				wellknown.PropagationLabel, wellknown.PropagationEnabled, wellknown.HeldLabel)
		}
	default:
		r.setTold(ns.Name, false)
	}
	return ctrl.Result{}, nil
}

// setTold records whether the namespace was told it is still held, and returns whether that
// is news.
func (r *HeldReconciler) setTold(name string, told bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.told == nil {
		r.told = map[string]bool{}
	}
	was := r.told[name]
	if told {
		r.told[name] = true
	} else {
		delete(r.told, name)
	}
	return told && !was
}

func isSystem(name string) bool { return slices.Contains(systemNamespaces, name) }

// SetupWithManager watches Namespaces' labels.
func (r *HeldReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("namespace-held").
		For(&corev1.Namespace{}, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Complete(r)
}
