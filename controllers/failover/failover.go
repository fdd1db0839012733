// Package failover moves bindings off failed clusters and failed applications, and purges
// what they left behind, gracefully.
//
// One reconciler per binding kind, in three named phases, all decided by internal/failover
// and written in one update of the binding's spec:
//
//   - taints: a target cluster with a NoExecute taint the placement does not tolerate, or
//     tolerates for tolerationSeconds that ran out (Karmada's default tolerations of the
//     system taints added), is left: the cluster goes from spec.clusters into a graceful
//     eviction task, and the scheduler places its replicas elsewhere.
//   - application: with failover.application, a target cluster where the workload has been
//     applied and unhealthy for decisionConditions.tolerationSeconds is left the same way,
//     with statePreservation's labels carried to the new clusters.
//   - tasks: an eviction task is removed, and with it the old cluster's Work, when the new
//     placement is healthy, or when its grace period ends, but never while the workload has
//     nowhere else to run (purgeMode Directly removes the Work at once; Never keeps it).
//
// Every step is an Event on the binding and on its template, so `kubectl describe` tells
// the story.
package failover

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/bindings"
	"github.com/flotilla-io/flotilla/internal/failover"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/shard"
)

// Options are the failover flags.
type Options struct {
	// NotReadyTolerationSeconds and UnreachableTolerationSeconds are the tolerations of the
	// system NoExecute taints a placement gets when it says nothing about them (Karmada's
	// defaults: 300). Negative: none.
	NotReadyTolerationSeconds    int64
	UnreachableTolerationSeconds int64
	// GracePeriod bounds how long a Gracefully evicted cluster keeps its Work while the new
	// placement is not healthy (a task's gracePeriodSeconds wins). Default 10 minutes.
	GracePeriod time.Duration
	// Workers is the number of concurrent reconciles.
	Workers int
}

// DefaultOptions are Karmada's defaults.
var DefaultOptions = Options{
	NotReadyTolerationSeconds:    failover.DefaultNotReadyTolerationSeconds,
	UnreachableTolerationSeconds: failover.DefaultUnreachableTolerationSeconds,
	GracePeriod:                  failover.DefaultGracePeriod,
}

// DefaultApplicationTolerationSeconds is decisionConditions.tolerationSeconds when unset.
const DefaultApplicationTolerationSeconds = 300

// Event reasons.
const (
	// EventReasonEvictWorkloadFromClusterSucceed: the binding left a cluster (Karmada's reason).
	EventReasonEvictWorkloadFromClusterSucceed = "EvictWorkloadFromClusterSucceed"
	// EventReasonEvictWorkloadFromClusterFailed: it should leave, but cannot yet.
	EventReasonEvictWorkloadFromClusterFailed = "EvictWorkloadFromClusterFailed"
	// EventReasonTaintToleration: a cluster of the binding is tainted NoExecute; the
	// binding leaves it when its toleration runs out.
	EventReasonTaintToleration = "TolerationCountdown"
	// EventReasonApplicationUnhealthy: the workload is unhealthy on a cluster, and moves if
	// it stays so.
	EventReasonApplicationUnhealthy = "ApplicationUnhealthy"
	// EventReasonGracefulEvictionDone: an eviction task is done; a Work it kept is removed.
	EventReasonGracefulEvictionDone = "GracefulEvictionDone"
	// EventReasonGracefulEvictionBlocked: a task's grace period ended, but the workload has
	// nowhere else to run, so it stays.
	EventReasonGracefulEvictionBlocked = "GracefulEvictionBlocked"
)

// Reconciler is the failover controller for one kind of binding.
type Reconciler struct {
	// Shards, when set, is this replica's share of a sharded manager: only the keys of its
	// shards are reconciled (nil: every key).
	Shards *shard.Set

	Client      client.Client
	Recorder    events.EventRecorder
	Interpreter interpreter.Interpreter
	NewBinding  func() client.Object
	Clock       clock.PassiveClock
	Options     Options

	mu sync.Mutex
	// remembered is what is kept of each binding between passes, until it goes.
	remembered map[types.NamespacedName]*remembered
}

