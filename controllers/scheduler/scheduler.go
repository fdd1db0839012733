// Package scheduler runs the scheduling cycle of internal/scheduler for bindings: it decides
// whether a binding needs (re)scheduling, writes spec.clusters and the applied-placement
// annotation in one patch, and the Scheduled condition, lastScheduledTime and
// schedulerObservedGeneration in one status patch.
//
// Bindings that name another scheduler are left alone, so a custom scheduler can run beside
// this one; spec.suspension.scheduling pauses it.
package scheduler

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/bindings"
	"github.com/flotilla-io/flotilla/internal/memo"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	"github.com/flotilla-io/flotilla/internal/scheduler/estimate"
	"github.com/flotilla-io/flotilla/internal/scheduler/ledger"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins/federatedquota"
	"github.com/flotilla-io/flotilla/internal/shard"
)

// FieldOwner is the field manager of the scheduler's status fields.
const FieldOwner = "flotilla-scheduler"

// Reconciler schedules one kind of binding.
type Reconciler struct {
	// Shards, when set, is this replica's share of a sharded manager: only the keys of its
	// shards are reconciled (nil: every key).
	Shards *shard.Set

	Client    client.Client
	Recorder  events.EventRecorder
	Scheduler *scheduler.Scheduler
	// SchedulerName is the name this scheduler answers to.
	SchedulerName string
	// NewBinding returns an empty ResourceBinding or ClusterResourceBinding.
	NewBinding func() client.Object
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// FirstStatusGrace is how long a first placement made at creation waits for the
	// binding-status controller to report it; 0 is DefaultFirstStatusGrace.
	FirstStatusGrace time.Duration
	// Ledger holds the placements the members have not reported yet, so that the estimates
	// of the next bindings do not count the same room; shared by the reconcilers of both
	// kinds. Nil: nothing is held.
	Ledger *ledger.Ledger

	// failures counts, by binding, the attempts that found no placement since the last that
	// did: the backoff of unschedulable bindings (retryDelay).
	failures memo.Map[types.NamespacedName, int]
	// observed is, by binding, the Scheduled status last written (observedMemo): the event
	// of the scheduler's own spec write brings the binding back before the cache shows the
	// status write that followed it, and that status is not written twice.
	observed memo.Map[types.NamespacedName, [sha256.Size]byte]
}

// forget drops what is kept of a binding that is gone: its backoff and its status memo.
func (r *Reconciler) forget(key types.NamespacedName) {
	r.failures.Delete(key)
	r.observed.Delete(key)
}

// observedMemo identifies a Scheduled status written for one generation of a binding: a
// digest, kept per binding until the binding is gone.
func observedMemo(rb client.Object, cond metav1.Condition) [sha256.Size]byte {
	return sha256.Sum256(fmt.Appendf(nil, "%s/%d/%s/%s/%s", rb.GetUID(), rb.GetGeneration(), cond.Status, cond.Reason, cond.Message))
}

const (
	// retryBaseDelay and retryMaxDelay bound the backoff of unschedulable bindings.
	retryBaseDelay = 5 * time.Second
	retryMaxDelay  = 5 * time.Minute
)

// retryDelay is the retry delay of an unschedulable binding after failures attempts that
// found no placement before this one: retryBaseDelay, doubled per attempt, at most
// retryMaxDelay.
func retryDelay(failures int) time.Duration {
	d := retryBaseDelay
	for range failures {
		if d *= 2; d >= retryMaxDelay {
			return retryMaxDelay
		}
	}
	return d
}

// failedAttempt counts an attempt that found no placement and returns when to try again.
// The attempts of one binding are never concurrent (its key is reconciled by one worker at a
// time), so the count is not raced.
func (r *Reconciler) failedAttempt(key types.NamespacedName) time.Duration {
	n, _ := r.failures.Load(key)
	r.failures.Store(key, n+1)
	return retryDelay(n)
}

