// Package execution applies Works to their member clusters with server-side apply (field
// manager "flotilla"), deletes member objects when their Work goes (unless it preserves
// them), and puts back what someone changed by hand on a member.
//
// A member object that exists without the label karmada.io/managed=true belongs to someone
// else: it is left alone, and the Work's Applied condition says so, unless the binding's
// conflictResolution is Overwrite. When a member is not connected the Work is marked
// Applied=Unknown and left; the member's reconnect brings every Work of that cluster back.
// A Work of a kind the member does not serve (a custom resource whose CRD is not there, or
// not Established, yet) is marked Applied=False (KindNotServed) and waits, looking again
// after 1 s, doubling up to 30 s, and at once when a Work's CRD of that kind is Established
// in the member (notserved.go).
package execution

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/applied"
	"github.com/flotilla-io/flotilla/internal/bindings"
	"github.com/flotilla-io/flotilla/internal/cachetrim"
	"github.com/flotilla-io/flotilla/internal/join"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/memberobject"
	"github.com/flotilla-io/flotilla/internal/memberqueue"
	"github.com/flotilla-io/flotilla/internal/memo"
	"github.com/flotilla-io/flotilla/internal/shard"
)

// StatusInterpreter reads status and health from member objects.
type StatusInterpreter interface {
	ReflectStatus(obj *unstructured.Unstructured) (*runtime.RawExtension, error)
	Health(obj *unstructured.Unstructured) workv1alpha1.ResourceHealth
}

// Interpreter is what execution needs of the resource interpreter.
type Interpreter interface {
	StatusInterpreter
	// Retain keeps, in the manifest about to be applied, the fields the member owns.
	Retain(desired, observed *unstructured.Unstructured) (*unstructured.Unstructured, error)
}

const (
	// memberDownRetry is when a Work whose member is not connected is looked at again. The
	// member's reconnect event normally brings it back sooner; this is the safety net.
	memberDownRetry = 30 * time.Second
	// requestFailedRetry is when a Work whose apply failed because the member did not answer
	// (a timeout, a refused connection, 503) is tried again, while probes may still pass.
	requestFailedRetry = 5 * time.Second
	// notConnectedRetry is when a Work whose member has no connection yet is looked at again.
	notConnectedRetry = 5 * time.Second
	// forbiddenRetry is when a Work the member refused to the credential is tried again: a
	// rejoin with other rights reconnects the member and brings it back at once, but the
	// rights of a Pull agent's identity change in the member without any event.
	forbiddenRetry = time.Minute
	// grantedRetry is when a Work is tried again after the credential added its kind's API
	// group to its rights: the member's RBAC sees the change within moments.
	grantedRetry = 500 * time.Millisecond
	// grantSettle is how long after adding an API group to the credential's rights a refusal
	// of that group is taken for the member's RBAC not showing the change yet.
	grantSettle = 10 * time.Second
)

// Reconciler applies Works. Its Reconcile only routes: the member I/O of each Work runs on
// its member's own workers (internal/memberqueue), so a member that is down, slow or
// rate-limited never holds the controller's shared workers.
type Reconciler struct {
	// Shards, when set, is this replica's share of a sharded manager: only the keys of its
	// shards are reconciled (nil: every key).
	Shards *shard.Set

	Client      client.Client
	Members     *member.Manager
	Recorder    events.EventRecorder
	Interpreter Interpreter
	// HostID identifies this control plane on member objects (wellknown.HostIDAnnotation).
	HostID string
	// MemberWorkers is how many Works of one member are applied at once.
	MemberWorkers int
	// MemberWorkTimeout bounds one Work's sync on its member's workers
	// (memberqueue.DefaultTimeout when zero).
	MemberWorkTimeout time.Duration
	// KindServed, when set, is told that a CRD applied to cluster is Established there: the
	// member serves a new kind (the cluster controller collects the member's APIs again).
	KindServed func(cluster string)
	// Agent is set in a Pull member's agent, to the name of its Cluster: the reconciler
	// applies the Works of that Pull Cluster. Unset, in the host's manager, it leaves the Works
	// of Pull Clusters to their agents (see pulled).
	Agent string

	queues *memberqueue.Queues[types.NamespacedName]

	// applied remembers, per Work, the Work generation and member object generation of the
	// last apply, so events that change nothing do not cause another apply.
	applied memo.Map[types.UID, appliedState]
	// written remembers the Applied condition last written per Work.
	written memo.Map[types.UID, metav1.Condition]
	// namespaces remembers, per member connection, the namespaces known to exist there.
	namespaces sync.Map // cluster → *knownNamespaces
	// waiting are the Works waiting for their member to serve a kind.
	waiting kindWaits
	// grantedGroups remembers when this reconciler added an API group to a member
	// credential's rights ("cluster/group").
	grantedGroups memo.Map[string, time.Time]
	// blind are the Works seen while the member cache had not synced their kind (blind.go).
	blind blindWorks
	// checks are the checks after a start waiting for a member cache to sync (deferred.go).
	checks waitingChecks
	// rewatched remembers, per member and kind, the grant of its group after which the
	// member cache's watch of it was started afresh.
	rewatched memo.Map[blindKind, time.Time]
	// established remembers, per Work of a CRD, the UID of the member CRD last seen
	// Established, so that KindServed is told once.
	established memo.Map[types.UID, types.UID]
}

type appliedState struct {
	workGeneration   int64
	memberGeneration int64
	memberUID        types.UID
	// memberResourceVersion stands in for the generation of kinds that have none
	// (ConfigMaps, Secrets, Services...), where any change is someone else's.
	memberResourceVersion string
	// autoscaler names the member HPA whose replicas the apply kept: once it is gone, the
	// object is no longer as it should be although the member did not change it.
	autoscaler string
}

// forgetMember drops what was kept of a member whose Cluster is gone: the namespaces it has,
// the API groups added to its credential. A member joined again under the name starts afresh.
func (r *Reconciler) forgetMember(cluster string) {
	r.namespaces.Delete(cluster)
	r.grantedGroups.DeleteFunc(func(key string, _ time.Time) bool { return strings.HasPrefix(key, cluster+"/") })
	r.checks.forget(cluster)
}

