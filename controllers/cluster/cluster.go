// Package cluster is the Cluster reconciler of Push members.
//
// For every Cluster it keeps the execution namespace karmada-es-<cluster> (where the binding
// controller writes the cluster's Works), connects to the member through the member
// connection manager with the credentials in the Secret spec.secretRef names, probes the
// member's /readyz every ProbeInterval and keeps the Ready condition and the system taints in
// line with the result, smoothed over the manager's FailureThreshold. Every StatusInterval,
// and at once when the member (re)connects, it collects the member's version, APIs, nodes and
// resource summary, listing Nodes and Pods page by page.
//
// Deleting a Cluster deletes its Works (the execution controller removes what they put in the
// member, or releases them when the member is unreachable), then the execution namespace, then
// the connection.
//
// Pull members are reported by their agent: for them this controller only keeps the execution
// namespace and its finalizer.
package cluster

import (
	"context"
	"errors"
	"flag"
	"fmt"
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
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clusterstatus"
	"github.com/flotilla-io/flotilla/internal/member"
)

const (
	// ControllerName names the controller, its logger and its events.
	ControllerName = "cluster"
	// FieldOwner is the field manager of the Cluster status the controller applies.
	FieldOwner = "flotilla-cluster"

	// DefaultProbeInterval is how often a member is probed. With the member manager's
	// default FailureThreshold of 3, an apiserver that stops answering is reported within
	// about three intervals.
	DefaultProbeInterval = 5 * time.Second
	// DefaultStatusInterval is how often a healthy member's version, APIs, nodes and
	// resource summary are collected.
	DefaultStatusInterval = 30 * time.Second
	// DefaultWorkers is how many Clusters are reconciled at once. A member that drops
	// packets holds a worker for the member manager's ProbeTimeout; enough workers keep the
	// other members probed on time.
	DefaultWorkers = 8

	// WorkDeletionPollInterval is how often a deleted Cluster checks whether its Works are
	// gone.
	WorkDeletionPollInterval = 2 * time.Second
	// statusCollectionTimeout bounds one collection of a member's status.
	statusCollectionTimeout = 2 * time.Minute
)

// Options tune the controller. Zero fields take the defaults above.
type Options struct {
	// ProbeInterval is how often each member's /readyz is probed.
	ProbeInterval time.Duration
	// StatusInterval is how often a member's heavy status (version, APIs, node and resource
	// summaries) is collected; it is also collected when the member (re)connects or the
	// Cluster's spec changes.
	StatusInterval time.Duration
	// Workers is how many Clusters are reconciled at once.
	Workers int
	// ConnectEveryReplica connects every replica to the Push members, not the leader alone:
	// a sharded manager's replicas each apply the Works of their shards.
	ConnectEveryReplica bool
	// NoExecuteTaints adds NoExecute taints next to the NoSchedule ones while a member is
	// not ready or unreachable, so that workloads leave it once their tolerations run out
	// (controllers/failover). Off by default, as Karmada's --enable-no-execute-taint-eviction.
	NoExecuteTaints bool
}

// BindFlags registers the options as command-line flags. How many failed probes make a
// member not ready is the member connection manager's FailureThreshold.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.DurationVar(&o.ProbeInterval, "cluster-probe-interval", DefaultProbeInterval,
		"How often each member cluster's /readyz is probed.")
	fs.DurationVar(&o.StatusInterval, "cluster-status-interval", DefaultStatusInterval,
		"How often a member cluster's version, APIs, nodes and resource summary are collected (also at once when it connects).")
	fs.IntVar(&o.Workers, "cluster-workers", DefaultWorkers, "How many Clusters are reconciled at once.")
}

func (o Options) withDefaults() Options {
	if o.ProbeInterval <= 0 {
		o.ProbeInterval = DefaultProbeInterval
	}
	if o.StatusInterval <= 0 {
		o.StatusInterval = DefaultStatusInterval
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	return o
}

// Reconciler reconciles Clusters. Set Members; SetupWithManager fills the other
// dependencies it finds unset from the manager.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the host.
	Client client.Client
	// APIReader reads Secrets from the host apiserver: the cache holds only their metadata.
	APIReader client.Reader
	// Members holds one connection per member cluster.
	Members *member.Manager
	// Recorder records events on Clusters.
	Recorder events.EventRecorder
	// Clock tells the time of probes, taints and status collection.
	Clock clock.PassiveClock
	// HostID identifies the host; it is recorded on Pull Clusters for their agents.
	HostID string

	opts Options
	// collections wakes a Cluster whose status collection finished.
	collections chan event.GenericEvent
	// members holds what the controller remembers of each member between reconciles.
	members sync.Map // cluster name → *memberState
}

