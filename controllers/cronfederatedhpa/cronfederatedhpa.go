// Package cronfederatedhpa is the CronFederatedHPA controller. It fires each rule at its cron
// schedule, in its time zone, and records the executions in the status as Karmada does.
//
// Flotilla never writes a template, so a rule that fires does not scale the template: the
// controller records in the CronFederatedHPA's status the replicas the fleet should run
// (fleetReplicas) and the template's replicas at that moment (templateReplicas), and the
// detector gives the template's ResourceBinding those replicas while the template still asks
// for templateReplicas (internal/cronfhpa.Select). The scheduler then divides them and the
// binding controller renders each member's share, as for any replica count.
//
// Reconcile runs in named phases: plan (which rules are due now, internal/cronfhpa.PlanAt),
// execute (read the template, check the rule, for each due rule), report (histories,
// fleet replicas, the Ready condition and events, in one status write), then it requeues at
// the next fire time.
package cronfederatedhpa

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	autoscalingv1alpha1 "github.com/flotilla-io/flotilla/api/autoscaling/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/cronfhpa"
)

// ControllerName names the controller and its events.
const ControllerName = "cron-federated-hpa-controller"

// Replicas reads a template's replicas (interpreter.Interpreter).
type Replicas interface {
	GetReplicas(obj *unstructured.Unstructured) (int32, *workv1alpha2.ReplicaRequirements, error)
	HasReplicas(obj *unstructured.Unstructured) bool
}

// Reconciler reconciles CronFederatedHPAs.
type Reconciler struct {
	// Client reads CronFederatedHPAs from the cache and writes their status.
	Client client.Client
	// APIReader reads templates (any kind) from the apiserver, not a cache.
	APIReader client.Reader
	// Recorder records events on CronFederatedHPAs.
	Recorder events.EventRecorder
	// Interpreter reads the template's replicas.
	Interpreter Replicas
	// Now is the clock; time.Now when nil (tests set it).
	Now func() time.Time
}

// +kubebuilder:rbac:groups=autoscaling.karmada.io,resources=cronfederatedhpas,verbs=get;list;watch
// +kubebuilder:rbac:groups=autoscaling.karmada.io,resources=cronfederatedhpas/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile fires the due rules of one CronFederatedHPA and reports.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	c := &autoscalingv1alpha1.CronFederatedHPA{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if c.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	now := r.now()
	before := c.DeepCopy()

	// Refused targets: nothing is planned.
	if ready, refused := refuse(c); refused {
		c.Status.ExecutionHistories = nil
		return ctrl.Result{}, r.report(ctx, before, c, ready, nil)
	}

	plan := cronfhpa.PlanAt(c, now)
	results := r.execute(ctx, c, plan, now)
	c.Status.ExecutionHistories = cronfhpa.Record(c, plan, results)
	ready := readiness(c, plan)
	if err := r.report(ctx, before, c, ready, results); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: plan.RequeueAfter}, nil
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// refuse returns the Ready condition of a target Flotilla does not act on: a malformed
// reference, or an autoscaling.karmada.io kind other than FederatedHPA.
func refuse(c *autoscalingv1alpha1.CronFederatedHPA) (metav1.Condition, bool) {
	cond := metav1.Condition{Type: autoscalingv1alpha1.ConditionReady, Status: metav1.ConditionFalse, ObservedGeneration: c.Generation}
	gvk, err := cronfhpa.Target(c)
	switch {
	case err != nil:
		cond.Reason, cond.Message = "InvalidTarget", err.Error()
	case gvk.Group == autoscalingv1alpha1.GroupVersion.Group && gvk.GroupKind() != cronfhpa.FederatedHPA:
		cond.Reason = "TargetNotSupported"
		cond.Message = fmt.Sprintf("spec.scaleTargetRef: %s is not a kind a CronFederatedHPA can scale; no rule fires", gvk.Kind)
	default:
		return metav1.Condition{}, false
	}
	return cond, true
}