// knownNamespaces are the namespaces seen to exist in one member connection. A new
// connection (a rejoin, rotated credentials) starts afresh, and a namespace deleted in the
// member is forgotten when an apply into it fails.
type knownNamespaces struct {
	member *member.Member
	names  sync.Map
}

// +kubebuilder:rbac:groups=work.karmada.io,resources=works,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=work.karmada.io,resources=works/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile hands the Work to its member's workers: behind the others when its Applied
// condition says its current generation is applied (a check that nothing changed, as for
// every Work when the manager starts), so that new and changed Works go first.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cluster, ok := bindings.ClusterOfWork(req.Namespace)
	if !ok {
		return ctrl.Result{}, nil
	}
	work := &workv1alpha1.Work{}
	if err := r.Client.Get(ctx, req.NamespacedName, work); err == nil && work.DeletionTimestamp == nil && appliedCurrent(work) {
		r.queues.AddLow(cluster, req.NamespacedName)
		return ctrl.Result{}, nil
	}
	r.queues.Add(cluster, req.NamespacedName)
	return ctrl.Result{}, nil
}

// appliedCurrent reports whether a Work's Applied condition is True for its generation.
func appliedCurrent(work *workv1alpha1.Work) bool {
	c := meta.FindStatusCondition(work.Status.Conditions, wellknown.WorkConditionApplied)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == work.Generation
}

// sync applies or deletes one Work; it runs on the Work's member's workers.
func (r *Reconciler) sync(ctx context.Context, cluster string, key types.NamespacedName) (ctrl.Result, error) {
	// Sharded, the member I/O is done only while this replica holds the Work's shard: it
	// is let go of after this returns, never while a Work of it is being applied.
	done, ok := r.Shards.Enter(key.String())
	if !ok {
		return ctrl.Result{}, nil
	}
	defer done()
	log := ctrl.LoggerFrom(ctx).WithValues("Work", key.String())
	ctx = ctrl.LoggerInto(ctx, log)
	// A Work whose kind the member does not serve waits with a backoff of its own, which any
	// other outcome ends.
	waiting := false
	defer func() {
		if !waiting {
			r.waiting.done(key)
		}
	}()
	waitForKind := func(work *workv1alpha1.Work, gvk schema.GroupVersionKind) (ctrl.Result, error) {
		waiting = true
		return r.waitForKind(ctx, cluster, work, gvk)
	}
	work := &workv1alpha1.Work{}
	if err := r.Client.Get(ctx, key, work); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.Agent == "" {
		if c, err := r.cluster(ctx, cluster); err != nil {
			return ctrl.Result{}, err
		} else if c != nil && c.Spec.SyncMode == clusterv1alpha1.Pull {
			return r.pulled(ctx, c, work)
		}
	}
	if work.DeletionTimestamp != nil {
		return r.finalize(ctx, cluster, work)
	}
	if !controllerutil.ContainsFinalizer(work, wellknown.ExecutionControllerFinalizer) {
		// A Work written by someone else than the binding controller: add the finalizer and
		// go on (the patch is not an event this controller watches).
		patch := client.MergeFrom(work.DeepCopy())
		controllerutil.AddFinalizer(work, wellknown.ExecutionControllerFinalizer)
		if err := r.Client.Patch(ctx, work, patch); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}
	if ptr.Deref(work.Spec.SuspendDispatching, false) {
		return ctrl.Result{}, r.setApplied(ctx, work, metav1.ConditionFalse, "DispatchingSuspended", "Dispatching to this cluster is suspended")
	}

	m, err := r.Members.Get(cluster)
	if err != nil {
		// Not an error for backoff: the reconnect event brings this Work back. A member with
		// no connection at all is most likely one the manager has not connected yet (it just
		// started, and the connect event may come before this controller's view of the Works
		// is complete): look again sooner.
		//
		// Not connected yet, or connected and not (yet) down (it has not answered its first
		// probe, or failed fewer probes in a row than the threshold), while the Cluster says
		// it is Ready: a manager that has just started, or a blip. The Work's condition stays
		// as it is (a restart writes nothing, and a blip rewrites no Work, binding or
		// template); if the member goes on not answering, the cluster controller marks it not
		// Ready and the next look here says so.
		st := r.Members.Status(cluster)
		retry := memberDownRetry
		if !st.Connected || !st.Down {
			retry = notConnectedRetry
			if r.Agent == "" && r.readyCluster(ctx, cluster) {
				return ctrl.Result{RequeueAfter: retry}, nil
			}
		}
		return ctrl.Result{RequeueAfter: retry}, r.setApplied(ctx, work, metav1.ConditionUnknown, wellknown.ReasonClusterUnreachable, err.Error())
	}
	objs, err := manifests(work)
	if err != nil {
		// Only a new manifest can fix this; its generation brings the Work back.
		return ctrl.Result{}, r.setApplied(ctx, work, metav1.ConditionFalse, wellknown.ReasonAppliedFailed, err.Error())
	}
	for _, obj := range objs {
		if err := r.Members.Watch(ctx, cluster, obj.GroupVersionKind()); err != nil {
			if errors.Is(err, member.ErrNotConnected) {
				return ctrl.Result{RequeueAfter: memberDownRetry}, nil
			}
			if meta.IsNoMatchError(err) {
				// The member's mapper looked the group version up again before saying so.
				return waitForKind(work, obj.GroupVersionKind())
			}
			return ctrl.Result{}, err
		}
	}
	look := r.upToDate(ctx, cluster, m, work, objs)
	if look == notChecked {
		look = r.unchangedSinceStart(ctx, cluster, m, work, objs)
	}
	if look == checkWaits {
		// Queued again once the member cache has synced the kind (deferred.go).
		return ctrl.Result{}, nil
	}
	if look == checkedUnchanged {
		r.seen(ctx, cluster, m, key, objs)
		r.crdsEstablished(ctx, cluster, m, work, objs)
		// Nothing to apply, but the condition may still say otherwise (Unknown after a blip,
		// a failure whose retry found the object already right): repair it.
		return ctrl.Result{}, r.setApplied(ctx, work, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful, appliedMessage)
	}
	applied := make([]*unstructured.Unstructured, 0, len(objs))
	var autoscaler string
	for _, obj := range objs {
		out, hpa, err := r.applyOne(ctx, cluster, m, obj)
		if err != nil {
			var c *memberobject.ConflictError
			if errors.As(err, &c) {
				r.Recorder.Eventf(work, nil, corev1.EventTypeWarning, wellknown.EventReasonSyncWorkloadFailed, "Apply", "%v", err)
				return ctrl.Result{}, r.setApplied(ctx, work, metav1.ConditionFalse, wellknown.ReasonConflict, err.Error())
			}
			var notServed *kindNotServedError
			if errors.As(err, &notServed) {
				return waitForKind(work, notServed.gvk)
			}
			if isMemberDown(err) {
				log.V(1).Info("Member did not answer; retrying", "error", err.Error())
				return ctrl.Result{RequeueAfter: requestFailedRetry}, r.setApplied(ctx, work, metav1.ConditionUnknown, wellknown.ReasonClusterUnreachable, err.Error())
			}
			if apierrors.IsForbidden(err) {
				// The member refused the credential. A group it did not serve when the
				// credential's rules were made (a CRD propagated since) the credential adds to
				// its own ClusterRole, and the Work is tried again as soon as the member's RBAC
				// has it. Otherwise only new rights help (join again, the agent's register
				// --refresh-rights), which no event here announces.
				who := r.memberOf(ctx, cluster)
				if r.grantGroup(ctx, cluster, m, who, obj.GroupVersionKind().Group, err) {
					return ctrl.Result{RequeueAfter: grantedRetry}, nil
				}
				msg := join.ExplainForbidden(who, obj.GroupVersionKind(), err)
				return ctrl.Result{RequeueAfter: forbiddenRetry}, r.setApplied(ctx, work, metav1.ConditionFalse, wellknown.ReasonAppliedFailed, msg)
			}
			if serr := r.setApplied(ctx, work, metav1.ConditionFalse, wellknown.ReasonAppliedFailed, err.Error()); serr != nil {
				log.Error(serr, "Cannot record the failed apply")
			}
			return ctrl.Result{}, err
		}
		applied = append(applied, out)
		autoscaler = hpa
	}
	r.remember(work, objs, autoscaler)
	r.seen(ctx, cluster, m, key, objs)
	applies.WithLabelValues(cluster, "applied").Inc()
	// One line per apply, at debug level: the sharding test counts them.
	log.V(1).Info("Applied the Work's manifests", "generation", work.Generation)
	r.crdsEstablished(ctx, cluster, m, work, objs)
	// The first manifest statuses come from the apply's answer, in the same write as the
	// condition; the work-status controller keeps them current afterwards.
	var statuses []workv1alpha1.ManifestStatus
	if len(work.Status.ManifestStatuses) == 0 && r.Interpreter != nil {
		statuses = ManifestStatuses(m.Mapper, r.Interpreter, applied)
	}
	return ctrl.Result{}, r.setApplied(ctx, work, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful, appliedMessage, statuses...)
}

