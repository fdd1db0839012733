// Package federatedhpa is the FederatedHPA controller: every sync period it reads the pods
// of the target in each member that runs it and their metrics (metrics.k8s.io, from the
// member's metrics API), runs Kubernetes' HorizontalPodAutoscaler algorithm over all of them
// as one set (internal/fhpa.Decide), and writes the status. Flotilla never writes the
// template: status.desiredReplicas is what the detector gives the template's ResourceBinding
// (annotation autoscaling.flotilla.io/federated-hpa), and the scheduler divides it.
//
// Member reads run on the members' own queues (internal/memberqueue), never on the shared
// workers: Reconcile starts a collection round (one key per member that runs the target),
// each member's worker stores its sample and wakes the FederatedHPA, and the Reconcile that
// finds every sample of the round in decides and writes the status once. A member that does
// not answer within the sync period counts as unavailable: the replicas stay as they are,
// with ScalingActive=False naming it.
package federatedhpa

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	autoscalingv1alpha1 "github.com/flotilla-io/flotilla/api/autoscaling/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers/detector"
	"github.com/flotilla-io/flotilla/internal/fhpa"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/memberqueue"
	"github.com/flotilla-io/flotilla/internal/memo"
)

// ControllerName names the controller and its events.
const ControllerName = "federated-hpa-controller"

// DefaultSyncPeriod is how often each FederatedHPA is computed, as the HorizontalPodAutoscaler
// controller's --horizontal-pod-autoscaler-sync-period.
const DefaultSyncPeriod = 15 * time.Second

// bindingPoll is how often a FederatedHPA waiting for its binding to take its replicas looks
// again.
const bindingPoll = 200 * time.Millisecond

// Collector reads the target's pods and their metrics in one member.
type Collector interface {
	Collect(ctx context.Context, cluster, namespace string, selector labels.Selector) ([]fhpa.Pod, error)
}

// Reconciler reconciles FederatedHPAs.
type Reconciler struct {
	// Client reads FederatedHPAs and bindings from the cache and writes FederatedHPA status.
	Client client.Client
	// APIReader reads templates (any kind) from the apiserver.
	APIReader client.Reader
	// Recorder records events on FederatedHPAs.
	Recorder events.EventRecorder
	// Members holds the member connections (for the default Collector, and to run member
	// reads on the members' queues).
	Members *member.Manager
	// Collector reads members; MemberCollector{Members} when nil.
	Collector Collector
	// SyncPeriod is how often each FederatedHPA is computed; DefaultSyncPeriod when zero.
	SyncPeriod time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// MemberWorkTimeout bounds one member read (memberqueue.DefaultTimeout when zero).
	MemberWorkTimeout time.Duration

	queues *memberqueue.Queues[types.NamespacedName]
	wake   chan event.GenericEvent
	// rounds are the collection rounds in progress or last completed, by FederatedHPA.
	rounds memo.Map[types.NamespacedName, *round]
	// states are the algorithm's memory (recommendations, scale events), by FederatedHPA.
	states memo.Map[types.NamespacedName, *fhpa.State]
}

// round is one collection: which members, from when, what each answered.
type round struct {
	mu        sync.Mutex
	started   time.Time
	namespace string
	selector  labels.Selector
	clusters  []string
	samples   map[string]sample
	// decided is when the round's samples were used; zero while it is open.
	decided time.Time
}

type sample struct {
	pods []fhpa.Pod
	err  error
}