// execute executes the due rules, in order: each sets the fleet replicas in the status.
func (r *Reconciler) execute(ctx context.Context, c *autoscalingv1alpha1.CronFederatedHPA, plan cronfhpa.Plan, now time.Time) []cronfhpa.Result {
	var results []cronfhpa.Result
	for _, d := range plan.Due {
		if gvk, _ := cronfhpa.Target(c); gvk.GroupKind() == cronfhpa.FederatedHPA {
			// A FederatedHPA's bounds: the execution recorded in the history (appliedMinReplicas,
			// appliedMaxReplicas) is what the FederatedHPA controller reads; its spec is never
			// written.
			err := r.bounds(ctx, c, d.Rule)
			results = append(results, cronfhpa.Result{Due: d, At: now, Err: err})
			if err == nil {
				c.Status.LastScaleTime = &metav1.Time{Time: now.UTC()}
				c.Status.LastRule = d.Rule.Name
			}
			continue
		}
		templateReplicas, err := r.scale(ctx, c, d.Rule)
		results = append(results, cronfhpa.Result{Due: d, At: now, Err: err})
		if err != nil {
			continue
		}
		c.Status.FleetReplicas = ptrTo(*d.Rule.TargetReplicas)
		c.Status.TemplateReplicas = ptrTo(templateReplicas)
		c.Status.LastScaleTime = &metav1.Time{Time: now.UTC()}
		c.Status.LastRule = d.Rule.Name
	}
	return results
}

func ptrTo[T any](v T) *T { return &v }

// bounds checks that the rule can set the FederatedHPA's bounds.
func (r *Reconciler) bounds(ctx context.Context, c *autoscalingv1alpha1.CronFederatedHPA, rule autoscalingv1alpha1.CronFederatedHPARule) error {
	if rule.TargetMinReplicas == nil && rule.TargetMaxReplicas == nil {
		return fmt.Errorf("rule %s sets neither targetMinReplicas nor targetMaxReplicas, which a FederatedHPA target needs", rule.Name)
	}
	h := &autoscalingv1alpha1.FederatedHPA{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.Spec.ScaleTargetRef.Name}, h); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return fmt.Errorf("the target FederatedHPA %s/%s does not exist", c.Namespace, c.Spec.ScaleTargetRef.Name)
		}
		return fmt.Errorf("reading the target FederatedHPA %s/%s: %w", c.Namespace, c.Spec.ScaleTargetRef.Name, err)
	}
	return nil
}

// scale checks that the rule can scale the template, and returns the template's replicas.
func (r *Reconciler) scale(ctx context.Context, c *autoscalingv1alpha1.CronFederatedHPA, rule autoscalingv1alpha1.CronFederatedHPARule) (int32, error) {
	ref := c.Spec.ScaleTargetRef
	switch {
	case rule.TargetReplicas == nil:
		return 0, fmt.Errorf("rule %s sets no targetReplicas, which a %s target needs (targetMinReplicas and targetMaxReplicas are for a FederatedHPA)", rule.Name, ref.Kind)
	case *rule.TargetReplicas == 0:
		return 0, fmt.Errorf("rule %s: scaling the fleet to 0 replicas is not supported yet; delete the policy's placement or scale the template instead", rule.Name)
	}
	gvk, err := cronfhpa.Target(c)
	if err != nil {
		return 0, err
	}
	tmpl := &unstructured.Unstructured{}
	tmpl.SetGroupVersionKind(gvk)
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: ref.Name}, tmpl); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return 0, fmt.Errorf("the target %s %s/%s does not exist", ref.Kind, c.Namespace, ref.Name)
		}
		return 0, fmt.Errorf("reading the target %s %s/%s: %w", ref.Kind, c.Namespace, ref.Name, err)
	}
	if !r.Interpreter.HasReplicas(tmpl) {
		return 0, fmt.Errorf("Flotilla does not know the replicas of %s (a ResourceInterpreterCustomization or an interpreter webhook can tell it)", gvk.GroupKind())
	}
	n, _, err := r.Interpreter.GetReplicas(tmpl)
	if err != nil {
		return 0, fmt.Errorf("reading the replicas of %s %s/%s: %w", ref.Kind, c.Namespace, ref.Name, err)
	}
	return n, nil
}