const appliedMessage = "Manifest is applied in the member cluster"

// ManifestStatuses reflects the status and health of member objects, in manifest order.
// Objects whose kind the member does not map are left out.
func ManifestStatuses(mapper meta.RESTMapper, interp StatusInterpreter, objs []*unstructured.Unstructured) []workv1alpha1.ManifestStatus {
	out := make([]workv1alpha1.ManifestStatus, 0, len(objs))
	for i, obj := range objs {
		if obj == nil {
			continue
		}
		gvk := obj.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			continue
		}
		ms := workv1alpha1.ManifestStatus{
			Identifier: workv1alpha1.ResourceIdentifier{Ordinal: i, Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind,
				Resource: mapping.Resource.Resource, Namespace: obj.GetNamespace(), Name: obj.GetName()},
			Health: interp.Health(obj),
		}
		if st, err := interp.ReflectStatus(obj); err == nil {
			ms.Status = st
		}
		out = append(out, ms)
	}
	return out
}

// manifests decodes the Work's manifests, each labelled karmada.io/managed and annotated
// with the Work's name, as the binding controller renders them; a Work written by someone
// else gets them here, so its member objects are ours to update and delete too.
func manifests(work *workv1alpha1.Work) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, 0, len(work.Spec.Workload.Manifests))
	for i, m := range work.Spec.Workload.Manifests {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(m.Raw); err != nil {
			return nil, fmt.Errorf("manifest %d: %w", i, err)
		}
		if u.GetKind() == "" || u.GetAPIVersion() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("manifest %d: apiVersion, kind and metadata.name are required", i)
		}
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[wellknown.ManagedLabel] = wellknown.ManagedLabelValue
		u.SetLabels(labels)
		ann := u.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[wellknown.WorkNamespaceAnnotation], ann[wellknown.WorkNameAnnotation] = work.Namespace, work.Name
		u.SetAnnotations(ann)
		out = append(out, u)
	}
	return out, nil
}

