package cluster

import (
	"context"
	"errors"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/agentauth"
	"github.com/flotilla-io/flotilla/internal/hostclient"
)

// IndexClusterBySecret indexes Clusters by the "namespace/name" of the Secret their
// spec.secretRef names.
const IndexClusterBySecret = "spec.secretRef"

// SetupWithManager registers the controller and its field index with mgr. Members must be
// set; Client, APIReader, Recorder and Clock default to the manager's and the real clock.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if r.Members == nil {
		return errors.New("cluster controller: Members (the member connection manager) is not set")
	}
	r.opts = opts.withDefaults()
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder(ControllerName)
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.HostID == "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		id, err := hostclient.HostID(ctx, mgr.GetAPIReader())
		if err != nil {
			return err
		}
		r.HostID = id
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &clusterv1alpha1.Cluster{}, IndexClusterBySecret, secretRefKey); err != nil {
		return err
	}
	r.collections = make(chan event.GenericEvent, 1024)
	byName := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if _, ok := o.(*clusterv1alpha1.Cluster); !ok {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetName()}}}
	})
	if r.opts.ConnectEveryReplica {
		if err := r.setupConnector(mgr); err != nil {
			return err
		}
	}
	return ctrl.NewControllerManagedBy(mgr).Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.opts.Workers}).
		For(&clusterv1alpha1.Cluster{}, builder.WithPredicates(specOrLifecycleChanged())).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.clustersUsingSecret)).
		// Probes and status collection run on goroutines of their own; their results come
		// back through these sources (the member manager's health events and a channel).
		WatchesRawSource(r.Members.HealthSource(ControllerName, byName)).
		WatchesRawSource(source.Channel(r.collections, byName)).
		Complete(r)
}

func secretRefKey(o client.Object) []string {
	ref := o.(*clusterv1alpha1.Cluster).Spec.SecretRef
	if ref == nil {
		return nil
	}
	return []string{types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}.String()}
}

// specOrLifecycleChanged passes Cluster events other than status updates: the controller's
// own status writes must not wake it again (it comes back after ProbeInterval anyway). A
// change of Ready passes: a Pull member's agent writes it, and the taints follow at once; so
// does a change of the bootstrap token a Pull Cluster names, whose exchange opens at once.
func specOrLifecycleChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld, e.ObjectNew
			return o.GetGeneration() != n.GetGeneration() ||
				!o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp()) ||
				!slices.Equal(o.GetFinalizers(), n.GetFinalizers()) ||
				readyStatus(o) != readyStatus(n) ||
				o.GetAnnotations()[agentauth.BootstrapTokenAnnotation] != n.GetAnnotations()[agentauth.BootstrapTokenAnnotation]
		},
	}
}

// clustersUsingSecret maps a Secret to the Clusters whose spec.secretRef names it, so that a
// rotated token reconnects at once.
func (r *Reconciler) clustersUsingSecret(ctx context.Context, secret client.Object) []reconcile.Request {
	clusters := &clusterv1alpha1.ClusterList{}
	key := types.NamespacedName{Namespace: secret.GetNamespace(), Name: secret.GetName()}.String()
	if err := r.Client.List(ctx, clusters, client.MatchingFields{IndexClusterBySecret: key}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Cannot list the Clusters that use a Secret", "Secret", key)
		return nil
	}
	out := make([]reconcile.Request, 0, len(clusters.Items))
	for i := range clusters.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: clusters.Items[i].Name}})
	}
	return out
}

func readyStatus(o client.Object) metav1.ConditionStatus {
	c, ok := o.(*clusterv1alpha1.Cluster)
	if !ok {
		return ""
	}
	if cond := meta.FindStatusCondition(c.Status.Conditions, wellknown.ClusterConditionReady); cond != nil {
		return cond.Status
	}
	return ""
}
