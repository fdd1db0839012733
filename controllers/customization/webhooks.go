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
	"github.com/flotilla-io/flotilla/internal/interpreterwebhook"
)

// Webhooks holds the interpreter webhooks in use (interpreterwebhook.Registry).
type Webhooks interface {
	Apply(cfg *configv1alpha1.ResourceInterpreterWebhookConfiguration) error
	Remove(name string)
}

// WebhookReconciler keeps the interpreter webhooks in use in step with the
// ResourceInterpreterWebhookConfigurations on the host, and reports on each whether its
// webhooks are in use (Loaded) and how their calls went (WebhooksHealthy), with an event on
// each change. Create it with NewWebhookReconciler.
type WebhookReconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	Webhooks Webhooks
	// Changed is called with a matcher of the kinds whose interpretation changed (those the
	// configuration's rules match, before and after an edit).
	Changed func(match func(schema.GroupKind) bool)
	Now     func() time.Time
	// ReadOnly only loads configurations: no status, no events (the Pull agent, whose host
	// credential may only read them; the manager reports on them). Failed calls are logged
	// instead, at most every few seconds per configuration.
	ReadOnly bool

	mu       sync.Mutex
	loaded   map[string]loadedRules
	loadErrs map[string]error
	failures map[string]webhookFailure
	wake     chan event.GenericEvent
}

type loadedRules struct {
	generation int64
	rules      []configv1alpha1.RuleWithOperations
}

type webhookFailure struct {
	interpreterwebhook.Failure
	at         time.Time
	generation int64
}

// NewWebhookReconciler returns a WebhookReconciler; set Webhooks before the manager starts.
func NewWebhookReconciler(c client.Client, recorder events.EventRecorder, changed func(func(schema.GroupKind) bool)) *WebhookReconciler {
	return &WebhookReconciler{Client: c, Recorder: recorder, Changed: changed, Now: time.Now,
		loaded: map[string]loadedRules{}, loadErrs: map[string]error{}, failures: map[string]webhookFailure{},
		wake: make(chan event.GenericEvent, 256)}
}

// +kubebuilder:rbac:groups=config.karmada.io,resources=resourceinterpreterwebhookconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=config.karmada.io,resources=resourceinterpreterwebhookconfigurations/status,verbs=get;update;patch

// Reconcile loads one configuration's webhooks and writes its conditions.
func (r *WebhookReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cfg := &configv1alpha1.ResourceInterpreterWebhookConfiguration{}
	if err := r.Client.Get(ctx, req.NamespacedName, cfg); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		r.unload(req.Name)
		return ctrl.Result{}, nil
	}
	if cfg.DeletionTimestamp != nil {
		r.unload(cfg.Name)
		return ctrl.Result{}, nil
	}
	loadErr := r.load(cfg)
	if r.ReadOnly {
		if loadErr != nil {
			ctrl.LoggerFrom(ctx).Info("A ResourceInterpreterWebhookConfiguration does not load", "configuration", cfg.Name, "error", loadErr.Error())
		}
		return ctrl.Result{}, nil
	}
	loaded, healthy, failed := r.conditions(cfg, loadErr)
	var res ctrl.Result
	if failed {
		// WebhooksHealthy turns True again once no call has failed for webhookFailureTTL.
		res.RequeueAfter = webhookFailureTTL
	}
	return res, r.report(ctx, cfg, loadErr, loaded, healthy, failed)
}

// webhookFailureTTL is how long a failed call keeps WebhooksHealthy False when no other
// call fails (a webhook that was down for a while is healthy again without an edit).
const webhookFailureTTL = 5 * time.Minute