// memberState is what the controller remembers of a member between reconciles. Reconciles
// of one Cluster never run at once; mu guards what the status collector, which runs in a
// goroutine of its own, shares with them.
type memberState struct {
	// secret is the credentials Secret the connection was built from.
	secret *corev1.Secret
	// healthy is the health seen by the previous reconcile.
	healthy bool
	// readiness is the Ready status last reported in an event.
	readiness metav1.ConditionStatus

	mu sync.Mutex
	// collectedAt and collectedGeneration date the last status collection started.
	collectedAt         time.Time
	collectedGeneration int64
	// collecting is true while a collection runs.
	collecting bool
	// collected is what the last collections found, written into every status.
	collected collected

	// accessFor is the UID of the Pull Cluster whose agent's rights were applied.
	accessFor types.UID
	// exchangeFor is the bootstrap token whose exchange binding was last applied; "" after
	// the binding was removed; nil until either.
	exchangeFor *string
}

// collected is what status collection found; nil or empty fields were not collected.
type collected struct {
	version        string
	apiEnablements []clusterv1alpha1.APIEnablement
	nodes          *clusterv1alpha1.NodeSummary
	resources      *clusterv1alpha1.ResourceSummary
}

// +kubebuilder:rbac:groups=cluster.karmada.io,resources=clusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=cluster.karmada.io,resources=clusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=cluster.karmada.io,resources=clusters/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=work.karmada.io,resources=works,verbs=get;list;watch;delete;deletecollection
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile probes one member and brings its Cluster's condition, taints and status up to
// date, then comes back after ProbeInterval.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	cluster := &clusterv1alpha1.Cluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.Name)
			r.Members.Remove(req.Name) // in case a connection outlived the finalizer
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !cluster.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, cluster)
	}
	if !controllerutil.ContainsFinalizer(cluster, wellknown.ClusterControllerFinalizer) {
		patch := client.MergeFrom(cluster.DeepCopy())
		controllerutil.AddFinalizer(cluster, wellknown.ClusterControllerFinalizer)
		return ctrl.Result{}, r.Client.Patch(ctx, cluster, patch)
	}
	if going, err := r.ensureExecutionNamespace(ctx, cluster); err != nil {
		return ctrl.Result{}, err
	} else if going {
		// The namespace of a Cluster of this name that was unjoined is still being emptied
		// and deleted: it is made anew as soon as it is gone (bindings wait for it).
		defer func() {
			if retErr == nil && (res.RequeueAfter == 0 || res.RequeueAfter > executionNamespaceRetry) {
				res.RequeueAfter = executionNamespaceRetry
			}
		}()
	}
	if cluster.Spec.SyncMode == clusterv1alpha1.Pull {
		return r.reconcilePull(ctx, cluster)
	}

	st := r.state(cluster.Name)
	health, reconnected, err := r.connect(ctx, cluster, st)
	if err != nil {
		return ctrl.Result{}, err
	}
	if r.statusDue(cluster, st, health, reconnected) {
		r.startCollection(ctx, cluster, st)
	}
	st.healthy = health.Healthy
	status := cluster.Status.DeepCopy()
	st.fill(status)

	ready := clusterstatus.ReadyCondition(meta.FindStatusCondition(status.Conditions, wellknown.ClusterConditionReady), health)
	if ready.Status == metav1.ConditionTrue && len(status.APIEnablements) == 0 && st.isCollecting() {
		// A member is first reported Ready together with the APIs it serves: Ready before
		// them would let a template be placed without it (the scheduler leaves out a member
		// that reports no APIs), and a placement once made stays. The collection running
		// wakes the Cluster when it is done, whether it found the APIs or not.
		return ctrl.Result{RequeueAfter: r.opts.ProbeInterval}, nil
	}
	if err := r.syncTaints(ctx, cluster, ready.Status); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.writeStatus(ctx, cluster, st, status, ready); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: r.opts.ProbeInterval}, nil
}