// upToDate looks at a Work whose apply of this generation is remembered: checkedUnchanged
// when its member object is as last applied (it exists in the member cache with the
// generation, or resourceVersion, observed after the apply), notChecked otherwise or when
// nothing is remembered. A member cache that has not synced the kind (a new connection after
// a reconnect, listing) is waited for, as a check after a start is (checkLater): checkWaits.
// Without the wait, each such Work held a worker for up to cacheSyncWait and was then
// applied again, with a read of the member, though nothing had changed.
func (r *Reconciler) upToDate(ctx context.Context, cluster string, m *member.Member, work *workv1alpha1.Work, objs []*unstructured.Unstructured) check {
	st, ok := r.applied.Load(work.UID)
	if !ok || len(objs) != 1 {
		return notChecked
	}
	if st.workGeneration != work.Generation {
		return notChecked
	}
	if r.checkLater(ctx, cluster, m, client.ObjectKeyFromObject(work), objs[0].GroupVersionKind()) {
		applies.WithLabelValues(cluster, "waited").Inc()
		return checkWaits
	}
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(objs[0].GroupVersionKind())
	if err := cachedGet(ctx, m, client.ObjectKeyFromObject(objs[0]), cur); err != nil {
		return notChecked
	}
	if cur.GetUID() != st.memberUID || cur.GetLabels()[wellknown.ManagedLabel] != wellknown.ManagedLabelValue {
		return notChecked
	}
	if st.memberGeneration == 0 {
		return checkedIf(cur.GetResourceVersion() == st.memberResourceVersion)
	}
	if cur.GetGeneration() != st.memberGeneration {
		return notChecked
	}
	if st.autoscaler != "" {
		hpas, err := r.Members.Autoscalers(ctx, m.Name, cur.GetNamespace())
		return checkedIf(err == nil && memberobject.Autoscaler(cur, hpas) == st.autoscaler)
	}
	return checkedUnchanged
}

// checkedIf is checkedUnchanged when unchanged, notChecked otherwise.
func checkedIf(unchanged bool) check {
	if unchanged {
		return checkedUnchanged
	}
	return notChecked
}

// remember records the state of the Work's one member object after an apply; autoscaler
// names the member HPA whose replicas the apply kept, if any.
func (r *Reconciler) remember(work *workv1alpha1.Work, objs []*unstructured.Unstructured, autoscaler string) {
	if len(objs) != 1 {
		return
	}
	r.applied.Store(work.UID, appliedState{workGeneration: work.Generation,
		memberGeneration: objs[0].GetGeneration(), memberUID: objs[0].GetUID(),
		memberResourceVersion: objs[0].GetResourceVersion(), autoscaler: autoscaler})
}

// applyOne server-side applies one manifest, after making sure its namespace exists and that
// it does not take over an object someone else manages, and with the fields the member owns
// retained. It returns the member's answer and the member HPA whose replicas it kept, if
// any, and records the answer's generation, UID and resourceVersion on obj.
//
// An object the member cache does not hold (it holds every object labelled
// karmada.io/managed) is most often one no one has made yet: it is applied create-only
// (memberobject.CreateOnly), one request, and read from the member only when the member says
// it exists after all (someone else's, or ours before the cache has it). While the cache has
// not synced the kind (its first list, which after a start or a reconnect takes seconds on a
// busy member), the object is read from the member rather than waited for: a Work created
// during a restart's re-verification is not held up by the lists of everything else.
func (r *Reconciler) applyOne(ctx context.Context, cluster string, m *member.Member, obj *unstructured.Unstructured) (*unstructured.Unstructured, string, error) {
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(obj.GroupVersionKind())
	err := m.NoWait().Get(ctx, client.ObjectKeyFromObject(obj), cur)
	switch {
	case err == nil:
	case apierrors.IsNotFound(err):
		out, created, err := r.create(ctx, cluster, m, obj)
		if err != nil || created {
			return out, "", err
		}
		if cur, err = r.read(ctx, m, obj); err != nil {
			return nil, "", err
		}
	default:
		// The cache cannot say (it has not synced the kind yet): ask the member.
		if cur, err = r.read(ctx, m, obj); err != nil {
			return nil, "", err
		}
	}
	if err := memberobject.CheckConflict(cur, obj, r.HostID); err != nil && !r.madeNamespace(cur) {
		return nil, "", err
	}
	adopting := memberobject.Owner(cur, obj, r.HostID) == memberobject.KarmadaLeftover
	desired, autoscaler, err := r.desired(ctx, m, obj, cur)
	if err != nil {
		return nil, "", err
	}
	if err := r.apply(ctx, cluster, m, obj, desired); err != nil {
		return nil, "", err
	}
	if err := r.finishAdoption(ctx, m, obj, desired, adopting); err != nil {
		return nil, "", err
	}
	appliedAs(obj, desired)
	return desired, autoscaler, nil
}

// create applies obj create-only. It reports created false, and no error, when the member
// already has the object.
func (r *Reconciler) create(ctx context.Context, cluster string, m *member.Member, obj *unstructured.Unstructured) (*unstructured.Unstructured, bool, error) {
	desired, _, err := r.desired(ctx, m, obj, nil)
	if err != nil {
		return nil, false, err
	}
	desired = memberobject.CreateOnly(desired)
	if err := r.apply(ctx, cluster, m, obj, desired); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	appliedAs(obj, desired)
	return desired, true, nil
}

// appliedAs records on obj the generation, UID and resourceVersion of the member's answer to
// its apply.
func appliedAs(obj, answer *unstructured.Unstructured) {
	obj.SetGeneration(answer.GetGeneration())
	obj.SetUID(answer.GetUID())
	obj.SetResourceVersion(answer.GetResourceVersion())
}

// apply server-side applies desired, the manifest obj as it is to be applied, into its
// namespace (made first when this connection has not seen it); desired becomes the member's
// answer. A kind the member does not serve is a *kindNotServedError.
func (r *Reconciler) apply(ctx context.Context, cluster string, m *member.Member, obj, desired *unstructured.Unstructured) error {
	ns := obj.GetNamespace()
	if ns != "" {
		if err := r.ensureNamespace(ctx, cluster, m, ns); err != nil {
			return err
		}
	}
	apply := func() error {
		return m.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(desired),
			client.FieldOwner(wellknown.FieldManager), client.ForceOwnership)
	}
	err := apply()
	if apierrors.IsNotFound(err) && ns != "" {
		// Applying never fails with NotFound for the object itself: its namespace was
		// deleted in the member since we saw it. Create it again.
		r.forgetNamespace(cluster, m, ns)
		if err = r.ensureNamespace(ctx, cluster, m, ns); err == nil {
			err = apply()
		}
	}
	if err != nil {
		if served, serr := kindServed(ctx, m, obj.GroupVersionKind(), err); serr == nil && !served {
			return &kindNotServedError{gvk: obj.GroupVersionKind(), cluster: cluster}
		}
		return fmt.Errorf("apply %s %s: %w", obj.GetKind(), client.ObjectKeyFromObject(obj), err)
	}
	return nil
}