// +kubebuilder:rbac:groups=work.karmada.io,resources=resourcebindings;clusterresourcebindings,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=work.karmada.io,resources=resourcebindings/status;clusterresourcebindings/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=cluster.karmada.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy.karmada.io,resources=federatedresourcequotas,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// conflictRetry is when a binding whose write met a newer version is looked at again. The
// newer version's own event normally brings it back sooner; this is the safety net.
const conflictRetry = time.Second

// Reconcile schedules one binding when it needs it.
//
// A write that finds the binding changed since the cache's copy (the optimistic lock of a
// placement or of a failure's status) is not an error: the change's event brings the binding
// back, and it is scheduled from the newer version. It is logged at debug level only, so that
// a burst of changes does not fill the log with errors nobody has to act on.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	res, err := r.reconcile(ctx, req)
	if apierrors.IsConflict(err) {
		ctrl.LoggerFrom(ctx).V(1).Info("Binding changed while being scheduled; scheduling its newer version", "error", err.Error())
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	return res, err
}

func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	start := time.Now()
	rb := r.NewBinding()
	if err := r.Client.Get(ctx, req.NamespacedName, rb); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			if r.Ledger != nil {
				r.Ledger.Forget(ledgerKey(r.NewBinding(), req.NamespacedName))
			}
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	spec, status := bindings.Spec(rb), bindings.Status(rb)
	// A binding scheduled (or failed) before: a success now is news (a new placement or a
	// recovery) and gets an event; a first placement is told by the binding's FullyApplied
	// event (one success event per propagation, not one per stage).
	scheduledBefore := meta.FindStatusCondition(status.Conditions, wellknown.ConditionScheduled) != nil
	if rb.GetDeletionTimestamp() != nil || !r.mine(spec.SchedulerName) {
		// Going, or another scheduler's: nothing here is retried any more.
		r.failures.Delete(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	if spec.Placement == nil {
		// A dependency's binding with no policy of its own (propagateDeps): it goes where
		// the workloads that need it go (spec.requiredBy), not where a scheduler puts it.
		r.failures.Delete(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	clusters, err := r.clusters(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	peers, err := r.peers(ctx, rb)
	if err != nil {
		return ctrl.Result{}, err
	}
	quotas, err := r.quotas(ctx, rb)
	if err != nil {
		return ctrl.Result{}, err
	}
	in := scheduler.Input{Spec: spec, Status: status, Annotations: rb.GetAnnotations(), Peers: peers, Quotas: quotas}
	need, why := scheduler.NeedsSchedule(in, clusters)
	// Reading the held placements, the cycle and holding the placement it makes are one step
	// (lockLedger): two workers must not both count the same room.
	unlock := func() {}
	defer func() { unlock() }()
	cycle := func(in scheduler.Input) (scheduler.Result, error) {
		unlock = sync.OnceFunc(r.lockLedger())
		in.Held = r.held(clusters)
		return r.Scheduler.Schedule(in, clusters)
	}
	var result scheduler.Result
	if !need {
		r.failures.Delete(req.NamespacedName)
		if !Duplicated(spec) || len(spec.Clusters) == 0 || suspended(spec) {
			return r.observe(ctx, rb)
		}
		// A duplicated workload goes to every cluster that fits: a cluster that joined,
		// recovered or now matches gets it too. Clusters already chosen are kept by the
		// plugins (NoSchedule taints do not evict), so this does not flap.
		result, err = cycle(in)
		if err != nil || sameClusters(result.Clusters, spec.Clusters) {
			unlock()
			return r.observe(ctx, rb)
		}
		why = "the clusters that fit a duplicated placement changed"
	} else {
		// A triggered reschedule (a WorkloadRebalancer) starts from scratch; any other keeps
		// what it can of the current placement.
		in.Fresh = scheduler.RescheduleTriggered(in)
		result, err = cycle(in)
	}
	if err != nil {
		unlock()
	}
	log := ctrl.LoggerFrom(ctx).WithValues(bindings.Kind(rb), req.String(), "reason", why)
	observeAttempt(start, err)
	var unsched *scheduler.UnschedulableError
	switch {
	case errors.As(err, &unsched):
		// Retried when a cluster's capacity, taints or labels change (see SetupWithManager),
		// and after a backoff that doubles per failed attempt, up to retryMaxDelay.
		retry := r.failedAttempt(req.NamespacedName)
		log.V(1).Info("Binding is unschedulable", "message", unsched.Error(), "retryAfter", retry)
		return ctrl.Result{RequeueAfter: retry}, r.failed(ctx, rb, wellknown.ReasonBindingUnschedulable, unsched.Error())
	case errors.Is(err, scheduler.ErrInvalidPlacement):
		return ctrl.Result{}, reconcile.TerminalError(r.failed(ctx, rb, wellknown.ReasonSchedulerError, err.Error()))
	case err != nil:
		return ctrl.Result{}, err
	}

	r.failures.Delete(req.NamespacedName)
	placement, err := scheduler.AppliedPlacement(spec.Placement)
	if err != nil {
		unlock()
		return ctrl.Result{}, err
	}
	before := rb.DeepCopyObject().(client.Object)
	r.hold(rb, spec.Clusters, result.Clusters, clusters)
	unlock()
	place(rb, result.Clusters, placement)
	// The optimistic lock: the failover controller writes spec.clusters too (it takes evicted
	// clusters out), and a placement computed from an older view must not put one back.
	if err := r.Client.Patch(ctx, rb, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		if r.Ledger != nil {
			r.Ledger.Forget(ledgerKey(rb, req.NamespacedName)) // not placed after all
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	now := metav1.NewTime(r.now())
	cond := bindings.Condition(status.Conditions, scheduler.ScheduledCondition(result.Clusters, rb.GetGeneration()))
	msg := cond.Message
	if err := r.applyStatus(ctx, rb, schedulerStatus{cond: cond, lastScheduled: &now,
		observedGeneration: rb.GetGeneration(), affinityName: result.AffinityName}, false); err != nil {
		return ctrl.Result{}, err
	}
	r.observed.Store(req.NamespacedName, observedMemo(rb, cond))
	if scheduledBefore {
		r.event(rb, corev1.EventTypeNormal, wellknown.EventReasonScheduleBindingSucceed, msg)
	}
	log.V(1).Info("Scheduled binding", "clusters", describe(result.Clusters))
	return ctrl.Result{}, nil
}

// Duplicated reports whether every chosen cluster gets the whole template: a nil or
// Duplicated replicaScheduling, or a template without replicas. A multi-component workload
// (spec.components) is Duplicated only by its placement: Divided puts its whole set on one
// cluster, whatever spec.replicas says.
func Duplicated(spec *workv1alpha2.ResourceBindingSpec) bool {
	p := spec.Placement
	if p == nil || p.ReplicaScheduling == nil || p.ReplicaScheduling.ReplicaSchedulingType == policyv1alpha1.ReplicaSchedulingTypeDuplicated {
		return true
	}
	return spec.Replicas == 0 && !scheduler.HasComponents(spec)
}

func suspended(spec *workv1alpha2.ResourceBindingSpec) bool {
	return spec.Suspension != nil && spec.Suspension.Scheduling != nil && *spec.Suspension.Scheduling
}

func sameClusters(a, b []workv1alpha2.TargetCluster) bool {
	if len(a) != len(b) {
		return false
	}
	names := make(map[string]workv1alpha2.TargetCluster, len(a))
	for _, tc := range a {
		names[tc.Name] = tc
	}
	for _, tc := range b {
		if was, ok := names[tc.Name]; !ok || was.Replicas != tc.Replicas || !slices.Equal(was.Components, tc.Components) {
			return false
		}
	}
	return true
}

func (r *Reconciler) mine(name string) bool {
	own := r.SchedulerName
	if own == "" {
		own = wellknown.DefaultSchedulerName
	}
	return name == "" || name == own
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Reconciler) clusters(ctx context.Context) ([]*clusterv1alpha1.Cluster, error) {
	list := &clusterv1alpha1.ClusterList{}
	// The cycle only reads the Clusters; skip copying every Cluster out of the cache for
	// every binding.
	if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := make([]*clusterv1alpha1.Cluster, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// peers returns where the other workloads of the binding's workload-affinity groups are:
// the ResourceBindings of its namespace in the same groups (IndexWorkloadAffinityGroup), less
// itself and those being deleted. For the affinity group only the peers already placed count,
// so the group's first workload goes anywhere.
func (r *Reconciler) peers(ctx context.Context, rb client.Object) (scheduler.WorkloadPeers, error) {
	var out scheduler.WorkloadPeers
	groups := bindings.Spec(rb).WorkloadAffinityGroups
	if groups == nil || rb.GetNamespace() == "" {
		return out, nil
	}
	list := func(key string) ([]workv1alpha2.ResourceBinding, error) {
		l := &workv1alpha2.ResourceBindingList{}
		err := r.Client.List(ctx, l, client.InNamespace(rb.GetNamespace()),
			client.MatchingFields{IndexWorkloadAffinityGroup: key}, client.UnsafeDisableDeepCopy)
		if err != nil {
			return nil, fmt.Errorf("listing the workload-affinity peers of %s/%s: %w", rb.GetNamespace(), rb.GetName(), err)
		}
		return slices.DeleteFunc(l.Items, func(p workv1alpha2.ResourceBinding) bool {
			return p.Name == rb.GetName() || p.DeletionTimestamp != nil || len(p.Spec.Clusters) == 0
		}), nil
	}
	if g := groups.AffinityGroup; g != "" {
		peers, err := list(affinityKey(g))
		if err != nil {
			return out, err
		}
		for _, p := range peers {
			names := make([]string, len(p.Spec.Clusters))
			for i, tc := range p.Spec.Clusters {
				names[i] = tc.Name
			}
			out.Affinity = append(out.Affinity, names)
		}
	}
	if g := groups.AntiAffinityGroup; g != "" {
		peers, err := list(antiAffinityKey(g))
		if err != nil {
			return out, err
		}
		for _, p := range peers {
			for _, tc := range p.Spec.Clusters {
				out.AntiAffinity = append(out.AntiAffinity, tc.Name)
			}
		}
	}
	return out, nil
}

// quotas returns the FederatedResourceQuotas of a ResourceBinding's namespace, each with what
// the namespace's other scheduled bindings request (federatedquota.Usage), from the cache.
// The namespace's bindings are read only when it has a quota.
func (r *Reconciler) quotas(ctx context.Context, rb client.Object) ([]scheduler.NamespaceQuota, error) {
	if rb.GetNamespace() == "" {
		return nil, nil
	}
	frqs := &policyv1alpha1.FederatedResourceQuotaList{}
	if err := r.Client.List(ctx, frqs, client.InNamespace(rb.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the FederatedResourceQuotas of namespace %s: %w", rb.GetNamespace(), err)
	}
	if len(frqs.Items) == 0 {
		return nil, nil
	}
	others := &workv1alpha2.ResourceBindingList{}
	if err := r.Client.List(ctx, others, client.InNamespace(rb.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the bindings of namespace %s: %w", rb.GetNamespace(), err)
	}
	var requested corev1.ResourceList
	for i := range others.Items {
		o := &others.Items[i]
		if o.Name == rb.GetName() || o.DeletionTimestamp != nil {
			continue
		}
		requested = federatedquota.Add(requested, federatedquota.Usage(&o.Spec))
	}
	out := make([]scheduler.NamespaceQuota, 0, len(frqs.Items))
	for _, q := range frqs.Items {
		if q.DeletionTimestamp != nil {
			continue
		}
		out = append(out, scheduler.NamespaceQuota{Name: q.Name, Overall: q.Spec.Overall, Requested: requested})
	}
	return out, nil
}

// DefaultFirstStatusGrace is how long the scheduler leaves the status of a binding placed when it
// was created (scheduler.FirstPlacementUnreported) to the binding-status controller's first
// write, which carries it, before it writes it itself: longer than a bulk creation takes to
// apply everywhere on the bench (1,000 templates), so that the scheduler's own write is for a
// binding whose Works stay in flight (a member that does not answer).
const DefaultFirstStatusGrace = time.Minute

// observe records that the scheduler saw the binding's generation, without rescheduling. A
// first placement made at creation is left to the binding-status controller for
// FirstStatusGrace.
func (r *Reconciler) observe(ctx context.Context, rb client.Object) (ctrl.Result, error) {
	spec, status := bindings.Spec(rb), bindings.Status(rb)
	if len(spec.Clusters) == 0 {
		return ctrl.Result{}, nil
	}
	st := currentStatus(status)
	cond := scheduler.ScheduledCondition(spec.Clusters, rb.GetGeneration())
	if r.writtenAlready(rb, cond) {
		return ctrl.Result{}, nil
	}
	first := scheduler.FirstPlacementUnreported(rb.GetGeneration(), rb.GetAnnotations(), spec, status)
	if _, wrote := r.observed.Load(client.ObjectKeyFromObject(rb)); first && !wrote {
		grace := r.FirstStatusGrace
		if grace <= 0 {
			grace = DefaultFirstStatusGrace
		}
		if wait := grace - r.now().Sub(rb.GetCreationTimestamp().Time); wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, nil
		}
	}
	// Also repairs a status write that failed after spec.clusters was written.
	st.cond = bindings.Condition(status.Conditions, cond)
	st.observedGeneration = rb.GetGeneration()
	if st.lastScheduled == nil {
		now := metav1.NewTime(r.now())
		if first {
			// Placed just before it was created.
			now = rb.GetCreationTimestamp()
		}
		st.lastScheduled = &now
	}
	if err := r.applyStatus(ctx, rb, st, true); err != nil {
		return ctrl.Result{}, err
	}
	r.observed.Store(client.ObjectKeyFromObject(rb), observedMemo(rb, cond))
	return ctrl.Result{}, nil
}

// writtenAlready reports whether the binding's status already says cond for its generation.
// Once this process has written the binding's Scheduled condition, what it last wrote (the
// memo) is what the status says: the cached binding may not show that write yet, and the
// event of a status write does not bring the binding back, so a stale copy that still shows
// cond (True before a failure, False before a recovery) must not be taken for it. Before the
// first write, the cached status is all there is to go by.
func (r *Reconciler) writtenAlready(rb client.Object, cond metav1.Condition) bool {
	if last, ok := r.observed.Load(client.ObjectKeyFromObject(rb)); ok {
		return last == observedMemo(rb, cond)
	}
	status := bindings.Status(rb)
	return status.SchedulerObservedGeneration == rb.GetGeneration() && bindings.ConditionCurrent(status.Conditions, cond)
}

// schedulerStatus is every status field the scheduler owns. Server-side apply removes a
// field its manager applied before and leaves out now, so each write carries all of them.
type schedulerStatus struct {
	cond               metav1.Condition
	lastScheduled      *metav1.Time
	observedGeneration int64
	affinityName       string
}

func currentStatus(status *workv1alpha2.ResourceBindingStatus) schedulerStatus {
	st := schedulerStatus{lastScheduled: status.LastScheduledTime, observedGeneration: status.SchedulerObservedGeneration,
		affinityName: status.SchedulerObservedAffinityName}
	if c := meta.FindStatusCondition(status.Conditions, wellknown.ConditionScheduled); c != nil {
		st.cond = *c
	}
	return st
}

// applyStatus writes the scheduler's status fields. With ifCurrent, rb's resourceVersion is a
// precondition: fields kept from a stale cached binding then conflict and are retried instead
// of putting old values back.
func (r *Reconciler) applyStatus(ctx context.Context, rb client.Object, st schedulerStatus, ifCurrent bool) error {
	fields := map[string]any{"schedulerObservedGeneration": st.observedGeneration}
	if st.cond.Type != "" {
		fields["conditions"] = []metav1.Condition{st.cond}
	}
	if st.lastScheduled != nil {
		fields["lastScheduledTime"] = st.lastScheduled
	}
	if st.affinityName != "" {
		fields["schedulerObservingAffinityName"] = st.affinityName
	}
	if ifCurrent {
		return bindings.ApplyStatusIfCurrent(ctx, r.Client, rb, FieldOwner, fields)
	}
	return bindings.ApplyStatus(ctx, r.Client, rb, FieldOwner, fields)
}

// failed records a scheduling failure. The binding keeps its previous clusters: a binding
// that cannot be placed is never half placed.
func (r *Reconciler) failed(ctx context.Context, rb client.Object, reason, msg string) error {
	status := bindings.Status(rb)
	cond := metav1.Condition{Type: wellknown.ConditionScheduled, Status: metav1.ConditionFalse,
		Reason: reason, Message: msg, ObservedGeneration: rb.GetGeneration()}
	if r.writtenAlready(rb, cond) {
		return nil
	}
	unschedulable.Inc()
	r.event(rb, corev1.EventTypeWarning, wellknown.EventReasonScheduleBindingFailed, msg)
	st := currentStatus(status)
	st.cond = bindings.Condition(status.Conditions, cond)
	st.observedGeneration = rb.GetGeneration()
	if err := r.applyStatus(ctx, rb, st, true); err != nil {
		return err
	}
	// The memo is the Scheduled condition last written, whichever it was: a placement that
	// becomes valid again at the same generation (its cluster joined again) must have its
	// True condition written back, not taken for already written.
	r.observed.Store(client.ObjectKeyFromObject(rb), observedMemo(rb, cond))
	return nil
}

// event records an event on the binding and on its template.
func (r *Reconciler) event(rb client.Object, typ, reason, msg string) {
	r.Recorder.Eventf(rb, nil, typ, reason, "Schedule", "%s", msg)
	res := bindings.Spec(rb).Resource
	tmpl := &metav1.PartialObjectMetadata{}
	gv, err := schema.ParseGroupVersion(res.APIVersion)
	if err != nil || res.UID == "" {
		return
	}
	tmpl.SetGroupVersionKind(gv.WithKind(res.Kind))
	tmpl.SetNamespace(res.Namespace)
	tmpl.SetName(res.Name)
	tmpl.SetUID(res.UID)
	r.Recorder.Eventf(tmpl, rb, typ, reason, "Schedule", "%s", msg)
}

// describe renders clusters as "member1 (1), member2 (1)".
func describe(tcs []workv1alpha2.TargetCluster) string { return scheduler.DescribeClusters(tcs) }

// PlaceNew gives a binding that is about to be created its first placement, so that it is
// created scheduled: one write for the detector's stage and the scheduler's placement, and
// one stage less before its Works are rendered. It writes nothing. The scheduler's reconcile
// of the new binding then finds nothing to schedule, and leaves Scheduled to the
// binding-status controller's first write (see observe and DefaultFirstStatusGrace).
//
// It places only what this scheduler would place at once: a binding of this scheduler, not
// suspended, with one cluster affinity (a placement with clusterAffinities groups records the
// group chosen in the status, which is the reconcile's) and no workload-affinity groups (the
// reconcile looks for the peers). Anything it does not place, or
// cannot (unschedulable, invalid), is left to the scheduler's reconcile, which retries and
// reports it as before. It reports whether it placed rb.
func (r *Reconciler) PlaceNew(ctx context.Context, rb client.Object) (bool, error) {
	spec := bindings.Spec(rb)
	if spec.Placement == nil || len(spec.Clusters) > 0 || len(spec.Placement.ClusterAffinities) > 0 ||
		spec.WorkloadAffinityGroups != nil || !r.mine(spec.SchedulerName) || suspended(spec) {
		return false, nil
	}
	start := time.Now()
	clusters, err := r.clusters(ctx)
	if err != nil {
		return false, err
	}
	// A namespace's FederatedResourceQuotas bound its first placements too.
	quotas, err := r.quotas(ctx, rb)
	if err != nil {
		return false, err
	}
	unlock := r.lockLedger()
	defer unlock()
	result, err := r.Scheduler.Schedule(scheduler.Input{Spec: spec, Status: &workv1alpha2.ResourceBindingStatus{},
		Annotations: rb.GetAnnotations(), Quotas: quotas, Held: r.held(clusters)}, clusters)
	if err != nil || len(result.Clusters) == 0 {
		// The reconcile schedules it, and reports why it cannot.
		return false, nil
	}
	placement, err := scheduler.AppliedPlacement(spec.Placement)
	if err != nil {
		return false, nil
	}
	observeAttempt(start, nil)
	place(rb, result.Clusters, placement)
	// Held from now: the binding is created with its placement by the caller.
	r.hold(rb, nil, result.Clusters, clusters)
	return true, nil
}

// lockLedger serializes the cycles that read the ledger and add to it; it returns the unlock.
func (r *Reconciler) lockLedger() func() {
	if r.Ledger == nil {
		return func() {}
	}
	r.Ledger.Lock()
	return r.Ledger.Unlock
}

// held returns the placements the members have not reported yet, by cluster.
func (r *Reconciler) held(clusters []*clusterv1alpha1.Cluster) map[string][]estimate.Held {
	if r.Ledger == nil {
		return nil
	}
	return r.Ledger.Held(r.now(), reportedPods(clusters))
}

// hold records the replicas a new placement adds per cluster, until the members report them.
// The binding's holds on a cluster it now has fewer replicas on are dropped. Clusters that
// report no capacity are not estimated, so nothing is held on them.
func (r *Reconciler) hold(rb client.Object, previous, placed []workv1alpha2.TargetCluster, clusters []*clusterv1alpha1.Cluster) {
	if r.Ledger == nil {
		return
	}
	key := ledgerKey(rb, client.ObjectKeyFromObject(rb))
	was := make(map[string]int32, len(previous))
	for _, tc := range previous {
		was[tc.Name] += tc.Replicas
	}
	pods := reportedPods(clusters)
	request := scheduler.ReplicaRequest(bindings.Spec(rb))
	now := r.now()
	for _, tc := range placed {
		count, reports := pods[tc.Name]
		if !reports {
			continue
		}
		switch add := tc.Replicas - was[tc.Name]; {
		case add > 0:
			r.Ledger.Hold(now, key, tc.Name, add, request, count)
		case add < 0:
			r.Ledger.Release(key, tc.Name)
		}
	}
	for name := range was {
		if !slices.ContainsFunc(placed, func(tc workv1alpha2.TargetCluster) bool { return tc.Name == name }) {
			r.Ledger.Release(key, name)
		}
	}
}

// ledgerKey names a binding in the ledger: its kind, namespace and name.
func ledgerKey(rb client.Object, key types.NamespacedName) string {
	return bindings.Kind(rb) + "/" + key.String()
}

// reportedPods returns, for each cluster that reports its capacity, how many pods it counts
// (allocated and allocating), or ledger.Unreported when it counts none.
func reportedPods(clusters []*clusterv1alpha1.Cluster) map[string]int64 {
	out := make(map[string]int64, len(clusters))
	for _, c := range clusters {
		rs := c.Status.ResourceSummary
		if rs == nil {
			continue
		}
		pods := ledger.Unreported
		if _, ok := rs.Allocatable[corev1.ResourcePods]; ok {
			allocated, allocating := rs.Allocated[corev1.ResourcePods], rs.Allocating[corev1.ResourcePods]
			pods = allocated.Value() + allocating.Value()
		}
		out[c.Name] = pods
	}
	return out
}

// place sets a binding's clusters and the applied-placement annotation they were chosen
// for (placement, the JSON of spec.placement): together, so that the next cycle knows what
// placement the clusters answer.
func place(rb client.Object, clusters []workv1alpha2.TargetCluster, placement string) {
	bindings.Spec(rb).Clusters = clusters
	ann := rb.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[wellknown.AppliedPlacementAnnotation] = placement
	rb.SetAnnotations(ann)
}