// conditions are the configuration's Loaded and WebhooksHealthy conditions.
func (r *WebhookReconciler) conditions(cfg *configv1alpha1.ResourceInterpreterWebhookConfiguration, loadErr error) (loaded, healthy metav1.Condition, failed bool) {
	loaded = metav1.Condition{Type: configv1alpha1.ConditionLoaded, Status: metav1.ConditionTrue, Reason: "Loaded",
		Message: fmt.Sprintf("%d webhook(s) in use", len(cfg.Webhooks)), ObservedGeneration: cfg.Generation}
	if loadErr != nil {
		loaded.Status, loaded.Reason = metav1.ConditionFalse, "LoadFailed"
		loaded.Message = fmt.Sprintf("Not in use: %v. Customizations and Flotilla's built-in rules interpret the kinds its rules match until it is fixed", loadErr)
	}
	healthy = metav1.Condition{Type: configv1alpha1.ConditionWebhooksHealthy, Status: metav1.ConditionTrue, Reason: "NoFailures",
		Message: "No call has failed in the last 5 minutes", ObservedGeneration: cfg.Generation}
	r.mu.Lock()
	f, failed := r.failures[cfg.Name]
	if failed && (f.generation != cfg.Generation || r.Now().Sub(f.at) >= webhookFailureTTL) {
		delete(r.failures, cfg.Name)
		failed = false
	}
	r.mu.Unlock()
	if failed {
		healthy.Status, healthy.Reason = metav1.ConditionFalse, "CallFailed"
		healthy.Message = fmt.Sprintf("At %s: %v", f.at.UTC().Format(time.RFC3339), f.Err)
	}
	if loadErr != nil {
		healthy.Status, healthy.Reason, healthy.Message = metav1.ConditionUnknown, "NotLoaded", "The webhooks are not in use"
	}
	return loaded, healthy, failed
}

// report writes the conditions and emits an event for each that changed.
func (r *WebhookReconciler) report(ctx context.Context, cfg *configv1alpha1.ResourceInterpreterWebhookConfiguration, loadErr error, loaded, healthy metav1.Condition, failed bool) error {
	before := cfg.DeepCopy()
	changedLoaded, changedHealthy := conditionChanged(cfg.Status.Conditions, loaded), conditionChanged(cfg.Status.Conditions, healthy)
	meta.SetStatusCondition(&cfg.Status.Conditions, loaded)
	meta.SetStatusCondition(&cfg.Status.Conditions, healthy)
	cfg.Status.ObservedGeneration = cfg.Generation
	cfg.Status.Webhooks = 0
	if loadErr == nil {
		cfg.Status.Webhooks = int32(len(cfg.Webhooks))
	}
	if changedLoaded {
		if loadErr != nil {
			r.Recorder.Eventf(cfg, nil, corev1.EventTypeWarning, wellknown.EventReasonInterpreterWebhookLoadFailed, "Load", loaded.Message)
		} else {
			r.Recorder.Eventf(cfg, nil, corev1.EventTypeNormal, wellknown.EventReasonInterpreterWebhookLoaded, "Load", loaded.Message)
		}
	}
	if changedHealthy && failed {
		r.Recorder.Eventf(cfg, nil, corev1.EventTypeWarning, wellknown.EventReasonInterpreterWebhookCallFailed, "Call", healthy.Message)
	}
	if !changedLoaded && !changedHealthy && before.Status.ObservedGeneration == cfg.Generation && before.Status.Webhooks == cfg.Status.Webhooks {
		return nil
	}
	return client.IgnoreNotFound(r.Client.Status().Patch(ctx, cfg, client.MergeFrom(before)))
}

// load puts the configuration's webhooks in use (or out of it) and announces the kinds
// they match.
func (r *WebhookReconciler) load(cfg *configv1alpha1.ResourceInterpreterWebhookConfiguration) error {
	r.mu.Lock()
	prev, had := r.loaded[cfg.Name]
	r.mu.Unlock()
	if had && prev.generation == cfg.Generation && cfg.Generation != 0 {
		return r.lastErr(cfg.Name)
	}
	err := r.Webhooks.Apply(cfg)
	var rules []configv1alpha1.RuleWithOperations
	for _, w := range cfg.Webhooks {
		rules = append(rules, w.Rules...)
	}
	r.mu.Lock()
	r.loaded[cfg.Name] = loadedRules{generation: cfg.Generation, rules: rules}
	if err != nil {
		r.loadErrs[cfg.Name] = err
	} else {
		delete(r.loadErrs, cfg.Name)
	}
	r.mu.Unlock()
	if r.Changed != nil {
		r.Changed(matcher(append(prev.rules, rules...)))
	}
	return err
}

