// Package customization loads ResourceInterpreterCustomizations into the interpreter's store
// as they are created, edited and deleted, without a restart, and reports on each whether its
// scripts loaded (condition Loaded) and how they ran (condition ScriptsHealthy), with an event
// on each change. Templates and Works of the customized kind are looked at again after every
// change, so that a new script applies to what exists.
//
// Setup wires the store, the interpreter's source of customizations, into a manager: the
// Flotilla manager's (controllers.Setup), and the Pull agent's read-only (controllers/agent),
// so that Push and Pull members run the same scripts.
package customization

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/customization"
	"github.com/flotilla-io/flotilla/internal/customization/builtin"
)

// Store holds the customizations in use.
type Store interface {
	// Apply compiles the customization's scripts and puts them in use; on error the
	// customization is out of use.
	Apply(ric *configv1alpha1.ResourceInterpreterCustomization) error
	// Remove takes the named customization out of use.
	Remove(name string)
}

// Failure is a script that failed while running.
type Failure = customization.Failure

// Reconciler keeps the Store in step with the customizations on the host. Create it with New.
type Reconciler struct {
	// Client reads customizations from the manager's cache and writes their status.
	Client client.Client
	// Recorder emits events on customizations.
	Recorder events.EventRecorder
	// Store is where customizations are put in use.
	Store Store
	// Changed is called with the kind a customization targets (before and after an edit)
	// whenever what is in use for it changes.
	Changed func(gk schema.GroupKind)
	// Now is the clock (tests may set it).
	Now func() time.Time
	// ReadOnly only loads customizations into the Store: no status, no events (the Pull
	// agent, whose host credential may only read customizations; the manager reports on
	// them). Scripts that fail at run time are logged instead, as often as the status
	// would be written.
	ReadOnly bool

	mu sync.Mutex
	// loaded are the kind and generation of each customization when last loaded.
	loaded map[string]loadedAs
	// loadErrs are the errors of the customizations that did not load.
	loadErrs map[string]error
	// failures are the latest run-time failure of each customization's scripts, until
	// its next generation.
	failures map[string]failure
	// builtinFailures are when each built-in's failure was last logged.
	builtinFailures map[string]time.Time
	wake            chan event.GenericEvent
}

type loadedAs struct {
	gk         schema.GroupKind
	generation int64
}

type failure struct {
	Failure
	at         time.Time
	generation int64
}

// New returns a Reconciler. Set Store before the manager starts.
func New(c client.Client, recorder events.EventRecorder, changed func(schema.GroupKind)) *Reconciler {
	return &Reconciler{Client: c, Recorder: recorder, Changed: changed, Now: time.Now,
		loaded: map[string]loadedAs{}, loadErrs: map[string]error{}, failures: map[string]failure{}, wake: make(chan event.GenericEvent, 256)}
}

