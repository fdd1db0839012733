package cluster

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/agentauth"
)

// HeartbeatFieldOwner is the field manager of the Ready condition the controller writes for a
// Pull member whose agent stopped renewing its Lease. The agent owns the rest of the status.
const HeartbeatFieldOwner = "flotilla-cluster-heartbeat"

// Pull members have an agent that applies their Works and reports their status (cmd/agent).
// The controller never connects to them. Its phases for a Pull Cluster:
//
//   - access: the agent's ServiceAccount and rights in the host (agentauth.HostObjects) and
//     the host's id on the Cluster;
//   - exchange: while the Cluster names a bootstrap token (agentauth.BootstrapTokenAnnotation:
//     the one that registered it, or one made to re-register it) and its agent is not
//     reporting, the binding that lets that token fetch the agent's credential. Once the
//     agent reports, the token is consumed: the binding, the token's ServiceAccount and
//     ClusterRoleBinding, and the annotation go;
//   - heartbeat: the agent renews a Lease in the execution namespace. While it does, the
//     Ready condition is the agent's. Once the Lease is older than its duration (the agent's
//     heartbeat interval times the failure threshold, as for a Push member's probes), Ready
//     is Unknown: the control plane cannot tell how the member is;
//   - taints, as for Push members, from the Ready condition.

// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;create;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings;clusterroles;clusterrolebindings,verbs=get;create;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=flotilla:agent;flotilla:agent-exchange
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get

func (r *Reconciler) reconcilePull(ctx context.Context, cluster *clusterv1alpha1.Cluster) (ctrl.Result, error) {
	r.Members.Disconnect(cluster.Name) // in case it was Push before
	st := r.state(cluster.Name)
	if err := r.agentAccess(ctx, cluster, st); err != nil {
		return ctrl.Result{}, err
	}
	lease, err := r.heartbeat(ctx, cluster.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	ready, stale := pullReady(cluster, lease, r.Clock.Now())
	if err := r.exchange(ctx, cluster, st, lease != nil && !stale); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.syncTaints(ctx, cluster, ready.Status); err != nil {
		return ctrl.Result{}, err
	}
	if stale {
		cur := meta.FindStatusCondition(cluster.Status.Conditions, wellknown.ClusterConditionReady)
		if cur == nil || cur.Status != ready.Status || cur.Reason != ready.Reason || cur.Message != ready.Message {
			ready.ObservedGeneration = cluster.Generation
			ready.LastTransitionTime = metav1.NewTime(r.Clock.Now())
			if err := r.applyReady(ctx, cluster.Name, ready); err != nil {
				return ctrl.Result{}, fmt.Errorf("update status: %w", err)
			}
		}
	}
	r.reportReadiness(ctx, cluster, st, ready)
	return ctrl.Result{RequeueAfter: r.opts.ProbeInterval}, nil
}

// pullReady returns the Ready condition of a Pull member: the agent's while its Lease is
// fresh, else Unknown (stale is then true: the controller writes it).
func pullReady(cluster *clusterv1alpha1.Cluster, lease *coordinationv1.Lease, now time.Time) (ready metav1.Condition, stale bool) {
	cur := meta.FindStatusCondition(cluster.Status.Conditions, wellknown.ClusterConditionReady)
	unknown := metav1.Condition{Type: wellknown.ClusterConditionReady, Status: metav1.ConditionUnknown, Reason: wellknown.ClusterReasonNotReachable}
	switch {
	case lease == nil || lease.Spec.RenewTime == nil:
		unknown.Message = fmt.Sprintf("No agent has reported yet: run `kubectl flotilla token create %s` in the host, and the `kubectl flotilla register %s ...` command it prints in the member cluster",
			cluster.Name, cluster.Name)
		return unknown, true
	}
	duration := time.Duration(ptrInt32(lease.Spec.LeaseDurationSeconds)) * time.Second
	if duration <= 0 {
		duration = 40 * time.Second
	}
	if age := now.Sub(lease.Spec.RenewTime.Time); age > duration {
		unknown.Message = fmt.Sprintf("The agent has not renewed its Lease %s/%s for %s (its duration is %s)",
			lease.Namespace, lease.Name, age.Round(time.Second), duration)
		if age > credentialHint {
			unknown.Message += fmt.Sprintf(". If it was offline past its credential's expiry (7 days by default) it cannot come back by itself: "+
				"run `kubectl flotilla token create %s` in the host and the register command it prints in the member", cluster.Name)
		}
		return unknown, true
	}
	if cur == nil {
		return metav1.Condition{Type: wellknown.ClusterConditionReady, Status: metav1.ConditionUnknown, Reason: wellknown.ClusterReasonNotReachable,
			Message: "Waiting for the agent's first status report"}, false
	}
	return *cur, false
}

func ptrInt32(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// heartbeat returns the agent's Lease, or nil when there is none. It is read from the
// apiserver: the manager does not watch Leases (the host's nodes renew theirs all the time).
func (r *Reconciler) heartbeat(ctx context.Context, cluster string) (*coordinationv1.Lease, error) {
	lease := &coordinationv1.Lease{}
	key := types.NamespacedName{Namespace: wellknown.ExecutionNamespace(cluster), Name: agentauth.HeartbeatLease}
	if err := r.APIReader.Get(ctx, key, lease); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read the agent's Lease %s: %w", key, err)
	}
	return lease, nil
}

// agentAccess keeps the agent's ServiceAccount and rights in the host, and the host's id on
// the Cluster. The objects are applied once per Cluster per manager (and after any failure):
// they are the controller's alone, and applying them again every probe would only cost the
// host requests.
func (r *Reconciler) agentAccess(ctx context.Context, cluster *clusterv1alpha1.Cluster, st *memberState) error {
	if cluster.Annotations[agentauth.HostIDAnnotation] != r.HostID && r.HostID != "" {
		patch := client.MergeFrom(cluster.DeepCopy())
		if cluster.Annotations == nil {
			cluster.Annotations = map[string]string{}
		}
		cluster.Annotations[agentauth.HostIDAnnotation] = r.HostID
		if err := r.Client.Patch(ctx, cluster, patch); err != nil {
			return fmt.Errorf("record the host id on the Cluster: %w", err)
		}
	}
	if st.accessFor == cluster.UID {
		return nil
	}
	sa, rb, cr, crb := agentauth.HostObjects(cluster.Name)
	owner := metav1.NewControllerRef(cluster, clusterv1alpha1.GroupVersion.WithKind("Cluster"))
	cr.OwnerReferences, crb.OwnerReferences = []metav1.OwnerReference{*owner}, []metav1.OwnerReference{*owner}
	for _, obj := range []client.Object{sa, rb, cr, crb} {
		if err := r.apply(ctx, obj); err != nil {
			r.Recorder.Eventf(cluster, nil, corev1.EventTypeWarning, wellknown.EventReasonAgentAccessFailed, "GrantAgentAccess",
				"Cannot grant the agent its rights in the host: %v", err)
			return err
		}
	}
	ctrl.LoggerFrom(ctx).Info("Granted the Pull agent its rights in the host", "user", agentauth.AgentUser(cluster.Name))
	st.accessFor = cluster.UID
	return nil
}

// credentialHint is how long an agent must have been silent before its Cluster's Ready
// message tells how to give it a new credential.
const credentialHint = time.Hour

// exchange binds the bootstrap token the Cluster names to the right to ask for a token of its
// agent while the agent is not reporting; once it reports, it consumes the token.
func (r *Reconciler) exchange(ctx context.Context, cluster *clusterv1alpha1.Cluster, st *memberState, reporting bool) error {
	id := cluster.Annotations[agentauth.BootstrapTokenAnnotation]
	if id != "" && reporting {
		return r.consumeBootstrapToken(ctx, cluster, st, id)
	}
	if st.exchangeFor != nil && *st.exchangeFor == id {
		return nil
	}
	rb := agentauth.ExchangeBinding(cluster.Name, id)
	if id != "" {
		if err := r.apply(ctx, rb); err != nil {
			return err
		}
		ctrl.LoggerFrom(ctx).Info("Bound the bootstrap token to its agent's credential", "token", id)
	} else if err := r.Client.Delete(ctx, rb); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove the bootstrap token's binding %s/%s: %w", rb.Namespace, rb.Name, err)
	}
	st.exchangeFor = &id
	return nil
}