// remembered is what the controller keeps of one binding (of one UID: a binding created
// again under its name starts afresh). It is memory only.
type remembered struct {
	uid types.UID
	// unhealthySince is when the workload was first seen unhealthy on a cluster of the
	// binding, by cluster. After a restart the countdown starts again, which delays a move
	// and never hastens one.
	unhealthySince map[string]time.Time
	// told are the countdown and blocked events already recorded, so that each is said
	// once; each is kept while what it said holds.
	told map[string]bool
}

// Reconcile runs the three phases for one binding.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rb := r.NewBinding()
	if err := r.Client.Get(ctx, req.NamespacedName, rb); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	spec, status := bindings.Spec(rb), bindings.Status(rb)
	if rb.GetDeletionTimestamp() != nil || spec.Placement == nil {
		// Being deleted, or a dependency's binding: it follows its workloads' clusters.
		r.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	works, err := bindings.WorksByCluster(ctx, r.Client, rb)
	if err != nil {
		return ctrl.Result{}, err
	}
	now := r.Clock.Now()
	want := spec.DeepCopy()
	var leaves []leave
	var next time.Time
	soonest := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}

	// Phase 1: NoExecute taints.
	taintLeaves, at, err := r.taintPhase(ctx, rb, spec, status, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	leaves = append(leaves, taintLeaves...)
	soonest(at)
	// Phase 2: unhealthy applications.
	appLeaves, at := r.applicationPhase(rb, spec, works, now, leaves)
	leaves = append(leaves, appLeaves...)
	soonest(at)
	for _, l := range leaves {
		failover.Evict(want, l.Leave)
	}
	// Phase 3: the eviction tasks.
	view := failover.View{Placement: placement(rb, status, want, len(leaves) > 0), Healthy: map[string]bool{},
		Recovered: map[string]bool{}, Now: now, GracePeriod: r.Options.GracePeriod}
	for _, tc := range want.Clusters {
		view.Healthy[tc.Name] = r.healthyOn(works[tc.Name], tc, want)
	}
	for _, t := range want.GracefulEvictionTasks {
		recovered, err := r.recovered(ctx, &t, spec)
		if err != nil {
			return ctrl.Result{}, err
		}
		view.Recovered[t.FromCluster] = recovered
	}
	outcomes, remaining, at := failover.Review(want, view)
	want.GracefulEvictionTasks = remaining
	soonest(at)
	// A task done (or gone) is no longer blocked: said again if a new one is.
	r.keepTold(rb, "blocked/", func(what string) bool {
		return slices.ContainsFunc(remaining, func(t workv1alpha2.GracefulEvictionTask) bool { return what == "blocked/"+t.FromCluster })
	})

	if !equality.Semantic.DeepEqual(want.Clusters, spec.Clusters) || !equality.Semantic.DeepEqual(want.GracefulEvictionTasks, spec.GracefulEvictionTasks) {
		before := rb.DeepCopyObject().(client.Object)
		cur := bindings.Spec(rb)
		cur.Clusters, cur.GracefulEvictionTasks = want.Clusters, want.GracefulEvictionTasks
		// The optimistic lock keeps a scheduler's write made from an older view from being
		// lost, and this one from undoing it.
		if err := r.Client.Patch(ctx, rb, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) {
				return ctrl.Result{Requeue: true}, nil
			}
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		r.recordChanges(rb, spec, leaves, outcomes)
	} else {
		r.recordWaits(rb, outcomes)
	}
	if err := r.writeCondition(ctx, rb, status, want, outcomes); err != nil {
		return ctrl.Result{}, err
	}
	if next.IsZero() {
		return ctrl.Result{}, nil
	}
	// A little past the moment, so that the next look sees it due.
	return ctrl.Result{RequeueAfter: max(next.Sub(now), 0) + 100*time.Millisecond}, nil
}

// ConditionEvicting is the binding's condition that tells whether it is leaving clusters:
// True while graceful eviction tasks are open (reason Evicting, or EvictionBlocked when one
// is overdue and the workload has nowhere else to run), False once they are done. A binding
// that never had a task has none.
const (
	ConditionEvicting     = "Evicting"
	ReasonEvicting        = "Evicting"
	ReasonEvictionBlocked = "EvictionBlocked"
	ReasonNoEviction      = "NoEviction"
	conditionFieldOwner   = "flotilla-failover"
)