// +kubebuilder:rbac:groups=config.karmada.io,resources=resourceinterpretercustomizations,verbs=get;list;watch
// +kubebuilder:rbac:groups=config.karmada.io,resources=resourceinterpretercustomizations/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile loads one customization and, unless ReadOnly, writes its conditions.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ric := &configv1alpha1.ResourceInterpreterCustomization{}
	if err := r.Client.Get(ctx, req.NamespacedName, ric); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		r.unload(req.Name)
		return ctrl.Result{}, nil
	}
	if ric.DeletionTimestamp != nil {
		r.unload(ric.Name)
		return ctrl.Result{}, nil
	}

	gk := schema.FromAPIVersionAndKind(ric.Spec.Target.APIVersion, ric.Spec.Target.Kind).GroupKind()
	loadErr := r.load(ric, gk)
	if r.ReadOnly {
		r.mu.Lock()
		if f, ok := r.failures[ric.Name]; ok && f.generation != ric.Generation {
			delete(r.failures, ric.Name)
		}
		r.mu.Unlock()
		if loadErr != nil {
			ctrl.LoggerFrom(ctx).Info("A ResourceInterpreterCustomization does not load; the built-in rules apply to its kind",
				"customization", ric.Name, "error", loadErr.Error())
		}
		return ctrl.Result{}, nil
	}

	loaded := metav1.Condition{Type: configv1alpha1.ConditionLoaded, Status: metav1.ConditionTrue, Reason: "Loaded",
		Message:            fmt.Sprintf("The scripts are in use for %s %s", ric.Spec.Target.APIVersion, ric.Spec.Target.Kind),
		ObservedGeneration: ric.Generation}
	if loadErr != nil {
		loaded.Status, loaded.Reason = metav1.ConditionFalse, "LoadFailed"
		loaded.Message = fmt.Sprintf("Not in use: %v. Flotilla's built-in rules apply to %s %s until it is fixed",
			loadErr, ric.Spec.Target.APIVersion, ric.Spec.Target.Kind)
	}
	healthy := metav1.Condition{Type: configv1alpha1.ConditionScriptsHealthy, Status: metav1.ConditionTrue, Reason: "NoFailures",
		Message: "No script of this generation has failed", ObservedGeneration: ric.Generation}
	r.mu.Lock()
	f, failed := r.failures[ric.Name]
	if failed && f.generation != ric.Generation {
		delete(r.failures, ric.Name)
		failed = false
	}
	r.mu.Unlock()
	if failed {
		healthy.Status, healthy.Reason = metav1.ConditionFalse, "ScriptFailed"
		healthy.Message = fmt.Sprintf("%s failed on %s at %s: %v", f.Operation, f.Object, f.at.UTC().Format(time.RFC3339), f.Err)
	}
	if loadErr != nil {
		healthy.Status, healthy.Reason, healthy.Message = metav1.ConditionUnknown, "NotLoaded", "The scripts are not in use"
	}

	before := ric.DeepCopy()
	changedLoaded, changedHealthy := conditionChanged(ric.Status.Conditions, loaded), conditionChanged(ric.Status.Conditions, healthy)
	meta.SetStatusCondition(&ric.Status.Conditions, loaded)
	meta.SetStatusCondition(&ric.Status.Conditions, healthy)
	ric.Status.ObservedGeneration = ric.Generation
	if changedLoaded {
		if loadErr != nil {
			r.Recorder.Eventf(ric, nil, corev1.EventTypeWarning, wellknown.EventReasonCustomizationLoadFailed, "Load", loaded.Message)
		} else {
			r.Recorder.Eventf(ric, nil, corev1.EventTypeNormal, wellknown.EventReasonCustomizationLoaded, "Load", loaded.Message)
		}
	}
	if changedHealthy && failed {
		r.Recorder.Eventf(ric, nil, corev1.EventTypeWarning, wellknown.EventReasonCustomizationScriptFailed, "Run", healthy.Message)
	}
	if !changedLoaded && !changedHealthy && before.Status.ObservedGeneration == ric.Generation {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Status().Patch(ctx, ric, client.MergeFrom(before)))
}

// conditionChanged reports whether c's status or message differs from the condition of its
// type in conds (or there is none): what deserves an event.
func conditionChanged(conds []metav1.Condition, c metav1.Condition) bool {
	was := meta.FindStatusCondition(conds, c.Type)
	return was == nil || was.Status != c.Status || was.Message != c.Message
}

// load puts the customization in use (or out of it) and announces the kinds it affects.
func (r *Reconciler) load(ric *configv1alpha1.ResourceInterpreterCustomization, gk schema.GroupKind) error {
	r.mu.Lock()
	prev, had := r.loaded[ric.Name]
	r.mu.Unlock()
	if had && prev.generation == ric.Generation && ric.Generation != 0 {
		// Loaded already (at start, or before a status write brought it back).
		return r.lastErr(ric.Name)
	}
	err := r.Store.Apply(ric)
	r.mu.Lock()
	r.loaded[ric.Name] = loadedAs{gk: gk, generation: ric.Generation}
	if err != nil {
		r.loadErrs[ric.Name] = err
	} else {
		delete(r.loadErrs, ric.Name)
	}
	r.mu.Unlock()
	if r.Changed != nil {
		if had && prev.gk != gk {
			r.Changed(prev.gk)
		}
		r.Changed(gk)
	}
	return err
}

func (r *Reconciler) lastErr(name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.loadErrs[name]
}

// LoadAll loads every customization on the host, straight from the apiserver, before the
// manager starts, so that no controller interprets a customized kind with the built-in rules
// first. Conditions are written by the controller once it runs.
func (r *Reconciler) LoadAll(ctx context.Context, reader client.Reader) error {
	list := &configv1alpha1.ResourceInterpreterCustomizationList{}
	if err := reader.List(ctx, list); err != nil {
		return err
	}
	for i := range list.Items {
		ric := &list.Items[i]
		if ric.DeletionTimestamp != nil {
			continue
		}
		gk := schema.FromAPIVersionAndKind(ric.Spec.Target.APIVersion, ric.Spec.Target.Kind).GroupKind()
		if err := r.load(ric, gk); err != nil {
			ctrl.LoggerFrom(ctx).Info("A ResourceInterpreterCustomization does not load; the built-in rules apply to its kind",
				"customization", ric.Name, "error", err.Error())
		}
	}
	return nil
}

func (r *Reconciler) unload(name string) {
	r.Store.Remove(name)
	r.mu.Lock()
	prev, had := r.loaded[name]
	delete(r.loaded, name)
	delete(r.loadErrs, name)
	delete(r.failures, name)
	r.mu.Unlock()
	if had && r.Changed != nil {
		r.Changed(prev.gk)
	}
}

