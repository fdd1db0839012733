package namespace

import (
	"context"
	"fmt"
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
	"github.com/flotilla-io/flotilla/internal/systemnamespace"
)

// Event reasons on Namespaces.
const (
	// EventReasonHeld: an opted-in namespace was marked held.
	EventReasonHeld = "TemplatesHeld"
	// EventReasonStillHeld: propagation is off, and the namespace's templates stay held until
	// the user removes the held label.
	EventReasonStillHeld = "TemplatesStillHeld"
	// EventReasonOptInRefused: a namespace Flotilla never propagates from
	// (internal/systemnamespace) was labelled to opt in; nothing there is propagated or held.
	EventReasonOptInRefused = "OptInRefused"
)

// HeldReconciler marks every opted-in namespace held (label flotilla.io/held=true), so that
// the hold outlives the propagation label, and tells the user, on a namespace whose
// propagation is off but whose templates are still held, how to release them; and, on a
// system namespace labelled to opt in, that the label has no effect.
type HeldReconciler struct {
	Client   client.Client
	Recorder events.EventRecorder

	mu   sync.Mutex
	told map[string]string // the Warning reason each namespace was last told, by this process
}

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;patch

// Reconcile marks or explains one namespace.
func (r *HeldReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, req.NamespacedName, ns); err != nil {
		if apierrors.IsNotFound(err) {
			r.tell(req.Name, "")
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ns.DeletionTimestamp != nil {
		r.tell(ns.Name, "")
		return ctrl.Result{}, nil
	}
	optedIn := ns.Labels[wellknown.PropagationLabel] == wellknown.PropagationEnabled
	held := ns.Labels[wellknown.HeldLabel] == wellknown.HeldTrue
	if why := systemnamespace.Why(ns.Name); why != "" {
		if !optedIn {
			r.tell(ns.Name, "")
		} else if r.tell(ns.Name, EventReasonOptInRefused) {
			ctrl.LoggerFrom(ctx).Info("Refused the opt-in of a system namespace: nothing there is propagated or held", "Namespace", ns.Name, "why", why)
			r.Recorder.Eventf(ns, nil, corev1.EventTypeWarning, EventReasonOptInRefused, "OptIn",
				"Flotilla never propagates from this namespace, and does not hold its workloads on the host: %s. Remove the label %s=%s, and keep templates in a namespace of your own",
				why, wellknown.PropagationLabel, wellknown.PropagationEnabled)
		}
		return ctrl.Result{}, nil
	}
	switch {
	case optedIn && !held:
		apply := corev1ac.Namespace(ns.Name).WithLabels(map[string]string{wellknown.HeldLabel: wellknown.HeldTrue})
		if err := r.Client.Apply(ctx, apply, client.FieldOwner(wellknown.FieldManager), client.ForceOwnership); err != nil {
			return ctrl.Result{}, fmt.Errorf("labelling namespace %s %s=%s: %w", ns.Name, wellknown.HeldLabel, wellknown.HeldTrue, err)
		}
		r.Recorder.Eventf(ns, nil, corev1.EventTypeNormal, EventReasonHeld, "Hold",
			"Templates in this namespace run only on member clusters; the host's controllers are kept off them. Label %s=%s keeps them held even when %s is removed",
			wellknown.HeldLabel, wellknown.HeldTrue, wellknown.PropagationLabel)
		r.tell(ns.Name, "")
	case !optedIn && held:
		if r.tell(ns.Name, EventReasonStillHeld) {
			r.Recorder.Eventf(ns, nil, corev1.EventTypeWarning, EventReasonStillHeld, "Hold",
				"Propagation is off (%s is not %q), and the templates here stay held: the host's controllers do not run them. To let the host run them, remove the label %s",
				wellknown.PropagationLabel, wellknown.PropagationEnabled, wellknown.HeldLabel)
		}
	default:
		r.tell(ns.Name, "")
	}
	return ctrl.Result{}, nil
}

// tell records the Warning reason the namespace is in ("" for none), and returns whether
// that is news: a Warning is recorded once per transition into its state, not at every
// resync or unrelated label change.
func (r *HeldReconciler) tell(name, reason string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.told == nil {
		r.told = map[string]string{}
	}
	was := r.told[name]
	if reason == "" {
		delete(r.told, name)
	} else {
		r.told[name] = reason
	}
	return reason != "" && reason != was
}

// SetupWithManager watches Namespaces' labels.
func (r *HeldReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("namespace-held").
		For(&corev1.Namespace{}, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Complete(r)
}