// writeCondition brings the Evicting condition in line with the tasks, when it changes.
func (r *Reconciler) writeCondition(ctx context.Context, rb client.Object, status *workv1alpha2.ResourceBindingStatus,
	want *workv1alpha2.ResourceBindingSpec, outcomes []failover.Outcome) error {
	cond := metav1.Condition{Type: ConditionEvicting, Status: metav1.ConditionFalse, Reason: ReasonNoEviction,
		Message: "No eviction in progress", ObservedGeneration: rb.GetGeneration()}
	if len(want.GracefulEvictionTasks) > 0 {
		cond.Status, cond.Reason = metav1.ConditionTrue, ReasonEvicting
		var parts []string
		for _, o := range outcomes {
			if o.Done {
				continue
			}
			if o.Blocked {
				cond.Reason = ReasonEvictionBlocked
			}
			parts = append(parts, fmt.Sprintf("%s (%s): %s", o.Task.FromCluster, o.Task.PurgeMode, o.Why))
		}
		cond.Message = "Leaving " + strings.Join(parts, "; ")
	} else if meta.FindStatusCondition(status.Conditions, ConditionEvicting) == nil {
		return nil
	}
	if bindings.ConditionCurrent(status.Conditions, cond) {
		return nil
	}
	err := bindings.ApplyStatus(ctx, r.Client, rb, conditionFieldOwner, map[string]any{
		"conditions": []metav1.Condition{bindings.Condition(status.Conditions, cond)}})
	return client.IgnoreNotFound(err)
}

type leave struct {
	failover.Leave
	why string
}

// taintPhase returns the clusters the binding must leave now because of NoExecute taints,
// and when the next toleration runs out.
func (r *Reconciler) taintPhase(ctx context.Context, rb client.Object, spec *workv1alpha2.ResourceBindingSpec,
	status *workv1alpha2.ResourceBindingStatus, now time.Time) ([]leave, time.Time, error) {
	tolerations := failover.Tolerations(spec.Placement.ClusterTolerations, r.Options.NotReadyTolerationSeconds, r.Options.UnreachableTolerationSeconds)
	var out []leave
	var next time.Time
	counting := map[string]bool{}
	for _, tc := range spec.Clusters {
		c := &clusterv1alpha1.Cluster{}
		if err := r.Client.Get(ctx, types.NamespacedName{Name: tc.Name}, c); err != nil {
			if apierrors.IsNotFound(err) {
				continue // the scheduler moves the binding off a removed cluster
			}
			return nil, time.Time{}, err
		}
		ev, ok := failover.NoExecuteEviction(c.Spec.Taints, tolerations, now)
		if !ok {
			continue
		}
		if now.Before(ev.At) {
			if next.IsZero() || ev.At.Before(next) {
				next = ev.At
			}
			what := "countdown/" + tc.Name + "/" + failover.Describe(ev.Taint) + "/" + ev.At.String()
			counting[what] = true
			r.once(rb, tc.Name, what, corev1.EventTypeNormal, EventReasonTaintToleration,
				"Cluster %s is tainted %s; the workload leaves it at %s unless the taint goes", tc.Name, failover.Describe(ev.Taint), ev.At.UTC().Format(time.RFC3339))
			continue
		}
		l := leave{Leave: failover.Leave{Cluster: tc.Name, Producer: failover.ProducerTaintManager, PurgeMode: policyv1alpha1.PurgeModeGracefully, Now: now}}
		l.why = fmt.Sprintf("taint %s is not tolerated", failover.Describe(ev.Taint))
		if ev.Tolerated {
			l.why = fmt.Sprintf("taint %s was tolerated until %s", failover.Describe(ev.Taint), ev.At.UTC().Format(time.RFC3339))
		}
		if cf := failoverCluster(spec); cf != nil {
			if cf.PurgeMode != "" {
				l.PurgeMode = cf.PurgeMode
			}
			if cf.StatePreservation != nil {
				// The cluster is gone or going: its last reported status is all there is. A
				// failing rule is said, and the workload moves without that state rather
				// than stay on a failed cluster.
				state, err := failover.PreserveState(cf.StatePreservation.Rules, itemStatus(status, tc.Name))
				if err != nil {
					r.event(rb, spec, tc.Name, corev1.EventTypeWarning, EventReasonEvictWorkloadFromClusterFailed,
						"Leaving cluster %s without preserved state: %v", tc.Name, err)
				}
				l.Preserved = state
			}
		}
		out = append(out, l)
	}
	// A countdown that ended, or whose taint went: said again if a taint comes back.
	r.keepTold(rb, "countdown/", func(what string) bool { return counting[what] })
	return out, next, nil
}