// desired is the apply configuration of obj given the member object as it is (cur, nil when
// there is none): what the member owns retained (see retain), this host's annotation, and
// the digest of all that (wellknown.AppliedDigestAnnotation), by which a restarted manager
// tells from its member cache that the object is as it last applied it.
func (r *Reconciler) desired(ctx context.Context, m *member.Member, obj, cur *unstructured.Unstructured) (*unstructured.Unstructured, string, error) {
	desired, autoscaler, err := r.retain(ctx, m, obj, cur)
	if err != nil {
		return nil, "", err
	}
	ann := desired.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	if r.HostID != "" {
		ann[wellknown.HostIDAnnotation] = r.HostID
	}
	desired.SetAnnotations(ann)
	ann[wellknown.AppliedDigestAnnotation] = applied.Digest(desired) // Digest leaves the annotation out
	desired.SetAnnotations(ann)
	return desired, autoscaler, nil
}

// check is what a look at an applied Work found (upToDate, unchangedSinceStart).
type check int

const (
	// notChecked: the Work is to be applied (changed, never applied, nothing to check by).
	notChecked check = iota
	// checkedUnchanged: the member object is as last applied.
	checkedUnchanged
	// checkWaits: the check waits for the member cache to sync the kind (deferred.go).
	checkWaits
)

// unchangedSinceStart checks whether the Work's one member object is as this controller last
// applied it, when nothing is remembered of that apply (the manager started since, or this
// replica just took the Work's shard over) and the Work's Applied condition says its
// generation was applied. The member cache's copy says so when it carries the digest of what
// would be applied now and "flotilla" still owns exactly the fields that apply would own
// (applied.UnchangedCached): no request. A member cache that has not synced the kind yet is
// waited for (checkLater). Otherwise (an object applied before the digest, a kind whose copy
// the cache trims of what Retain reads, a change, a cache that did not sync in time) the
// object is read from the member, and its managedFields say what "flotilla" owns, which must
// hold exactly what an apply would write now (applied.Unchanged). An object someone changed
// or deleted since, one of another host, or one being adopted from Karmada is applied as
// before. When it is unchanged, the object is remembered as after an apply.
func (r *Reconciler) unchangedSinceStart(ctx context.Context, cluster string, m *member.Member, work *workv1alpha1.Work, objs []*unstructured.Unstructured) check {
	if len(objs) != 1 || !appliedCurrent(work) || len(work.Status.ManifestStatuses) == 0 {
		return notChecked
	}
	if _, remembered := r.applied.Load(work.UID); remembered {
		return notChecked
	}
	obj := objs[0]
	if obj.GetAnnotations()[wellknown.AdoptKarmadaUIDAnnotation] != "" {
		return notChecked
	}
	if r.checkLater(ctx, cluster, m, client.ObjectKeyFromObject(work), obj.GroupVersionKind()) {
		applies.WithLabelValues(cluster, "waited").Inc()
		return checkWaits
	}
	from := "member cache"
	live, autoscaler := r.unchangedCached(ctx, m, obj)
	if live == nil {
		from = "member"
		if live, autoscaler = r.unchangedLive(ctx, m, obj); live == nil {
			return notChecked
		}
	}
	obj.SetGeneration(live.GetGeneration())
	obj.SetUID(live.GetUID())
	obj.SetResourceVersion(live.GetResourceVersion())
	r.remember(work, objs, autoscaler)
	applies.WithLabelValues(m.Name, "unchanged").Inc()
	ctrl.LoggerFrom(ctx).V(1).Info("Member object unchanged since the last apply; not applied again", "readFrom", from)
	return checkedUnchanged
}

// unchangedCached returns the member cache's copy of obj's member object, and the member HPA
// whose replicas an apply would keep, when the copy says the object is as last applied
// (applied.UnchangedCached); nil when it cannot say so.
func (r *Reconciler) unchangedCached(ctx context.Context, m *member.Member, obj *unstructured.Unstructured) (*unstructured.Unstructured, string) {
	cached, ok := m.Watched(ctx, obj.GroupVersionKind(), client.ObjectKeyFromObject(obj))
	if !ok || !r.ours(cached, obj) {
		return nil, ""
	}
	desired, autoscaler, err := r.desired(ctx, m, obj, cached)
	if err != nil || !applied.UnchangedCached(cached, cachetrim.OwnedFields(cached), desired) {
		return nil, ""
	}
	return cached, autoscaler
}

// unchangedLive reads obj's member object from the member and returns it, and the member HPA
// whose replicas an apply would keep, when its managedFields say it is as last applied
// (applied.Unchanged); nil otherwise. An object applied before the applied digest was (it
// has none) is compared without it: the digest alone is no reason to apply again.
func (r *Reconciler) unchangedLive(ctx context.Context, m *member.Member, obj *unstructured.Unstructured) (*unstructured.Unstructured, string) {
	log := ctrl.LoggerFrom(ctx).V(1)
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(obj.GroupVersionKind())
	if err := m.Client.Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil {
		log.Info("Cannot read the member object to check it; applying", "error", err.Error())
		return nil, ""
	}
	if !r.ours(live, obj) {
		log.Info("Member object not ours as applied; applying")
		return nil, ""
	}
	desired, autoscaler, err := r.desired(ctx, m, obj, live)
	if _, has := live.GetAnnotations()[wellknown.AppliedDigestAnnotation]; err == nil && !has {
		unstructured.RemoveNestedField(desired.Object, "metadata", "annotations", wellknown.AppliedDigestAnnotation)
	}
	if err != nil || !applied.Unchanged(live, desired, wellknown.FieldManager) {
		log.Info("Member object changed since the last apply; applying", "error", fmt.Sprint(err))
		return nil, ""
	}
	return live, autoscaler
}

