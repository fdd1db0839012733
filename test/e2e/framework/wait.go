package framework

import (
	"context"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
)

// EventuallyClustersReady waits until the named Clusters are Ready.
func EventuallyClustersReady(ctx context.Context, host client.Client, names ...string) {
	for _, n := range names {
		EventuallyWithOffset(1, func(g Gomega) {
			c := &clusterv1alpha1.Cluster{}
			g.Expect(host.Get(ctx, types.NamespacedName{Name: n}, c)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(c.Status.Conditions, wellknown.ClusterConditionReady)).To(BeTrue(), "Cluster %s is not Ready: %+v", n, c.Status.Conditions)
		}).WithContext(ctx).Should(Succeed())
	}
}

// Replicas is what a member runs of a Deployment: spec replicas and ready replicas; -1 when
// the Deployment does not exist there.
type Replicas struct{ Spec, Ready int32 }

// DeploymentReplicas reads a Deployment's replicas in every member.
func (e *Env) DeploymentReplicas(ctx context.Context, namespace, name string) map[string]Replicas {
	out := map[string]Replicas{}
	for m, c := range e.Members {
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, d); err != nil {
			out[m] = Replicas{Spec: -1, Ready: -1}
			continue
		}
		spec := int32(1)
		if d.Spec.Replicas != nil {
			spec = *d.Spec.Replicas
		}
		out[m] = Replicas{Spec: spec, Ready: d.Status.ReadyReplicas}
	}
	return out
}