// Failed records a script that failed while running, for the customization's
// ScriptsHealthy condition. The store calls it; it does not block.
func (r *Reconciler) Failed(f Failure) {
	if f.Builtin {
		r.builtinFailed(f)
		return
	}
	ric := &configv1alpha1.ResourceInterpreterCustomization{}
	ric.Name = f.Customization
	r.mu.Lock()
	prev, seen := r.failures[f.Customization]
	now := r.Now()
	// The condition keeps the latest failure; the status is written at most every few
	// seconds per customization, however often a script fails.
	r.failures[f.Customization] = failure{Failure: f, at: now, generation: r.loaded[f.Customization].generation}
	wake := !seen || now.Sub(prev.at) > failureWriteInterval
	r.mu.Unlock()
	if wake && r.ReadOnly {
		ctrl.Log.WithName("customization").Info("A ResourceInterpreterCustomization's script failed", "customization", f.Customization,
			"operation", f.Operation, "object", f.Object, "error", f.Err.Error())
		return
	}
	if wake {
		select {
		case r.wake <- event.GenericEvent{Object: ric}:
		default:
		}
	}
}

// builtinFailed logs a built-in's script that failed, at most every failureWriteInterval per
// built-in: there is no object to write its condition to. The binding's condition and event
// name it too.
func (r *Reconciler) builtinFailed(f Failure) {
	r.mu.Lock()
	now := r.Now()
	prev, seen := r.builtinFailures[f.Customization]
	log := !seen || now.Sub(prev) > failureWriteInterval
	if log {
		if r.builtinFailures == nil {
			r.builtinFailures = map[string]time.Time{}
		}
		r.builtinFailures[f.Customization] = now
	}
	r.mu.Unlock()
	if log {
		ctrl.Log.WithName("customization").Info("A built-in customization's script failed", "customization", f.Customization,
			"operation", f.Operation, "object", f.Object, "error", f.Err.Error())
	}
}

// failureWriteInterval bounds how often a failing customization's status is written.
const failureWriteInterval = 5 * time.Second

// SetupWithManager registers the controller. It runs on every replica, leader or not, so
// that each replica's interpreter is current the moment it leads; the statuses they write
// agree.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("customization").
		WithOptions(controller.Options{NeedLeaderElection: ptr.To(false)}).
		For(&configv1alpha1.ResourceInterpreterCustomization{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Channel(r.wake, &handler.EnqueueRequestForObject{})).
		Complete(r)
}

// NewStore makes the store of customizations Setup fills, with Flotilla's built-in
// customizations of third-party kinds in use at the lowest precedence unless o.NoBuiltins.
// onFailure is told of every script that fails at run time.
func NewStore(ctx context.Context, o SetupOptions, onFailure func(Failure)) *customization.Store {
	store := customization.NewStore(customization.Options{OnFailure: onFailure})
	if !o.NoBuiltins {
		// The package's tests compile every built-in: an error is a bug, reported, and the
		// others are in use.
		if err := builtin.Load(store); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Built-in customizations not in use")
		}
	}
	return store
}

// SetupOptions configure Setup.
type SetupOptions struct {
	// Changed: see Reconciler.Changed. It is called before the manager starts too, by the
	// first load.
	Changed func(gk schema.GroupKind)
	// ReadOnly: see Reconciler.ReadOnly.
	ReadOnly bool
	// NoBuiltins leaves out the customizations Flotilla ships for third-party kinds
	// (internal/customization/builtin), which are otherwise in use at the lowest
	// precedence: a customization on the host that scripts an operation of their kind
	// wins.
	NoBuiltins bool
}

// Setup makes the store of customizations, loads every customization on the host into it
// before the manager starts (LoadAll: nothing interprets a customized kind with the built-in
// rules first), and registers the controller that keeps it current as customizations are
// created, edited and deleted on the host. The store is ready for interpreter.Interpreter's
// Customizations.
func Setup(ctx context.Context, mgr ctrl.Manager, o SetupOptions) (*customization.Store, error) {
	var recorder events.EventRecorder
	if !o.ReadOnly {
		recorder = mgr.GetEventRecorder("customization-controller")
	}
	r := New(mgr.GetClient(), recorder, o.Changed)
	r.ReadOnly = o.ReadOnly
	store := NewStore(ctx, o, r.Failed)
	r.Store = store
	if err := r.LoadAll(ctx, mgr.GetAPIReader()); err != nil {
		ctrl.LoggerFrom(ctx).Info("Cannot list ResourceInterpreterCustomizations at start; their controller loads them", "error", err.Error())
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	return store, nil
}
