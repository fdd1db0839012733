package join

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/api/wellknown"
)

const (
	// DefaultUnjoinTimeout bounds the wait for a deleted Cluster to go: the cluster
	// controller first deletes its Works, which the execution controller cleans up in the
	// member.
	DefaultUnjoinTimeout = 2 * time.Minute
	// unjoinPollInterval is how often Unjoin checks whether the Cluster is gone.
	unjoinPollInterval = 500 * time.Millisecond
)

// UnjoinOptions say what to unjoin.
type UnjoinOptions struct {
	// Name of the Cluster.
	Name string
	// Host is a REST config with rights to delete Clusters and Secrets in the host.
	Host *rest.Config
	// Member, if set, is an admin REST config of the member, to remove the ServiceAccount,
	// ClusterRole, ClusterRoleBinding and guard join made there. Without it they are left (and the
	// ServiceAccount's tokens keep working until they expire).
	Member *rest.Config
	// Timeout bounds the wait for the Cluster to go; default DefaultUnjoinTimeout.
	Timeout time.Duration
	// KeepWorkloads leaves the objects Flotilla propagated to the member in place (orphaned,
	// still labelled karmada.io/managed) instead of deleting them with the Cluster's Works.
	KeepWorkloads bool
}

// UnjoinResult is what Unjoin removed and what it left.
type UnjoinResult struct {
	// Removed lists the objects deleted, as "Kind namespace/name (cluster)".
	Removed []string
	// NotRemoved lists what join makes in the member, when Unjoin had no member kubeconfig
	// to remove it with. They may be gone already: Unjoin could not look.
	NotRemoved []string
}

// Unjoin deletes the Cluster and waits until the cluster controller has let it go (its Works
// and execution namespace deleted), then deletes the host Secret and, given the member's
// kubeconfig, what join created in the member. Objects already gone are skipped, so Unjoin
// can be run again after a partial failure.
func Unjoin(ctx context.Context, o UnjoinOptions) (*UnjoinResult, error) {
	if err := ValidateName(o.Name); err != nil {
		return nil, err
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultUnjoinTimeout
	}
	hostSide := side{role: "host", endpoint: o.Host.Host, flag: "--kubeconfig"}
	host, _, err := newClient(o.Host, flotillascheme.New())
	if err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	res := &UnjoinResult{}

	cluster := &clusterv1alpha1.Cluster{}
	if err := host.Get(ctx, client.ObjectKey{Name: o.Name}, cluster); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, hostSide.explain(err, "read Cluster "+o.Name)
		}
		cluster = nil
	}

	var member *clients
	if o.Member != nil {
		if member, err = connect(o.Host, o.Member); err != nil {
			return nil, err
		}
		id, err := member.memberID(ctx)
		if err != nil {
			return nil, err
		}
		if cluster != nil && cluster.Spec.ID != "" && cluster.Spec.ID != id {
			return nil, newError(ErrWrongMember, "the member kubeconfig is for member %s, but Cluster %q is member %s (%s): "+
				"give the kubeconfig of that member, or none to leave its ServiceAccount in place", id, o.Name, cluster.Spec.ID, cluster.Spec.APIEndpoint)
		}
	}

	if cluster != nil {
		if o.KeepWorkloads && cluster.Annotations[wellknown.KeepWorkloadsAnnotation] != "true" {
			// Set before the deletion: the execution controller reads it when it releases
			// the Works of a Cluster being deleted.
			patch := client.MergeFrom(cluster.DeepCopy())
			if cluster.Annotations == nil {
				cluster.Annotations = map[string]string{}
			}
			cluster.Annotations[wellknown.KeepWorkloadsAnnotation] = "true"
			if err := host.Patch(ctx, cluster, patch); err != nil && !apierrors.IsNotFound(err) {
				return nil, hostSide.explain(err, "annotate Cluster "+o.Name+" to keep its workloads")
			}
		}
		if err := deleteCluster(ctx, host, cluster, o.Timeout); err != nil {
			return nil, hostSide.explain(err, "delete Cluster "+o.Name)
		}
		res.Removed = append(res.Removed, "Cluster "+o.Name+" (host)")
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: wellknown.SystemNamespace}}
	if removed, err := remove(ctx, host, secret); err != nil {
		return nil, hostSide.explain(err, "delete Secret "+describe(secret))
	} else if removed {
		res.Removed = append(res.Removed, "Secret "+describe(secret)+" (host)")
	}

	access := wellknown.MemberAccessName(o.Name)
	if member == nil {
		policy, policyBinding := MemberGuard(access, nil, false)
		sa, cr, crb := MemberAccessObjects(access, nil, nil, false)
		for _, obj := range []client.Object{crb, cr, sa, policyBinding, policy} {
			res.NotRemoved = append(res.NotRemoved, obj.GetObjectKind().GroupVersionKind().Kind+" "+describe(obj))
		}
		return res, nil
	}
	removed, err := RemoveMemberAccess(ctx, member.member, access)
	for _, r := range removed {
		res.Removed = append(res.Removed, r+" (member)")
	}
	if err != nil {
		return res, member.memberSide.explain(err, "remove what join made")
	}
	return res, nil
}

// deleteCluster deletes the Cluster and waits until it is gone.
func deleteCluster(ctx context.Context, host client.Client, cluster *clusterv1alpha1.Cluster, timeout time.Duration) error {
	if err := host.Delete(ctx, cluster); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	err := wait.PollUntilContextTimeout(ctx, unjoinPollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		err := host.Get(ctx, client.ObjectKeyFromObject(cluster), &clusterv1alpha1.Cluster{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil && wait.Interrupted(err) {
		return fmt.Errorf("the Cluster %s is still there after %s: the cluster controller lets it go once its Works in %s are gone "+
			"(is the Flotilla operator running? `kubectl get works -n %s` shows what is left); run unjoin again to keep waiting",
			cluster.Name, timeout, wellknown.ExecutionNamespace(cluster.Name), wellknown.ExecutionNamespace(cluster.Name))
	}
	return err
}

// remove deletes obj and reports whether it was there.
func remove(ctx context.Context, cl client.Client, obj client.Object) (bool, error) {
	err := cl.Delete(ctx, obj)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

func describe(obj client.Object) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}