// ours reports whether cur, obj's member object, is labelled managed and is this host's, as
// after an apply of obj.
func (r *Reconciler) ours(cur, obj *unstructured.Unstructured) bool {
	return memberobject.CheckConflict(cur, obj, r.HostID) == nil && cur.GetLabels()[wellknown.ManagedLabel] == wellknown.ManagedLabelValue
}

// finishAdoption removes what Karmada left on a member object of a template migrated from it
// (memberobject.AdoptionPatch): its labels, annotations and field managers. applied is the
// member's answer to the apply, with its managedFields. It runs after every apply of such a
// template (a patch refused once is made at the next), and writes only while something is
// left; adopting (the apply took the object over) is told by an event on the Work.
func (r *Reconciler) finishAdoption(ctx context.Context, m *member.Member, obj, applied *unstructured.Unstructured, adopting bool) error {
	if obj.GetAnnotations()[wellknown.AdoptKarmadaUIDAnnotation] == "" {
		return nil
	}
	if patch, ok := memberobject.AdoptionPatch(applied, obj); ok {
		if err := m.Client.Patch(ctx, applied, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return fmt.Errorf("%s %s: remove what Karmada left on it: %w", obj.GetKind(), client.ObjectKeyFromObject(obj), err)
		}
	}
	if adopting {
		ctrl.LoggerFrom(ctx).Info("Adopted a member object Karmada made for this template", "kind", obj.GetKind(), "object", client.ObjectKeyFromObject(obj), "uid", applied.GetUID())
		if work := workOf(obj); work != nil {
			r.Recorder.Eventf(work, nil, corev1.EventTypeNormal, wellknown.EventReasonAdopted, "Adopt",
				"Adopted %s %s, which Karmada made for this template: same object (uid %s), now managed by Flotilla", obj.GetKind(), client.ObjectKeyFromObject(obj), applied.GetUID())
		}
	}
	return nil
}

// workOf is a reference to the Work a manifest came from (its annotations), for events.
func workOf(obj *unstructured.Unstructured) *workv1alpha1.Work {
	a := obj.GetAnnotations()
	if a[wellknown.WorkNameAnnotation] == "" {
		return nil
	}
	return &workv1alpha1.Work{TypeMeta: metav1.TypeMeta{APIVersion: workv1alpha1.GroupVersion.String(), Kind: "Work"},
		ObjectMeta: metav1.ObjectMeta{Namespace: a[wellknown.WorkNamespaceAnnotation], Name: a[wellknown.WorkNameAnnotation]}}
}

// cacheSyncWait bounds how long a read of the member cache waits for the cache to sync the
// object's kind, which it does within moments of a (re)connect. A member whose list of a kind
// keeps failing (a custom resource whose conversion webhook is down) never syncs it: the
// Works of that kind then fall back to reading the member (read) and are retried, rather
// than holding each of the member's few workers for the whole of memberqueue's timeout while
// the member's other Works wait.
const cacheSyncWait = 5 * time.Second

// cachedGet reads the member cache, waiting at most cacheSyncWait for it to sync the kind.
func cachedGet(ctx context.Context, m *member.Member, key client.ObjectKey, obj client.Object) error {
	ctx, cancel := context.WithTimeout(ctx, cacheSyncWait)
	defer cancel()
	return m.Cached().Get(ctx, key, obj)
}

// read returns the member object as it is, read from the member apiserver, or nil when it
// does not exist.
func (r *Reconciler) read(ctx context.Context, m *member.Member, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(obj.GroupVersionKind())
	if err := m.Client.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return cur, nil
}

// retain returns the manifest to apply: obj with the fields the member owns kept from cur
// (the interpreter's rules: a Service's clusterIP and nodePorts, a PVC's volume, replicas
// under the retain-replicas label), and with the member's replicas while a
// HorizontalPodAutoscaler in the member scales the object. Replicas set in the member by
// anything else (`kubectl scale`, an edit) are drift and are put back; so are an HPA's once
// it is deleted (the member manager turns its deletion into an event of the object).
func (r *Reconciler) retain(ctx context.Context, m *member.Member, obj, cur *unstructured.Unstructured) (desired *unstructured.Unstructured, autoscaler string, err error) {
	if cur == nil {
		return obj.DeepCopy(), "", nil
	}
	desired, err = r.Interpreter.Retain(obj, cur)
	if err != nil {
		return nil, "", fmt.Errorf("%s %s: %w", obj.GetKind(), client.ObjectKeyFromObject(obj), err)
	}
	want, wantSet := memberobject.Replicas(desired)
	have, haveSet := memberobject.Replicas(cur)
	if !wantSet || !haveSet || want == have {
		return desired, "", nil
	}
	hpas, err := r.Members.Autoscalers(ctx, m.Name, obj.GetNamespace())
	if err != nil {
		return nil, "", fmt.Errorf("%s %s: its replicas differ in the member; cannot tell whether an HPA owns them: %w", obj.GetKind(), client.ObjectKeyFromObject(obj), err)
	}
	if autoscaler = memberobject.Autoscaler(cur, hpas); autoscaler != "" {
		if err := unstructured.SetNestedField(desired.Object, have, "spec", "replicas"); err != nil {
			return nil, "", err
		}
	}
	return desired, autoscaler, nil
}

func (r *Reconciler) knownNamespaces(cluster string, m *member.Member) *knownNamespaces {
	if v, ok := r.namespaces.Load(cluster); ok && v.(*knownNamespaces).member == m {
		return v.(*knownNamespaces)
	}
	k := &knownNamespaces{member: m}
	r.namespaces.Store(cluster, k)
	return k
}

func (r *Reconciler) forgetNamespace(cluster string, m *member.Member, ns string) {
	r.knownNamespaces(cluster, m).names.Delete(ns)
}

func (r *Reconciler) ensureNamespace(ctx context.Context, cluster string, m *member.Member, ns string) error {
	known := r.knownNamespaces(cluster, m)
	if _, ok := known.names.Load(ns); ok {
		return nil
	}
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if r.HostID != "" {
		// Not managed (no karmada.io/managed: no Work made it, and none deletes it), but
		// made by this host: a Work of the Namespace itself may take it over.
		n.Annotations = map[string]string{wellknown.HostIDAnnotation: r.HostID}
	}
	err := m.Client.Create(ctx, n)
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s in member: %w", ns, err)
	}
	known.names.Store(ns, struct{}{})
	return nil
}