// +kubebuilder:rbac:groups=autoscaling.karmada.io,resources=federatedhpas,verbs=get;list;watch
// +kubebuilder:rbac:groups=autoscaling.karmada.io,resources=federatedhpas/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=work.karmada.io,resources=resourcebindings,verbs=get;list;watch
// +kubebuilder:rbac:groups=autoscaling.karmada.io,resources=cronfederatedhpas,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile computes one FederatedHPA when its sync period is due and its members have
// answered.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	h := &autoscalingv1alpha1.FederatedHPA{}
	if err := r.Client.Get(ctx, req.NamespacedName, h); err != nil {
		if apierrors.IsNotFound(err) {
			r.rounds.Delete(req.NamespacedName)
			r.states.Delete(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if h.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	now := r.now()
	period := r.period()

	// Target: the template's selector and the binding's clusters and replicas.
	tgt, err := r.target(ctx, h)
	if err != nil {
		return ctrl.Result{RequeueAfter: period}, r.report(ctx, h, r.targetFailure(h, err, now), nil)
	}

	// The binding has not taken the last decision yet (the detector applies it): wait for it,
	// else the next run would see the old replicas and undo the scale.
	// A binding that never takes it (a multi-component workload, whose replicas Flotilla does
	// not divide) is reported, and nothing is computed from its stale replicas.
	if s := h.Status; s.DesiredReplicas != s.CurrentReplicas && tgt.replicas == s.CurrentReplicas && s.DesiredReplicas > 0 &&
		s.LastScaleTime != nil && s.ObservedGeneration != nil && *s.ObservedGeneration == h.Generation {
		if now.Sub(s.LastScaleTime.Time) < 2*period {
			return ctrl.Result{RequeueAfter: bindingPoll}, nil
		}
		err := &errTarget{"BindingNotUpdated", fmt.Sprintf("the binding %s still runs %d replicas, not the %d decided at %s",
			detector.BindingName(h.Spec.ScaleTargetRef.Kind, h.Spec.ScaleTargetRef.Name), tgt.replicas, s.DesiredReplicas, s.LastScaleTime.UTC().Format(time.RFC3339))}
		return ctrl.Result{RequeueAfter: period}, r.report(ctx, h, r.targetFailure(h, err, now), nil)
	}

	// Collect: a new round when the last one was used a period ago (or the target moved).
	rd, _ := r.rounds.Load(req.NamespacedName)
	if rd == nil || rd.due(now, period, tgt) {
		rd = r.startRound(req.NamespacedName, tgt, now)
	}
	if wait, ok := rd.waiting(now, period); ok {
		return ctrl.Result{RequeueAfter: wait}, nil
	}

	// Decide and report once per round.
	st, _ := r.states.LoadOrStore(req.NamespacedName, &fhpa.State{})
	in := rd.input(h, tgt.replicas, now, period)
	crons := &autoscalingv1alpha1.CronFederatedHPAList{}
	if err := r.Client.List(ctx, crons, client.InNamespace(h.Namespace)); err != nil && !meta.IsNoMatchError(err) {
		return ctrl.Result{}, err
	}
	in.Bounds = fhpa.EffectiveBounds(h.Spec, h.Name, crons.Items)
	d := fhpa.Decide(in, st, now)
	rd.close(now)
	if err := r.report(ctx, h, d.Status, d.Events); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: period}, nil
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Reconciler) period() time.Duration {
	if r.SyncPeriod > 0 {
		return r.SyncPeriod
	}
	return DefaultSyncPeriod
}

// targetInfo is what the FederatedHPA acts on.
type targetInfo struct {
	selector labels.Selector
	clusters []string
	replicas int32
}

// errTarget is a target problem reported as AbleToScale=False.
type errTarget struct{ reason, msg string }

func (e *errTarget) Error() string { return e.msg }

// target reads the template's pod selector and its binding's clusters and replicas.
func (r *Reconciler) target(ctx context.Context, h *autoscalingv1alpha1.FederatedHPA) (targetInfo, error) {
	ref := h.Spec.ScaleTargetRef
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return targetInfo{}, &errTarget{fhpa.ReasonFailedGetScale, fmt.Sprintf("spec.scaleTargetRef.apiVersion: %v", err)}
	}
	tmpl := &unstructured.Unstructured{}
	tmpl.SetGroupVersionKind(gv.WithKind(ref.Kind))
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: h.Namespace, Name: ref.Name}, tmpl); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return targetInfo{}, &errTarget{fhpa.ReasonFailedGetScale, fmt.Sprintf("the target %s %s/%s does not exist", ref.Kind, h.Namespace, ref.Name)}
		}
		return targetInfo{}, err
	}
	raw, found, err := unstructured.NestedMap(tmpl.Object, "spec", "selector")
	if err != nil || !found {
		return targetInfo{}, &errTarget{fhpa.ReasonFailedGetScale, fmt.Sprintf("the target %s %s has no spec.selector to find its pods by", ref.Kind, ref.Name)}
	}
	ls := &metav1.LabelSelector{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, ls); err != nil {
		return targetInfo{}, &errTarget{fhpa.ReasonFailedGetScale, fmt.Sprintf("the target's spec.selector: %v", err)}
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil || sel.Empty() {
		return targetInfo{}, &errTarget{fhpa.ReasonFailedGetScale, fmt.Sprintf("the target's spec.selector selects no pods: %v", err)}
	}
	rb := &workv1alpha2.ResourceBinding{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: h.Namespace, Name: detector.BindingName(ref.Kind, ref.Name)}, rb); err != nil {
		if apierrors.IsNotFound(err) {
			return targetInfo{}, &errTarget{fhpa.ReasonFailedGetScale, fmt.Sprintf("the target %s %s has no ResourceBinding: no PropagationPolicy selects it", ref.Kind, ref.Name)}
		}
		return targetInfo{}, err
	}
	var clusters []string
	for _, c := range rb.Spec.Clusters {
		clusters = append(clusters, c.Name)
	}
	slices.Sort(clusters)
	return targetInfo{selector: sel, clusters: clusters, replicas: rb.Spec.Replicas}, nil
}