// executionNamespaceRetry is how soon a Cluster whose execution namespace is still being
// deleted (left by an unjoin of a Cluster of the same name) looks again, to make it anew.
const executionNamespaceRetry = time.Second

// ensureExecutionNamespace creates karmada-es-<cluster> unless it exists. going says it
// exists but is being deleted.
func (r *Reconciler) ensureExecutionNamespace(ctx context.Context, cluster *clusterv1alpha1.Cluster) (going bool, err error) {
	name := wellknown.ExecutionNamespace(cluster.Name)
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	err = r.Client.Get(ctx, types.NamespacedName{Name: name}, ns)
	if err == nil {
		return ns.DeletionTimestamp != nil, nil
	}
	if !apierrors.IsNotFound(err) {
		return false, err
	}
	err = r.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	switch {
	case apierrors.IsAlreadyExists(err):
		return false, nil // the cache had not seen it yet
	case err != nil:
		r.Recorder.Eventf(cluster, nil, corev1.EventTypeWarning, wellknown.EventReasonCreateExecutionSpaceFailed, "CreateNamespace",
			"Cannot create the execution namespace %s: %v", name, err)
		return false, fmt.Errorf("create execution namespace %s: %w", name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Created the execution namespace", "Namespace", name)
	r.Recorder.Eventf(cluster, nil, corev1.EventTypeNormal, wellknown.EventReasonCreateExecutionSpaceSucceed, "CreateNamespace",
		"Created the execution namespace %s", name)
	return false, nil
}

// connect (re)builds the member's connection from the Cluster and its Secret when either
// changed, and returns the health its probe goroutine last saw (the member connection
// manager probes every member on a goroutine of its own, so no member I/O happens here).
// reconnected says whether the connection was rebuilt. A Cluster whose credentials cannot
// make a connection (no Secret, no token) is disconnected and reported through
// Health.ConnectError; err is only for failures worth a retry.
func (r *Reconciler) connect(ctx context.Context, cluster *clusterv1alpha1.Cluster, st *memberState) (h clusterstatus.Health, reconnected bool, err error) {
	secret, err := r.credentials(ctx, cluster, st)
	var cfgErr *configError
	if errors.As(err, &cfgErr) {
		r.Members.Disconnect(cluster.Name)
		return clusterstatus.Health{ConnectError: err}, false, nil
	}
	if err != nil {
		return h, false, err
	}
	if reconnected, err = r.Members.Connect(ctx, cluster, secret); err != nil {
		r.Members.Disconnect(cluster.Name)
		return clusterstatus.Health{ConnectError: err}, false, nil
	}
	s := r.Members.Status(cluster.Name)
	return clusterstatus.Health{Probed: !s.ProbedAt.IsZero(), Healthy: s.Healthy, Down: s.Down, Failures: s.Failures, LastError: s.LastError}, reconnected, nil
}

// configError is a Cluster or Secret that cannot make a connection until someone fixes it.
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

// credentials returns the Secret spec.secretRef names. The manager caches only the metadata
// of Secrets; the content is read from the apiserver when the Secret's resourceVersion
// differs from the one the connection was built from, so a rotated token is picked up at
// once and an unchanged one costs nothing.
func (r *Reconciler) credentials(ctx context.Context, cluster *clusterv1alpha1.Cluster, st *memberState) (*corev1.Secret, error) {
	ref := cluster.Spec.SecretRef
	if ref == nil {
		return nil, &configError{fmt.Sprintf("spec.secretRef is not set: point it at a Secret with the member's %q and %q keys (`kubectl flotilla join` writes one)",
			wellknown.SecretKeyToken, wellknown.SecretKeyCABundle)}
	}
	key := types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
	notFound := &configError{fmt.Sprintf("Secret %s named by spec.secretRef does not exist: re-run `kubectl flotilla join %s` or create it with a %q key",
		key, cluster.Name, wellknown.SecretKeyToken)}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err := r.Client.Get(ctx, key, m); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, notFound
		}
		return nil, err
	}
	if s := st.secret; s != nil && s.Namespace == key.Namespace && s.Name == key.Name &&
		s.UID == m.UID && s.ResourceVersion == m.ResourceVersion {
		return s, nil
	}
	s := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, key, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, notFound
		}
		return nil, err
	}
	st.secret = s
	return s, nil
}