// matcher matches the kinds any of the rules match.
func matcher(rules []configv1alpha1.RuleWithOperations) func(schema.GroupKind) bool {
	in := func(list []string, v string) bool {
		for _, s := range list {
			if s == "*" || s == v {
				return true
			}
		}
		return false
	}
	return func(gk schema.GroupKind) bool {
		for _, rule := range rules {
			if in(rule.APIGroups, gk.Group) && in(rule.Kinds, gk.Kind) {
				return true
			}
		}
		return false
	}
}

func (r *WebhookReconciler) lastErr(name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.loadErrs[name]
}

func (r *WebhookReconciler) unload(name string) {
	r.Webhooks.Remove(name)
	r.mu.Lock()
	prev, had := r.loaded[name]
	delete(r.loaded, name)
	delete(r.loadErrs, name)
	delete(r.failures, name)
	r.mu.Unlock()
	if had && r.Changed != nil {
		r.Changed(matcher(prev.rules))
	}
}

// Failed records a failed call for the configuration's WebhooksHealthy condition. The
// registry calls it; it does not block.
func (r *WebhookReconciler) Failed(f interpreterwebhook.Failure) {
	cfg := &configv1alpha1.ResourceInterpreterWebhookConfiguration{}
	cfg.Name = f.Configuration
	r.mu.Lock()
	prev, seen := r.failures[f.Configuration]
	now := r.Now()
	r.failures[f.Configuration] = webhookFailure{Failure: f, at: now, generation: r.loaded[f.Configuration].generation}
	wake := !seen || now.Sub(prev.at) > failureWriteInterval
	r.mu.Unlock()
	if wake && r.ReadOnly {
		ctrl.Log.WithName("interpreterwebhook").Info("An interpreter webhook call failed", "configuration", f.Configuration,
			"webhook", f.Webhook, "operation", f.Operation, "object", f.Object, "error", f.Err.Error())
		return
	}
	if wake {
		select {
		case r.wake <- event.GenericEvent{Object: cfg}:
		default:
		}
	}
}

// LoadAll loads every configuration on the host before the manager starts, as
// Reconciler.LoadAll does for customizations.
func (r *WebhookReconciler) LoadAll(ctx context.Context, reader client.Reader) error {
	list := &configv1alpha1.ResourceInterpreterWebhookConfigurationList{}
	if err := reader.List(ctx, list); err != nil {
		return err
	}
	for i := range list.Items {
		cfg := &list.Items[i]
		if cfg.DeletionTimestamp != nil {
			continue
		}
		if err := r.load(cfg); err != nil {
			ctrl.LoggerFrom(ctx).Info("A ResourceInterpreterWebhookConfiguration does not load", "configuration", cfg.Name, "error", err.Error())
		}
	}
	return nil
}

// SetupWithManager registers the controller; like the customizations', it runs on every
// replica.
func (r *WebhookReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("interpreterwebhook").
		WithOptions(controller.Options{NeedLeaderElection: ptr.To(false)}).
		For(&configv1alpha1.ResourceInterpreterWebhookConfiguration{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Channel(r.wake, &handler.EnqueueRequestForObject{})).
		Complete(r)
}

// SetupWebhooks makes the registry of interpreter webhooks, loads every configuration on
// the host into it before the manager starts, and registers the controller that keeps it
// current. The registry is the interpreter's second layer (interpreter.Layers).
//
// readOnly is the Pull agent's: configurations are loaded, nothing is written.
func SetupWebhooks(ctx context.Context, mgr ctrl.Manager, changed func(func(schema.GroupKind) bool), readOnly bool) (*interpreterwebhook.Registry, error) {
	var recorder events.EventRecorder
	if !readOnly {
		recorder = mgr.GetEventRecorder("interpreter-webhook-controller")
	}
	r := NewWebhookReconciler(mgr.GetClient(), recorder, changed)
	r.ReadOnly = readOnly
	reg := interpreterwebhook.NewRegistry(interpreterwebhook.Options{OnFailure: r.Failed})
	r.Webhooks = reg
	if err := r.LoadAll(ctx, mgr.GetAPIReader()); err != nil {
		ctrl.LoggerFrom(ctx).Info("Cannot list ResourceInterpreterWebhookConfigurations at start; their controller loads them", "error", err.Error())
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	return reg, nil
}