// targetFailure is the status when the target cannot be read: the replicas stay.
func (r *Reconciler) targetFailure(h *autoscalingv1alpha1.FederatedHPA, err error, now time.Time) autoscalingv2.HorizontalPodAutoscalerStatus {
	s := *h.Status.DeepCopy()
	reason, msg := fhpa.ReasonFailedGetScale, err.Error()
	var te *errTarget
	if errors.As(err, &te) {
		reason = te.reason
	}
	c := autoscalingv2.HorizontalPodAutoscalerCondition{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionFalse, Reason: reason,
		Message: "the FederatedHPA controller was unable to get the target's current scale: " + msg, LastTransitionTime: metav1.Time{Time: now}}
	out := s.Conditions[:0:0]
	for _, p := range s.Conditions {
		if p.Type == c.Type {
			if p.Status == c.Status {
				c.LastTransitionTime = p.LastTransitionTime
			}
			continue
		}
		out = append(out, p)
	}
	s.Conditions = append([]autoscalingv2.HorizontalPodAutoscalerCondition{c}, out...)
	s.ObservedGeneration = &h.Generation
	return s
}

// due reports whether a new round must start: the last was used a period ago, or the
// target's clusters or selector changed.
func (rd *round) due(now time.Time, period time.Duration, t targetInfo) bool {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if !slices.Equal(rd.clusters, t.clusters) || rd.selector.String() != t.selector.String() {
		return true
	}
	return !rd.decided.IsZero() && !now.Before(rd.decided.Add(period))
}

func (r *Reconciler) startRound(key types.NamespacedName, t targetInfo, now time.Time) *round {
	rd := &round{started: now, namespace: key.Namespace, selector: t.selector, clusters: t.clusters, samples: map[string]sample{}}
	r.rounds.Store(key, rd)
	for _, c := range t.clusters {
		r.queues.Add(c, key)
	}
	return rd
}

// waiting returns how long to wait for the round: until the next period when it was used,
// or until its members answer (a member that has not answered within a period counts as
// unavailable).
func (rd *round) waiting(now time.Time, period time.Duration) (time.Duration, bool) {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if !rd.decided.IsZero() {
		return rd.decided.Add(period).Sub(now), true
	}
	if len(rd.samples) >= len(rd.clusters) || !now.Before(rd.started.Add(period)) {
		return 0, false
	}
	return rd.started.Add(period).Sub(now), true
}

func (rd *round) input(h *autoscalingv1alpha1.FederatedHPA, current int32, now time.Time, period time.Duration) fhpa.Input {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	in := fhpa.Input{Spec: h.Spec, Current: current, Previous: h.Status, Generation: h.Generation, Unavailable: map[string]string{}}
	for _, c := range rd.clusters {
		s, ok := rd.samples[c]
		switch {
		case !ok:
			in.Unavailable[c] = fmt.Sprintf("no answer within %s", period)
		case s.err != nil:
			in.Unavailable[c] = s.err.Error()
		default:
			in.Pods = append(in.Pods, s.pods...)
		}
	}
	return in
}

func (rd *round) close(now time.Time) {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	rd.decided = now
}