// madeNamespace reports whether cur is a member namespace that ensureNamespace made for the
// objects of this host's Works: a Namespace template selected by a ClusterPropagationPolicy
// takes it over, whichever of the two came first.
func (r *Reconciler) madeNamespace(cur *unstructured.Unstructured) bool {
	return cur != nil && r.HostID != "" && cur.GroupVersionKind().GroupKind() == schema.GroupKind{Kind: "Namespace"} &&
		cur.GetLabels()[wellknown.ManagedLabel] != wellknown.ManagedLabelValue &&
		cur.GetAnnotations()[wellknown.HostIDAnnotation] == r.HostID
}

// finalize deletes the member objects, or releases them (see memberobject.ReleasePatch) when
// the Work preserves them, and then lets the Work go. A preserving Work marked
// wellknown.KeepManagedAnnotation, and any Work of a Cluster being deleted with its workloads
// kept, leaves them as they are. While the member is unreachable the Work waits (its finalizer
// stays) for the reconnect, unless its Cluster is going.
func (r *Reconciler) finalize(ctx context.Context, cluster string, work *workv1alpha1.Work) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(work, wellknown.ExecutionControllerFinalizer) {
		return ctrl.Result{}, nil
	}
	c, err := r.cluster(ctx, cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	going := c == nil || !c.DeletionTimestamp.IsZero()
	var each func(context.Context, *member.Member, *unstructured.Unstructured) error
	switch {
	case going && c != nil && c.Annotations[wellknown.KeepWorkloadsAnnotation] == "true":
	case ptr.Deref(work.Spec.PreserveResourcesOnDeletion, false):
		if work.Annotations[wellknown.KeepManagedAnnotation] != "true" {
			each = r.releaseOne
		}
	default:
		each = r.deleteOne
	}
	if each != nil {
		m, err := r.Members.Get(cluster)
		switch {
		case err != nil && going && r.answerSoon(cluster, c):
			ctrl.LoggerFrom(ctx).Info("Member of a Cluster being deleted not connected yet; Work deletion waits for it")
			return ctrl.Result{RequeueAfter: requestFailedRetry}, nil
		case err != nil && going:
			// The Cluster is gone or going and its member does not answer: there is no
			// member left to clean up.
		case err != nil:
			ctrl.LoggerFrom(ctx).Info("Member cluster unreachable; Work deletion waits for it")
			return ctrl.Result{RequeueAfter: memberDownRetry}, nil
		default:
			objs, err := manifests(work)
			if err != nil {
				return ctrl.Result{}, err
			}
			for _, obj := range objs {
				if err := each(ctx, m, obj); err != nil {
					if isMemberDown(err) && !going {
						return ctrl.Result{RequeueAfter: requestFailedRetry}, nil
					}
					if !going {
						return ctrl.Result{}, err
					}
					ctrl.LoggerFrom(ctx).Info("Cannot clean up a member object of a Cluster being deleted; leaving it", "error", err.Error())
				}
			}
		}
	}
	r.applied.Delete(work.UID)
	r.written.Delete(work.UID)
	r.established.Delete(work.UID)
	patch := client.MergeFrom(work.DeepCopy())
	controllerutil.RemoveFinalizer(work, wellknown.ExecutionControllerFinalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, work, patch))
}

// goingMemberGrace is how long after its Cluster's deletion a member that is not connected,
// or not found Down yet, gets to answer before the Works of the Cluster are released without
// cleaning up there.
const goingMemberGrace = time.Minute

// answerSoon says whether the member of a Cluster being deleted may still answer: its
// connection is being made (a manager that started during the deletion connects to it, see
// the cluster controller's finalize) or its probes have not found it Down yet, within
// goingMemberGrace of the deletion. Its Works then wait, so that its objects are deleted
// there rather than left behind.
func (r *Reconciler) answerSoon(name string, c *clusterv1alpha1.Cluster) bool {
	if c == nil || c.DeletionTimestamp.IsZero() || r.Members.Status(name).Down {
		return false
	}
	return time.Since(c.DeletionTimestamp.Time) < goingMemberGrace
}

// pulled handles, in the host's manager, a Work of a Pull Cluster: its agent applies and
// releases it. The one exception is a Work of a Pull Cluster being deleted whose agent is not
// Ready: no one is left to clean up the member, and the Work is released so that the Cluster
// can go (the member keeps what the Work put there, as for a Push member that is down).
func (r *Reconciler) pulled(ctx context.Context, c *clusterv1alpha1.Cluster, work *workv1alpha1.Work) (ctrl.Result, error) {
	if work.DeletionTimestamp == nil || c.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(work, wellknown.ExecutionControllerFinalizer) {
		return ctrl.Result{}, nil
	}
	if ready := meta.FindStatusCondition(c.Status.Conditions, wellknown.ClusterConditionReady); ready != nil && ready.Status == metav1.ConditionTrue {
		// The agent cleans up; look again in case it stops before it has.
		return ctrl.Result{RequeueAfter: memberDownRetry}, nil
	}
	ctrl.LoggerFrom(ctx).Info("Releasing a Work of a Pull Cluster being deleted whose agent is not ready; its member objects stay")
	patch := client.MergeFrom(work.DeepCopy())
	controllerutil.RemoveFinalizer(work, wellknown.ExecutionControllerFinalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, work, patch))
}