// statusDue says whether to collect the member's heavy status now: it must be healthy, and
// either it just (re)connected or recovered, or the Cluster's spec changed (resource models),
// or the last collection is StatusInterval old.
func (r *Reconciler) statusDue(cluster *clusterv1alpha1.Cluster, st *memberState, h clusterstatus.Health, reconnected bool) bool {
	if !h.Healthy {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return reconnected || !st.healthy || cluster.Generation != st.collectedGeneration ||
		r.Clock.Since(st.collectedAt) >= r.opts.StatusInterval
}

// startCollection collects the member's status on a goroutine of its own, unless a
// collection of this member is running; when it is done, the Cluster is reconciled again to
// write what it found. A slow member thus never holds the controller's workers.
func (r *Reconciler) startCollection(ctx context.Context, cluster *clusterv1alpha1.Cluster, st *memberState) {
	st.mu.Lock()
	if st.collecting {
		st.mu.Unlock()
		return
	}
	st.collecting = true
	st.collectedAt, st.collectedGeneration = r.Clock.Now(), cluster.Generation
	prev := st.collected.apiEnablements
	if prev == nil {
		prev = cluster.Status.APIEnablements
	}
	st.mu.Unlock()
	name, models := cluster.Name, cluster.Spec.ResourceModels
	// The collection outlives this reconcile; it is bounded by statusCollectionTimeout.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), statusCollectionTimeout)
	go func() {
		defer cancel()
		found, ok := r.collectStatus(ctx, cluster, name, models, prev)
		st.mu.Lock()
		st.collecting = false
		if ok {
			st.collected = found
		} else {
			st.collected.merge(found)
		}
		st.mu.Unlock()
		r.wake(name)
	}()
}

// isCollecting reports whether a status collection of the member is running.
func (st *memberState) isCollecting() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.collecting
}

// fill writes what the collections found into status.
func (st *memberState) fill(status *clusterv1alpha1.ClusterStatus) {
	st.mu.Lock()
	defer st.mu.Unlock()
	c := collected{version: status.KubernetesVersion, apiEnablements: status.APIEnablements,
		nodes: status.NodeSummary, resources: status.ResourceSummary}
	c.merge(st.collected)
	status.KubernetesVersion, status.APIEnablements = c.version, c.apiEnablements
	status.NodeSummary, status.ResourceSummary = c.nodes, c.resources
}

// merge takes the fields of found that were collected.
func (c *collected) merge(found collected) {
	if found.version != "" {
		c.version = found.version
	}
	if found.apiEnablements != nil {
		c.apiEnablements = found.apiEnablements
	}
	if found.nodes != nil {
		c.nodes, c.resources = found.nodes, found.resources
	}
}

// wake reconciles the Cluster again.
func (r *Reconciler) wake(name string) {
	c := &clusterv1alpha1.Cluster{}
	c.Name = name
	r.collections <- event.GenericEvent{Object: c}
}

// collectStatus collects the member's version, APIs and summaries, and reports whether all
// of it was. What cannot be collected keeps its last value; the failure is logged and
// recorded as an event, and the next attempt waits for StatusInterval like a success.
func (r *Reconciler) collectStatus(ctx context.Context, cluster *clusterv1alpha1.Cluster, name string, models []clusterv1alpha1.ResourceModel,
	previous []clusterv1alpha1.APIEnablement) (collected, bool) {
	var out collected
	mem, err := r.Members.Get(name)
	if err != nil {
		return out, false // it went down since the probe
	}
	log := ctrl.LoggerFrom(ctx)
	began := r.Clock.Now()

	found, err := clusterstatus.Collect(ctx, mem.Kube, models, previous)
	out = collected{version: found.Version, apiEnablements: found.APIEnablements, nodes: found.Nodes, resources: found.Resources}
	took := r.Clock.Since(began)
	observeCollection(name, took, err == nil)

	if err != nil {
		log.Error(err, "Cannot collect the member cluster's status; keeping what was collected before")
		r.Recorder.Eventf(cluster, nil, corev1.EventTypeWarning, wellknown.EventReasonCollectClusterStatusFailed, "CollectStatus",
			"Cannot collect the member cluster's status: %v", err)
		return out, false
	}
	log.V(1).Info("Collected the member cluster's status", "duration", took, "version", out.version,
		"nodes", out.nodes.TotalNum, "apiGroupVersions", len(out.apiEnablements))
	return out, true
}

