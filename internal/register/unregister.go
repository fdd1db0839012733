package register

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/internal/agentauth"
	"github.com/flotilla-io/flotilla/internal/join"
)

// UnregisterOptions say what to unregister.
type UnregisterOptions struct {
	// Name of the Cluster.
	Name string
	// Member is an admin REST config of the member.
	Member *rest.Config
	// Host, if set, is a REST config with rights to delete the Cluster in the host. Without
	// it the Cluster must be gone already (`kubectl delete cluster NAME` in the host).
	Host *rest.Config
	// Timeout bounds the wait for the Cluster to go; default DefaultTimeout.
	Timeout time.Duration
}

// Unregister deletes the Cluster in the host and waits until it is gone (the agent, still
// running, removes what its Works put in the member; the host's cluster controller removes
// the execution namespace and the agent's rights there), then removes everything register
// made in the member: the agent's Deployment, credential, leader election Lease,
// ServiceAccount, ClusterRole, ClusterRoleBinding and guard. Objects already gone are skipped.
func Unregister(ctx context.Context, o UnregisterOptions) ([]string, error) {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	scheme := flotillascheme.New()
	member, err := client.New(o.Member, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	var removed []string
	if o.Host != nil {
		host, err := client.New(o.Host, client.Options{Scheme: scheme})
		if err != nil {
			return nil, err
		}
		c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: o.Name}}
		if err := host.Delete(ctx, c); err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("delete Cluster %s in the host: %w", o.Name, err)
		}
		err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, o.Timeout, true, func(ctx context.Context) (bool, error) {
			err := host.Get(ctx, types.NamespacedName{Name: o.Name}, &clusterv1alpha1.Cluster{})
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		})
		if err != nil {
			return nil, fmt.Errorf("cluster %s did not go within %s (its agent removes what it propagated first): %w", o.Name, o.Timeout, err)
		}
		removed = append(removed, "Cluster "+o.Name+" (host)")
	} else if gone, err := clusterGone(ctx, member, o.Name); err != nil {
		return nil, err
	} else if !gone {
		return nil, fmt.Errorf("cluster %s still exists in the host: delete it there first (`kubectl delete cluster %s`), or give --host-kubeconfig", o.Name, o.Name)
	}
	ns := agentauth.SystemNamespace
	for _, obj := range []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: Deployment}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: agentauth.HostSecret}},
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: agentauth.LeaderElectionID}},
	} {
		err := member.Delete(ctx, obj)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return removed, fmt.Errorf("delete %T %s in the member: %w", obj, client.ObjectKeyFromObject(obj), err)
		default:
			removed = append(removed, fmt.Sprintf("%T %s (member)", obj, client.ObjectKeyFromObject(obj)))
		}
	}
	access, err := join.RemoveMemberAccess(ctx, member, agentauth.AgentServiceAccount)
	for _, r := range access {
		removed = append(removed, r+" (member)")
	}
	if err != nil {
		return removed, fmt.Errorf("%w in the member", err)
	}
	return removed, nil
}

// clusterGone asks the host, with the agent's own credential, whether its Cluster is gone. A
// credential the host rejects means the agent's identity is gone with it.
func clusterGone(ctx context.Context, member client.Client, name string) (bool, error) {
	s := &corev1.Secret{}
	if err := member.Get(ctx, types.NamespacedName{Namespace: agentauth.SystemNamespace, Name: agentauth.HostSecret}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}
	cfg := &rest.Config{Host: string(s.Data[agentauth.SecretKeyServer]), BearerToken: string(s.Data[agentauth.SecretKeyToken]),
		TLSClientConfig: rest.TLSClientConfig{CAData: s.Data[agentauth.SecretKeyCA]}, Timeout: 30 * time.Second}
	host, err := client.New(cfg, client.Options{Scheme: flotillascheme.New()})
	if err != nil {
		return false, err
	}
	err = host.Get(ctx, types.NamespacedName{Name: name}, &clusterv1alpha1.Cluster{})
	switch {
	case err == nil:
		return false, nil
	case apierrors.IsNotFound(err) || apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err):
		return true, nil
	}
	return false, fmt.Errorf("ask the host whether Cluster %s is gone: %w", name, err)
}