// deleteOne deletes the member object if it is still the one this Work manages.
func (r *Reconciler) deleteOne(ctx context.Context, m *member.Member, obj *unstructured.Unstructured) error {
	cur, err := r.current(ctx, m, obj)
	if cur == nil || err != nil {
		return err
	}
	err = m.Client.Delete(ctx, cur, client.Preconditions{UID: ptr.To(cur.GetUID())}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// releaseOne releases the member object a preserving Work leaves behind, if it is still the
// one this Work manages: it stays, without the labels and annotations that mark it as managed.
// A conflict (the object changed since it was read) is returned, and the next pass reads it
// again.
func (r *Reconciler) releaseOne(ctx context.Context, m *member.Member, obj *unstructured.Unstructured) error {
	cur, err := r.current(ctx, m, obj)
	if cur == nil || err != nil {
		return err
	}
	patch, ok := memberobject.ReleasePatch(cur)
	if !ok {
		return nil
	}
	err = m.Client.Patch(ctx, cur, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(wellknown.FieldManager))
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("release %s %s in the member: %w", obj.GetKind(), client.ObjectKeyFromObject(obj), err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Released a preserved member object", "kind", obj.GetKind(), "object", client.ObjectKeyFromObject(obj))
	return nil
}

// current reads the member object a Work made, and returns it only if it is still the one this
// Work manages (nil when it is gone, someone else's, or of a kind the member does not serve).
func (r *Reconciler) current(ctx context.Context, m *member.Member, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(obj.GroupVersionKind())
	if err := m.Client.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	if !memberobject.MayDelete(cur, obj, r.HostID) {
		return nil, nil // someone else's now
	}
	return cur, nil
}

// grantGroup adds group to the rights of the member credential when the member's RBAC refused
// a request of it (refused) because the group came after the credential's rules were made,
// and says whether to try again soon: it added the group, or another Work did a moment ago
// and the member's RBAC may not show it yet.
func (r *Reconciler) grantGroup(ctx context.Context, cluster string, m *member.Member, who join.Member, group string, refused error) bool {
	if !join.RefusedByRBAC(refused) || !join.Grantable(group) {
		return false
	}
	key := cluster + "/" + group
	granted, added, err := join.GrantGroup(ctx, m.Client, who.Access(), group)
	switch {
	case err != nil:
		ctrl.LoggerFrom(ctx).V(1).Info("Cannot add an API group to the member credential's rights", "group", group, "error", err.Error())
		return false
	case added:
		r.grantedGroups.Store(key, time.Now())
		ctrl.LoggerFrom(ctx).Info("Added an API group the member serves since the join to the member credential's rights", "group", group)
		return true
	case granted:
		// Another Work of the group added it a moment ago (maybe in the instant between its
		// write and its note of it): the first refusal seen after the rule is there starts the
		// wait for the member's RBAC to show it.
		at, seen := r.grantedGroups.LoadOrStore(key, time.Now())
		return !seen || time.Since(at) < grantSettle
	}
	return false
}

// memberOf describes the member credential of cluster for join.ExplainForbidden.
func (r *Reconciler) memberOf(ctx context.Context, cluster string) join.Member {
	m := join.Member{Cluster: cluster, Pull: r.Agent != ""}
	if c, err := r.cluster(ctx, cluster); err == nil && c != nil {
		m.Pull = m.Pull || c.Spec.SyncMode == clusterv1alpha1.Pull
		m.AllowRBACEscalation = c.Annotations[wellknown.AllowRBACEscalationAnnotation] == "true"
	}
	return m
}

// readyCluster reports whether the Cluster's Ready condition is True.
func (r *Reconciler) readyCluster(ctx context.Context, name string) bool {
	c, err := r.cluster(ctx, name)
	return err == nil && c != nil && meta.IsStatusConditionTrue(c.Status.Conditions, wellknown.ClusterConditionReady)
}

// cluster returns the Cluster, or nil when it is gone.
func (r *Reconciler) cluster(ctx context.Context, name string) (*clusterv1alpha1.Cluster, error) {
	c := &clusterv1alpha1.Cluster{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: name}, c); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return c, nil
}

// setApplied records the Applied condition (and the first manifest statuses), only when
// something changes.
func (r *Reconciler) setApplied(ctx context.Context, work *workv1alpha1.Work, status metav1.ConditionStatus, reason, msg string, statuses ...workv1alpha1.ManifestStatus) error {
	cond := metav1.Condition{Type: wellknown.WorkConditionApplied, Status: status, Reason: reason, Message: msg,
		ObservedGeneration: work.Generation}
	// The cached Work may not show our last write yet: what we wrote last, when we did, is
	// the condition (this controller is its only writer), so a condition is neither left as
	// it was because a stale copy already looked right, nor written again because a stale
	// copy did not show it yet.
	if len(statuses) == 0 {
		if last, written := r.written.Load(work.UID); written {
			if sameCondition(last, cond) {
				return nil
			}
		} else if c := meta.FindStatusCondition(work.Status.Conditions, wellknown.WorkConditionApplied); c != nil && sameCondition(*c, cond) {
			return nil
		}
	}
	// Success is reported once per binding sync by the binding controller; failures here.
	if status == metav1.ConditionFalse {
		r.Recorder.Eventf(work, nil, corev1.EventTypeWarning, wellknown.EventReasonSyncWorkloadFailed, "Apply", "%s", msg)
	}
	// The execution controller is the only writer of Work conditions, and the work-status
	// controller of manifestStatuses once they exist, so a merge patch of just these fields
	// cannot overwrite anyone. The patch always carries them: it is computed against a copy
	// without them, not against the cached Work, which may still show the condition as it was
	// before our last write (a patch against it would be empty, and the host would keep that
	// write's value).
	before := work.DeepCopy()
	meta.RemoveStatusCondition(&before.Status.Conditions, wellknown.WorkConditionApplied)
	meta.SetStatusCondition(&work.Status.Conditions, cond)
	if len(statuses) > 0 {
		before.Status.ManifestStatuses = nil
		work.Status.ManifestStatuses = statuses
	}
	if err := r.Client.Status().Patch(ctx, work, client.MergeFrom(before)); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.written.Store(work.UID, cond)
	return nil
}

func sameCondition(a, b metav1.Condition) bool {
	return a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message && a.ObservedGeneration == b.ObservedGeneration
}

// isMemberDown reports errors that mean the member is unreachable rather than that the apply
// is wrong.
func isMemberDown(err error) bool {
	return errors.Is(err, member.ErrNotConnected) || apierrors.IsServiceUnavailable(err) ||
		apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || isConnRefused(err)
}