// applicationPhase returns the clusters the binding must leave now because the workload has
// been unhealthy there for longer than failover.application tolerates, and when the next
// countdown ends.
func (r *Reconciler) applicationPhase(rb client.Object, spec *workv1alpha2.ResourceBindingSpec, works map[string]*workv1alpha1.Work,
	now time.Time, already []leave) ([]leave, time.Time) {
	app := failoverApplication(spec)
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.rememberLocked(rb)
	// Kept: the clusters where the workload is still unhealthy and has not left.
	was := m.unhealthySince
	m.unhealthySince = nil
	defer r.tidyLocked(rb)
	if app == nil {
		return nil, time.Time{}
	}
	toleration := time.Duration(ptr.Deref(app.DecisionConditions.TolerationSeconds, DefaultApplicationTolerationSeconds)) * time.Second
	keep := func(cluster string, since time.Time) {
		if m.unhealthySince == nil {
			m.unhealthySince = map[string]time.Time{}
		}
		m.unhealthySince[cluster] = since
	}
	var out []leave
	var next time.Time
	for _, tc := range spec.Clusters {
		w := works[tc.Name]
		if !unhealthy(w) || slices.ContainsFunc(already, func(l leave) bool { return l.Cluster == tc.Name }) {
			continue
		}
		since, seen := was[tc.Name]
		if !seen {
			since = now
			r.eventLocked(rb, spec, tc.Name, corev1.EventTypeWarning, EventReasonApplicationUnhealthy,
				"The workload is unhealthy on cluster %s; it moves at %s if it stays so", tc.Name, now.Add(toleration).UTC().Format(time.RFC3339))
		}
		due := since.Add(toleration)
		if now.Before(due) {
			keep(tc.Name, since)
			if next.IsZero() || due.Before(next) {
				next = due
			}
			continue
		}
		l := leave{Leave: failover.Leave{Cluster: tc.Name, Producer: failover.ProducerApplicationFailover, PurgeMode: app.PurgeMode,
			GracePeriodSeconds: app.GracePeriodSeconds, Now: now},
			why: fmt.Sprintf("the workload was unhealthy there for %s", toleration)}
		if app.StatePreservation != nil {
			state, err := failover.PreserveState(app.StatePreservation.Rules, w.Status.ManifestStatuses[0].Status)
			if err != nil {
				// The workload still runs there: it stays until its state can be carried.
				keep(tc.Name, since)
				r.eventLocked(rb, spec, tc.Name, corev1.EventTypeWarning, EventReasonEvictWorkloadFromClusterFailed,
					"Not leaving cluster %s: %v", tc.Name, err)
				continue
			}
			l.Preserved = state
		}
		out = append(out, l)
	}
	return out, next
}

// placement tells where the scheduler stands with the binding: pending while it has not
// looked at the current generation (or this pass evicts, which makes a new one), else done
// when it placed the workload, failed when it could not.
func placement(rb client.Object, status *workv1alpha2.ResourceBindingStatus, want *workv1alpha2.ResourceBindingSpec, evicting bool) failover.Placement {
	c := meta.FindStatusCondition(status.Conditions, wellknown.ConditionScheduled)
	switch {
	case evicting || c == nil || c.ObservedGeneration != rb.GetGeneration() || status.SchedulerObservedGeneration != rb.GetGeneration():
		return failover.PlacementPending
	case c.Status == metav1.ConditionTrue && len(want.Clusters) > 0:
		return failover.PlacementDone
	default:
		return failover.PlacementFailed
	}
}