// syncTaints puts the not-ready and unreachable taints in line with the Ready condition's
// status, in one patch that fails if someone else changed the Cluster meanwhile.
func (r *Reconciler) syncTaints(ctx context.Context, cluster *clusterv1alpha1.Cluster, ready metav1.ConditionStatus) error {
	taints, changed := clusterstatus.SyncReadyTaints(cluster.Spec.Taints, ready, metav1.NewTime(r.Clock.Now()), r.opts.NoExecuteTaints)
	if !changed {
		return nil
	}
	patch := client.MergeFromWithOptions(cluster.DeepCopy(), client.MergeFromWithOptimisticLock{})
	cluster.Spec.Taints = taints
	if err := r.Client.Patch(ctx, cluster, patch); err != nil {
		return fmt.Errorf("update taints: %w", err)
	}
	ctrl.LoggerFrom(ctx).Info("Updated the system taints", "Ready", ready, "taints", taintKeys(taints))
	r.Recorder.Eventf(cluster, nil, corev1.EventTypeNormal, wellknown.EventReasonTaintClusterSucceed, "Taint",
		"Ready is %s; taints are now [%s]", ready, taintKeys(taints))
	return nil
}

func taintKeys(taints []corev1.Taint) string {
	keys := make([]string, 0, len(taints))
	for _, t := range taints {
		keys = append(keys, t.Key+":"+string(t.Effect))
	}
	return strings.Join(keys, ", ")
}

// writeStatus sets the Ready condition into status and, when anything changed, applies the
// whole status with server-side apply: what the controller no longer reports (a resource
// that left the summary) is removed even if the cache it compared with was behind. It
// records an event when Ready changes.
func (r *Reconciler) writeStatus(ctx context.Context, cluster *clusterv1alpha1.Cluster, st *memberState, status *clusterv1alpha1.ClusterStatus, ready metav1.Condition) error {
	ready.ObservedGeneration = cluster.Generation
	ready.LastTransitionTime = metav1.NewTime(r.Clock.Now())
	meta.SetStatusCondition(&status.Conditions, ready)
	if !equality.Semantic.DeepEqual(&cluster.Status, status) {
		if err := r.applyStatus(ctx, cluster.Name, status); err != nil {
			return fmt.Errorf("update status: %w", err)
		}
	}
	r.reportReadiness(ctx, cluster, st, ready)
	return nil
}

func (r *Reconciler) applyStatus(ctx context.Context, name string, status *clusterv1alpha1.ClusterStatus) error {
	return r.applyStatusAs(ctx, name, status, FieldOwner)
}

func (r *Reconciler) applyStatusAs(ctx context.Context, name string, status *clusterv1alpha1.ClusterStatus, owner string) error {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(status)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"status": content}}
	u.SetGroupVersionKind(clusterv1alpha1.GroupVersion.WithKind("Cluster"))
	u.SetName(name)
	return r.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(owner), client.ForceOwnership)
}

// reportReadiness logs and records an event when Ready changes. It compares with what it
// reported last rather than with the cache, which may not have seen the last write yet.
func (r *Reconciler) reportReadiness(ctx context.Context, cluster *clusterv1alpha1.Cluster, st *memberState, ready metav1.Condition) {
	if st.readiness == "" {
		if c := meta.FindStatusCondition(cluster.Status.Conditions, wellknown.ClusterConditionReady); c != nil {
			st.readiness = c.Status
		}
	}
	if st.readiness == ready.Status {
		return
	}
	st.readiness = ready.Status
	ctrl.LoggerFrom(ctx).Info("Member cluster readiness changed", "Ready", ready.Status, "reason", ready.Reason, "message", ready.Message)
	if ready.Status == metav1.ConditionTrue {
		r.Recorder.Eventf(cluster, nil, corev1.EventTypeNormal, wellknown.EventReasonClusterReady, "Probe", "%s", ready.Message)
		return
	}
	r.Recorder.Eventf(cluster, nil, corev1.EventTypeWarning, wellknown.EventReasonClusterNotReady, "Probe", "%s", ready.Message)
}

