package cluster

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

const (
	// ConnectorName names the connector controller and its logger.
	ConnectorName = "cluster-connector"
	// connectorRetry is when a member that could not be connected is tried again.
	connectorRetry = 30 * time.Second
)

// connector connects this replica to every Push member, on every replica of a sharded
// manager: each replica applies the Works of its own shards, on any member. It only
// connects; the Cluster's status, taints, execution namespace and finalizer stay with the
// cluster controller on the leader. Connect is idempotent, so on the leader the two share
// one connection.
type connector struct {
	// r is a Reconciler of the connector's own (never registered), for its credential and
	// connection phases and the memory they keep.
	r *Reconciler
}

// Reconcile connects the member of one Cluster, and disconnects it once the Cluster is gone.
// A Cluster being deleted keeps its connection: its Works are removed from the member first.
func (c *connector) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cluster := &clusterv1alpha1.Cluster{}
	if err := c.r.Client.Get(ctx, req.NamespacedName, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			c.r.Members.Remove(req.Name)
			c.r.members.Delete(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if cluster.Spec.SyncMode == clusterv1alpha1.Pull {
		return ctrl.Result{}, nil
	}
	health, _, err := c.r.connect(ctx, cluster, c.r.state(cluster.Name))
	if err != nil {
		return ctrl.Result{}, err
	}
	if health.ConnectError != nil {
		ctrl.LoggerFrom(ctx).Info("Cannot connect to the member; the cluster controller reports why on the Cluster", "error", health.ConnectError.Error())
		return ctrl.Result{RequeueAfter: connectorRetry}, nil
	}
	return ctrl.Result{}, nil
}

// setupConnector registers the connector. It uses the Secret index the cluster controller
// registers.
func (r *Reconciler) setupConnector(mgr ctrl.Manager) error {
	c := &connector{r: &Reconciler{Client: r.Client, APIReader: r.APIReader, Members: r.Members}}
	return ctrl.NewControllerManagedBy(mgr).Named(ConnectorName).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.opts.Workers, NeedLeaderElection: ptr.To(false)}).
		For(&clusterv1alpha1.Cluster{}, builder.WithPredicates(specOrLifecycleChanged())).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.clustersUsingSecret)).
		Complete(c)
}