// consumeBootstrapToken ends bootstrap token id once the agent it fetched a credential for
// reports: its exchange binding, its ServiceAccount (which invalidates the token) and
// ClusterRoleBinding, and the Cluster's annotation naming it. A token is good for one
// registration.
func (r *Reconciler) consumeBootstrapToken(ctx context.Context, cluster *clusterv1alpha1.Cluster, st *memberState, id string) error {
	for _, obj := range []client.Object{
		agentauth.ExchangeBinding(cluster.Name, id),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: agentauth.SystemNamespace, Name: agentauth.BootstrapServiceAccount(id)}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: agentauth.BootstrapBinding(id)}},
	} {
		if err := r.Client.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("consume bootstrap token %s: delete %T %s: %w", id, obj, client.ObjectKeyFromObject(obj), err)
		}
	}
	empty := ""
	st.exchangeFor = &empty
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:null}}}`, agentauth.BootstrapTokenAnnotation))
	if err := r.Client.Patch(ctx, cluster, patch); err != nil {
		return fmt.Errorf("consume bootstrap token %s: remove its annotation: %w", id, err)
	}
	ctrl.LoggerFrom(ctx).Info("The agent reports: consumed its bootstrap token", "token", id)
	r.Recorder.Eventf(cluster, nil, corev1.EventTypeNormal, wellknown.EventReasonBootstrapTokenConsumed, "ConsumeBootstrapToken",
		"The agent reports with the credential bootstrap token %s fetched; the token is deleted (a token registers its cluster once)", id)
	return nil
}

func (r *Reconciler) apply(ctx context.Context, obj client.Object) error {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: content}
	if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, client.ObjectKeyFromObject(obj), err)
	}
	return nil
}

// applyReady writes the Ready condition of a Pull member whose agent is silent.
func (r *Reconciler) applyReady(ctx context.Context, name string, ready metav1.Condition) error {
	return r.applyStatusAs(ctx, name, &clusterv1alpha1.ClusterStatus{Conditions: []metav1.Condition{ready}}, HeartbeatFieldOwner)
}

// removeAgentAccess deletes the agent's cluster-scoped rights; the execution namespace takes
// the namespaced ones with it.
func (r *Reconciler) removeAgentAccess(ctx context.Context, cluster *clusterv1alpha1.Cluster) error {
	name := agentauth.AgentClusterRoleName(cluster.Name)
	for _, obj := range []client.Object{&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}}, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}}} {
		if err := r.Client.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete the agent's %T %s: %w", obj, name, err)
		}
	}
	return nil
}