// finalize releases a deleted Cluster: its Works first (waiting until they are gone), then
// its execution namespace and connection, then the finalizer.
func (r *Reconciler) finalize(ctx context.Context, cluster *clusterv1alpha1.Cluster) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(cluster, wellknown.ClusterControllerFinalizer) {
		return ctrl.Result{}, nil
	}
	remaining, err := r.deleteWorks(ctx, cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	if remaining > 0 {
		// The execution controller deletes the Works' objects in the member: a manager
		// that started while the Cluster was being deleted connects to it first.
		if cluster.Spec.SyncMode != clusterv1alpha1.Pull {
			if _, _, err := r.connect(ctx, cluster, r.state(cluster.Name)); err != nil {
				return ctrl.Result{}, err
			}
		}
		// The member's probes go on: when it goes down, the execution controller hears of it
		// and releases the Works it can no longer clean up.
		ctrl.LoggerFrom(ctx).Info("Waiting for the deleted Cluster's Works to go", "remaining", remaining)
		return ctrl.Result{RequeueAfter: WorkDeletionPollInterval}, nil
	}
	if err := r.removeExecutionNamespace(ctx, cluster); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.removeAgentAccess(ctx, cluster); err != nil {
		return ctrl.Result{}, err
	}
	// Its Works are gone: so go its connection and the member queues' workers.
	r.Members.Remove(cluster.Name)
	r.forget(cluster.Name)
	patch := client.MergeFrom(cluster.DeepCopy())
	controllerutil.RemoveFinalizer(cluster, wellknown.ClusterControllerFinalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, cluster, patch))
}

// deleteWorks deletes the Works in the Cluster's execution namespace and returns how many
// are still there.
func (r *Reconciler) deleteWorks(ctx context.Context, cluster *clusterv1alpha1.Cluster) (int, error) {
	ns := wellknown.ExecutionNamespace(cluster.Name)
	works := &workv1alpha1.WorkList{}
	if err := r.Client.List(ctx, works, client.InNamespace(ns)); err != nil {
		return 0, fmt.Errorf("list works in %s: %w", ns, err)
	}
	for i := range works.Items {
		if works.Items[i].DeletionTimestamp.IsZero() {
			if err := r.Client.DeleteAllOf(ctx, &workv1alpha1.Work{}, client.InNamespace(ns)); err != nil && !apierrors.IsNotFound(err) {
				return 0, fmt.Errorf("delete works in %s: %w", ns, err)
			}
			break
		}
	}
	return len(works.Items), nil
}

// removeExecutionNamespace deletes karmada-es-<cluster>; the namespace controller empties it.
func (r *Reconciler) removeExecutionNamespace(ctx context.Context, cluster *clusterv1alpha1.Cluster) error {
	name := wellknown.ExecutionNamespace(cluster.Name)
	err := r.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		r.Recorder.Eventf(cluster, nil, corev1.EventTypeWarning, wellknown.EventReasonRemoveExecutionSpaceFailed, "DeleteNamespace",
			"Cannot delete the execution namespace %s: %v", name, err)
		return fmt.Errorf("delete execution namespace %s: %w", name, err)
	}
	r.Recorder.Eventf(cluster, nil, corev1.EventTypeNormal, wellknown.EventReasonRemoveExecutionSpaceSucceed, "DeleteNamespace",
		"Deleted the execution namespace %s", name)
	return nil
}

func (r *Reconciler) state(name string) *memberState {
	st, _ := r.members.LoadOrStore(name, &memberState{})
	return st.(*memberState)
}

func (r *Reconciler) forget(name string) {
	r.members.Delete(name)
	forgetMetrics(name)
}
