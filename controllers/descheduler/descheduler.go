// Package descheduler moves a binding's replicas that its members' schedulers could not place
// (Pods Pending, unschedulable, for longer than a threshold) to clusters with room: Karmada's
// karmada-descheduler, as a controller of the manager.
//
// Its Reconcile reads the binding and the clusters' reports of unschedulable workloads
// (status.resourceSummary.unschedulableWorkloads, collected by the cluster status controller
// on the walk of the member's Pods it already does: no member request of its own), lets
// internal/descheduler decide which clusters give up how many replicas, and hands that to the
// scheduler controller's Move, which places them elsewhere and writes spec.clusters once. A
// move is an event on the binding and its template (Karmada's DescheduleBindingSucceed), a
// move that finds no room elsewhere a Warning (DescheduleBindingFailed), both counted in
// flotilla_descheduler_moves_total.
package descheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	schedulercontroller "github.com/flotilla-io/flotilla/controllers/scheduler"
	"github.com/flotilla-io/flotilla/internal/descheduler"
	"github.com/flotilla-io/flotilla/internal/memo"
	"github.com/flotilla-io/flotilla/internal/shard"
)

// Event reasons (Karmada's).
const (
	// EventReasonDescheduleBindingSucceed: unschedulable replicas moved to other clusters.
	EventReasonDescheduleBindingSucceed = "DescheduleBindingSucceed"
	// EventReasonDescheduleBindingFailed: they should move, but no other cluster has room.
	EventReasonDescheduleBindingFailed = "DescheduleBindingFailed"
)

// recheckWaiting is when a binding with unschedulable replicas that could not move for a
// passing reason (no ready count reported yet, not scheduled for its generation yet, no room
// elsewhere) is looked at again.
const recheckWaiting = 10 * time.Second

// Mover places the replicas taken off clusters elsewhere and writes the binding: the
// scheduler controller's Move.
type Mover interface {
	Move(ctx context.Context, rb client.Object, take map[string]int32) (schedulercontroller.Moved, error)
}

// Reconciler is the descheduler for ResourceBindings (the workloads it moves, Deployments and
// ReplicaSets, are namespaced).
type Reconciler struct {
	// Shards, when set, is this replica's share of a sharded manager (nil: every key).
	Shards *shard.Set

	Client   client.Client
	Recorder events.EventRecorder
	Mover    Mover
	Clock    clock.PassiveClock
	// Threshold is how long replicas stay unschedulable before they move; 0 is
	// descheduler.DefaultThreshold.
	Threshold time.Duration
	// SchedulerName is the scheduler this manager answers to: bindings of another are left
	// alone.
	SchedulerName string

	// moved is, by binding, when its replicas last moved (the cool-down).
	moved memo.Map[types.NamespacedName, time.Time]
	// told is, by binding, the failure last said, so that it is said once.
	told memo.Map[types.NamespacedName, string]
}

// +kubebuilder:rbac:groups=work.karmada.io,resources=resourcebindings,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=work.karmada.io,resources=resourcebindings/status,verbs=get;patch
// +kubebuilder:rbac:groups=cluster.karmada.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile looks at one binding: read, decide, move.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rb := &workv1alpha2.ResourceBinding{}
	if err := r.Client.Get(ctx, req.NamespacedName, rb); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if rb.DeletionTimestamp != nil || !r.mine(rb.Spec.SchedulerName) {
		r.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	in, err := r.desiredInput(ctx, rb)
	if err != nil {
		return ctrl.Result{}, err
	}
	d := descheduler.Plan(in)
	log := ctrl.LoggerFrom(ctx)
	if len(d.Take) == 0 {
		if d.Why != "" {
			log.V(1).Info("Unschedulable replicas stay", "why", d.Why)
		}
		return r.recheck(d), nil
	}
	return r.move(ctx, rb, d.Take)
}