// process collects one member's sample for a FederatedHPA's open round, on the member's
// workers, and wakes the FederatedHPA.
func (r *Reconciler) process(ctx context.Context, cluster string, key types.NamespacedName) (ctrl.Result, error) {
	rd, ok := r.rounds.Load(key)
	if !ok {
		return ctrl.Result{}, nil
	}
	rd.mu.Lock()
	ns, sel, open := rd.namespace, rd.selector, rd.decided.IsZero()
	rd.mu.Unlock()
	if !open {
		return ctrl.Result{}, nil
	}
	pods, err := r.collector().Collect(ctx, cluster, ns, sel)
	rd.mu.Lock()
	if rd.decided.IsZero() {
		rd.samples[cluster] = sample{pods: pods, err: err}
	}
	rd.mu.Unlock()
	h := &autoscalingv1alpha1.FederatedHPA{}
	h.SetNamespace(key.Namespace)
	h.SetName(key.Name)
	select {
	case r.wake <- event.GenericEvent{Object: h}:
	case <-ctx.Done():
	}
	return ctrl.Result{}, nil
}

func (r *Reconciler) collector() Collector {
	if r.Collector != nil {
		return r.Collector
	}
	return MemberCollector{Members: r.Members}
}

// MemberCollector reads a member's pods and the metrics.k8s.io PodMetrics of the pods that
// match, live from its apiserver.
type MemberCollector struct{ Members *member.Manager }

// PodMetricsGVK is the kind of a member's pod metrics.
var PodMetricsGVK = schema.GroupVersionKind{Group: "metrics.k8s.io", Version: "v1beta1", Kind: "PodMetricsList"}

// Collect lists the pods and their metrics.
func (m MemberCollector) Collect(ctx context.Context, cluster, namespace string, selector labels.Selector) ([]fhpa.Pod, error) {
	mem, err := m.Members.Get(cluster)
	if err != nil {
		return nil, err
	}
	pods := &corev1.PodList{}
	if err := mem.Client.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(PodMetricsGVK)
	if err := mem.Client.List(ctx, list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, errors.New("metrics.k8s.io is not served (no metrics-server)")
		}
		return nil, fmt.Errorf("listing metrics.k8s.io PodMetrics: %w", err)
	}
	byName := map[string]*metricsv1beta1.PodMetrics{}
	for i := range list.Items {
		pm := &metricsv1beta1.PodMetrics{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, pm); err != nil {
			return nil, fmt.Errorf("reading PodMetrics %s: %w", list.Items[i].GetName(), err)
		}
		byName[pm.Name] = pm
	}
	out := make([]fhpa.Pod, 0, len(pods.Items))
	for i := range pods.Items {
		out = append(out, fhpa.Pod{Cluster: cluster, Pod: &pods.Items[i], Metrics: byName[pods.Items[i].Name]})
	}
	return out, nil
}

// report records the events and writes the status when it changed.
func (r *Reconciler) report(ctx context.Context, h *autoscalingv1alpha1.FederatedHPA, s autoscalingv2.HorizontalPodAutoscalerStatus, evs []fhpa.Event) error {
	for _, e := range evs {
		r.Recorder.Eventf(h, nil, e.Type, e.Reason, "Scale", "%s", e.Message)
	}
	if equality.Semantic.DeepEqual(h.Status, s) {
		return nil
	}
	// The whole status (an update, not a merge patch): desiredReplicas is required even at 0.
	h.Status = s
	err := r.Client.Status().Update(ctx, h)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// SetupWithManager registers the controller (leader only: it writes status) and its member
// queues.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Members == nil && r.Collector == nil {
		return errors.New("federatedhpa controller: Members or Collector must be set")
	}
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder(ControllerName)
	}
	r.queues = memberqueue.New("federatedhpa", 2, r.process)
	r.queues.Timeout = r.MemberWorkTimeout
	if r.Members != nil {
		r.Members.OnRemove(r.queues.Remove)
	}
	if err := mgr.Add(r.queues); err != nil {
		return err
	}
	r.wake = make(chan event.GenericEvent, 1024)
	return ctrl.NewControllerManagedBy(mgr).Named("federatedhpa").
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		For(&autoscalingv1alpha1.FederatedHPA{}).
		WatchesRawSource(source.Channel(r.wake, &handler.EnqueueRequestForObject{})).
		Complete(r)
}