// readiness is the Ready condition: False while a rule's schedule or time zone is invalid.
func readiness(c *autoscalingv1alpha1.CronFederatedHPA, plan cronfhpa.Plan) metav1.Condition {
	cond := metav1.Condition{Type: autoscalingv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Scheduled",
		ObservedGeneration: c.Generation}
	var bad []string
	for i, rule := range c.Spec.Rules {
		if err := plan.Invalid[rule.Name]; err != nil {
			bad = append(bad, fmt.Sprintf("spec.rules[%d] (%s): %v", i, rule.Name, err))
		}
	}
	if len(bad) > 0 {
		cond.Status, cond.Reason = metav1.ConditionFalse, "InvalidSchedule"
		cond.Message = strings.Join(bad, "; ") + ". Those rules do not fire"
		return cond
	}
	var next time.Time
	var nextRule string
	for _, rule := range c.Spec.Rules {
		if t := plan.Next[rule.Name]; t != nil && (next.IsZero() || t.Before(next)) {
			next, nextRule = *t, rule.Name
		}
	}
	if next.IsZero() {
		cond.Message = "Every rule is suspended"
	} else {
		cond.Message = fmt.Sprintf("Rule %s fires next, at %s", nextRule, next.UTC().Format(time.RFC3339))
	}
	return cond
}

// report writes the status once, and emits an event per execution and per change of Ready.
func (r *Reconciler) report(ctx context.Context, before, c *autoscalingv1alpha1.CronFederatedHPA, ready metav1.Condition, results []cronfhpa.Result) error {
	for _, res := range results {
		if res.Err != nil {
			r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, wellknown.EventReasonScaleFailed, "Scale",
				"Rule %s (scheduled %s): %v", res.Rule.Name, res.ScheduleTime.UTC().Format(time.RFC3339), res.Err)
		} else if res.Rule.TargetReplicas == nil {
			r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, wellknown.EventReasonScaleSucceeded, "Scale",
				"Rule %s (scheduled %s): FederatedHPA %s takes minReplicas %s and maxReplicas %s", res.Rule.Name,
				res.ScheduleTime.UTC().Format(time.RFC3339), c.Spec.ScaleTargetRef.Name, orSpec(res.Rule.TargetMinReplicas), orSpec(res.Rule.TargetMaxReplicas))
		} else {
			r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, wellknown.EventReasonScaleSucceeded, "Scale",
				"Rule %s (scheduled %s): the fleet runs %d replicas of %s %s while it asks for %d", res.Rule.Name,
				res.ScheduleTime.UTC().Format(time.RFC3339), *res.Rule.TargetReplicas, c.Spec.ScaleTargetRef.Kind,
				c.Spec.ScaleTargetRef.Name, *c.Status.TemplateReplicas)
		}
	}
	was := meta.FindStatusCondition(before.Status.Conditions, autoscalingv1alpha1.ConditionReady)
	if ready.Status == metav1.ConditionFalse && (was == nil || was.Status != ready.Status || was.Message != ready.Message) {
		r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, wellknown.EventReasonScaleFailed, "Schedule", ready.Message)
	}
	meta.SetStatusCondition(&c.Status.Conditions, ready)
	c.Status.ObservedGeneration = c.Generation
	if equality.Semantic.DeepEqual(before.Status, c.Status) {
		return nil
	}
	err := r.Client.Status().Patch(ctx, c, client.MergeFrom(before))
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil && len(results) > 0 {
		return fmt.Errorf("recording %d execution(s): %w", len(results), err)
	}
	return err
}

// SetupWithManager registers the controller. It is leader-only (it writes status); the
// rules' next fire times are in the status, so a new leader picks up where the old one was.
// Status edits trigger it too (no generation predicate): a history edited by hand is read at
// once.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder(ControllerName)
	}
	return ctrl.NewControllerManagedBy(mgr).Named("cronfederatedhpa").
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		For(&autoscalingv1alpha1.CronFederatedHPA{}).
		Complete(r)
}

// orSpec renders a bound a rule sets, or says the FederatedHPA's own applies.
func orSpec(v *int32) string {
	if v == nil {
		return "(its own)"
	}
	return fmt.Sprint(*v)
}