// desiredInput reads what the pure core needs: the members' reports and the ready replicas.
func (r *Reconciler) desiredInput(ctx context.Context, rb *workv1alpha2.ResourceBinding) (descheduler.Input, error) {
	in := descheduler.Input{Spec: &rb.Spec, Unsteady: unsteady(rb), Now: r.Clock.Now(), Threshold: r.threshold(),
		Unschedulable: map[string]descheduler.Unschedulable{}}
	in.Ready, in.RollingOut = readyByCluster(&rb.Status, rb.Spec.Resource.Kind == "Deployment")
	in.LastMove, _ = r.moved.Load(client.ObjectKeyFromObject(rb))
	for _, tc := range rb.Spec.Clusters {
		c := &clusterv1alpha1.Cluster{}
		if err := r.Client.Get(ctx, types.NamespacedName{Name: tc.Name}, c); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return in, err
		}
		if u, ok := Reported(c, rb.Spec.Resource); ok {
			in.Unschedulable[tc.Name] = u
		}
	}
	return in, nil
}

// move hands the decision to the scheduler and tells what happened.
func (r *Reconciler) move(ctx context.Context, rb *workv1alpha2.ResourceBinding, take map[string]int32) (ctrl.Result, error) {
	key := client.ObjectKeyFromObject(rb)
	from := descheduler.Describe(take)
	moved, err := r.Mover.Move(ctx, rb, take)
	switch {
	case errors.Is(err, schedulercontroller.ErrNoRoomElsewhere):
		moves.WithLabelValues("no_room").Inc()
		msg := fmt.Sprintf("Replicas unschedulable for %s on %s stay: %v", r.threshold(), from, err)
		if last, _ := r.told.Swap(key, msg); last != msg {
			r.event(rb, corev1.EventTypeWarning, EventReasonDescheduleBindingFailed, msg)
		}
		return ctrl.Result{RequeueAfter: recheckWaiting}, nil
	case apierrors.IsConflict(err):
		// The binding changed meanwhile: its newer version is looked at.
		return ctrl.Result{RequeueAfter: time.Second}, nil
	case err != nil:
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	r.told.Delete(key)
	now := r.Clock.Now()
	r.moved.Store(key, now)
	moves.WithLabelValues("moved").Inc()
	movedReplicas.Add(float64(descheduler.Total(moved.Take)))
	msg := fmt.Sprintf("Moved %d replicas unschedulable for %s off %s; now on %s", descheduler.Total(moved.Take), r.threshold(),
		descheduler.Describe(moved.Take), describeClusters(moved.Clusters))
	r.event(rb, corev1.EventTypeNormal, EventReasonDescheduleBindingSucceed, msg)
	ctrl.LoggerFrom(ctx).Info("Moved unschedulable replicas", "from", descheduler.Describe(moved.Take), "clusters", describeClusters(moved.Clusters))
	// Looked at again once the new replicas had the threshold to settle.
	return ctrl.Result{RequeueAfter: r.threshold()}, nil
}

// recheck is when a binding that moved nothing is looked at again: when waiting replicas
// become due, or shortly when they wait for a passing reason.
func (r *Reconciler) recheck(d descheduler.Decision) ctrl.Result {
	switch {
	case !d.RecheckAt.IsZero():
		return ctrl.Result{RequeueAfter: max(d.RecheckAt.Sub(r.Clock.Now()), 0) + 100*time.Millisecond}
	case d.Ineligible:
		return ctrl.Result{} // until the binding's generation or the reports change
	case d.Why != "":
		return ctrl.Result{RequeueAfter: recheckWaiting}
	}
	return ctrl.Result{}
}

func (r *Reconciler) forget(key types.NamespacedName) {
	r.moved.Delete(key)
	r.told.Delete(key)
}

func (r *Reconciler) threshold() time.Duration {
	if r.Threshold > 0 {
		return r.Threshold
	}
	return descheduler.DefaultThreshold
}

func (r *Reconciler) mine(name string) bool {
	own := r.SchedulerName
	if own == "" {
		own = wellknown.DefaultSchedulerName
	}
	return name == "" || name == own
}

// unsteady says why a binding is not in a steady state: the scheduler has not placed its
// current generation, it is suspended, or an eviction is under way.
func unsteady(rb *workv1alpha2.ResourceBinding) string {
	spec, status := &rb.Spec, &rb.Status
	c := meta.FindStatusCondition(status.Conditions, wellknown.ConditionScheduled)
	switch {
	case spec.Suspension != nil && spec.Suspension.Scheduling != nil && *spec.Suspension.Scheduling:
		return "its scheduling is suspended"
	case len(spec.GracefulEvictionTasks) > 0:
		return "it is being evicted from a cluster"
	case c == nil || c.Status != metav1.ConditionTrue || status.SchedulerObservedGeneration != rb.Generation:
		return "the scheduler has not placed its current generation"
	}
	return ""
}

// Reported returns what a cluster reports of the workload's unschedulable replicas.
func Reported(c *clusterv1alpha1.Cluster, res workv1alpha2.ObjectReference) (descheduler.Unschedulable, bool) {
	rs := c.Status.ResourceSummary
	if rs == nil {
		return descheduler.Unschedulable{}, false
	}
	group := groupOf(res.APIVersion)
	for _, w := range rs.UnschedulableWorkloads {
		if w.Kind == res.Kind && w.Namespace == res.Namespace && w.Name == res.Name && groupOf(w.APIVersion) == group {
			return descheduler.Unschedulable{Replicas: w.Replicas, Since: w.Since.Time}, true
		}
	}
	return descheduler.Unschedulable{}, false
}

func groupOf(apiVersion string) string {
	if g, _, ok := strings.Cut(apiVersion, "/"); ok {
		return g
	}
	return ""
}

// readyByCluster reads status.readyReplicas of each cluster's reflected status, and whether
// a rollout is under way there (a Deployment's status.updatedReplicas below status.replicas). A cluster
// whose member reported a status without readyReplicas has none ready (a Deployment leaves
// it out at 0); a cluster with no reported status is missing.
func readyByCluster(status *workv1alpha2.ResourceBindingStatus, deployment bool) (ready map[string]int32, rolling map[string]bool) {
	ready, rolling = map[string]int32{}, map[string]bool{}
	for _, item := range status.AggregatedStatus {
		if item.Status == nil || len(item.Status.Raw) == 0 {
			continue
		}
		var st struct {
			Replicas        int32  `json:"replicas"`
			UpdatedReplicas *int32 `json:"updatedReplicas"`
			ReadyReplicas   int32  `json:"readyReplicas"`
		}
		if err := json.Unmarshal(item.Status.Raw, &st); err != nil {
			continue
		}
		ready[item.ClusterName] = st.ReadyReplicas
		// A Deployment's status leaves updatedReplicas out at 0 (a ReplicaSet has none).
		if updated := st.UpdatedReplicas; updated != nil && *updated < st.Replicas || updated == nil && deployment && st.Replicas > 0 {
			rolling[item.ClusterName] = true
		}
	}
	return ready, rolling
}

// event records an event on the binding and on its template.
func (r *Reconciler) event(rb *workv1alpha2.ResourceBinding, typ, reason, msg string) {
	r.Recorder.Eventf(rb, nil, typ, reason, "Deschedule", "%s", msg)
	res := rb.Spec.Resource
	gv, err := schema.ParseGroupVersion(res.APIVersion)
	if err != nil || res.UID == "" {
		return
	}
	tmpl := &metav1.PartialObjectMetadata{}
	tmpl.SetGroupVersionKind(gv.WithKind(res.Kind))
	tmpl.SetNamespace(res.Namespace)
	tmpl.SetName(res.Name)
	tmpl.SetUID(res.UID)
	r.Recorder.Eventf(tmpl, rb, typ, reason, "Deschedule", "%s", msg)
}

func describeClusters(tcs []workv1alpha2.TargetCluster) string {
	parts := make([]string, 0, len(tcs))
	for _, tc := range tcs {
		parts = append(parts, fmt.Sprintf("%s (%d)", tc.Name, tc.Replicas))
	}
	return strings.Join(parts, ", ")
}