// recovered tells whether the reason a task's workload left its cluster is gone: for the
// taint manager's tasks, the cluster is there and no NoExecute taint evicts the binding any
// more. Application failover's tasks never recover by themselves.
func (r *Reconciler) recovered(ctx context.Context, t *workv1alpha2.GracefulEvictionTask, spec *workv1alpha2.ResourceBindingSpec) (bool, error) {
	if t.Producer != failover.ProducerTaintManager {
		return false, nil
	}
	c := &clusterv1alpha1.Cluster{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: t.FromCluster}, c); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	tolerations := failover.Tolerations(spec.Placement.ClusterTolerations, r.Options.NotReadyTolerationSeconds, r.Options.UnreachableTolerationSeconds)
	ev, evicts := failover.NoExecuteEviction(c.Spec.Taints, tolerations, r.Clock.Now())
	return c.DeletionTimestamp == nil && (!evicts || r.Clock.Now().Before(ev.At)), nil
}

// unhealthy: the Work is applied at its generation and the member reports the workload
// Unhealthy.
func unhealthy(w *workv1alpha1.Work) bool {
	if w == nil || len(w.Status.ManifestStatuses) == 0 {
		return false
	}
	c := meta.FindStatusCondition(w.Status.Conditions, wellknown.WorkConditionApplied)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == w.Generation &&
		w.Status.ManifestStatuses[0].Health == workv1alpha1.ResourceUnhealthy
}

// healthyOn reports whether the workload runs as the current placement wants on a cluster:
// its Work renders the cluster's share of the replicas, is applied at its generation, the
// member reports it healthy, and (when the status says) with that many replicas ready.
func (r *Reconciler) healthyOn(w *workv1alpha1.Work, tc workv1alpha2.TargetCluster, spec *workv1alpha2.ResourceBindingSpec) bool {
	if w == nil || len(w.Spec.Workload.Manifests) == 0 || len(w.Status.ManifestStatuses) == 0 {
		return false
	}
	c := meta.FindStatusCondition(w.Status.Conditions, wellknown.WorkConditionApplied)
	if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != w.Generation {
		return false
	}
	ms := w.Status.ManifestStatuses[0]
	if ms.Health != workv1alpha1.ResourceHealthy {
		return false
	}
	if spec.Replicas == 0 {
		return true
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(w.Spec.Workload.Manifests[0].Raw); err != nil {
		return false
	}
	if obj.GetLabels()[wellknown.RetainReplicasLabel] != "true" {
		if n, _, err := r.Interpreter.GetReplicas(obj); err != nil || n != tc.Replicas {
			return false // the Work does not render this placement yet
		}
	}
	if ready, ok := readyReplicas(ms.Status); ok && ready < int64(tc.Replicas) {
		return false
	}
	return true
}

// readyReplicas reads status.readyReplicas from a reflected status, when it is there.
func readyReplicas(raw *runtime.RawExtension) (int64, bool) {
	if raw == nil || len(raw.Raw) == 0 {
		return 0, false
	}
	var st struct {
		ReadyReplicas *int64 `json:"readyReplicas"`
	}
	if err := json.Unmarshal(raw.Raw, &st); err != nil || st.ReadyReplicas == nil {
		return 0, false
	}
	return *st.ReadyReplicas, true
}

func itemStatus(status *workv1alpha2.ResourceBindingStatus, cluster string) *runtime.RawExtension {
	for i := range status.AggregatedStatus {
		if status.AggregatedStatus[i].ClusterName == cluster {
			return status.AggregatedStatus[i].Status
		}
	}
	return nil
}

func failoverCluster(spec *workv1alpha2.ResourceBindingSpec) *policyv1alpha1.ClusterFailoverBehavior {
	if spec.Failover == nil {
		return nil
	}
	return spec.Failover.Cluster
}

func failoverApplication(spec *workv1alpha2.ResourceBindingSpec) *policyv1alpha1.ApplicationFailoverBehavior {
	if spec.Failover == nil {
		return nil
	}
	return spec.Failover.Application
}
