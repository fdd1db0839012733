package framework

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
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

// MemberReport describes, for a failure message, what a member does with a namespace's
// workloads: its Nodes (Ready, taints), the namespace's pods (node, phase, Ready) and its
// latest events.
func (e *Env) MemberReport(ctx context.Context, member, namespace string) string {
	c := e.Members[member]
	var b strings.Builder
	fmt.Fprintf(&b, "member %s:\n", member)
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes); err != nil {
		fmt.Fprintf(&b, "  nodes: %v\n", err)
	}
	for _, n := range nodes.Items {
		ready := "?"
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				ready = fmt.Sprintf("%s (heartbeat %s)", cond.Status, cond.LastHeartbeatTime.Format("15:04:05"))
			}
		}
		fmt.Fprintf(&b, "  node %s Ready=%s taints=%v\n", n.Name, ready, n.Spec.Taints)
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(namespace)); err != nil {
		fmt.Fprintf(&b, "  pods: %v\n", err)
	}
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "  pod %s node=%q phase=%s conditions=%v\n", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions)
	}
	events := &corev1.EventList{}
	if err := c.List(ctx, events, client.InNamespace(namespace)); err == nil {
		for _, ev := range events.Items {
			fmt.Fprintf(&b, "  event %s %s %s/%s: %s\n", ev.LastTimestamp.Format("15:04:05"), ev.Reason, ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Message)
		}
	}
	return b.String()
}

// EventuallyMemberSettled waits until a member whose apiserver was down runs new workloads
// again: its kube-controller-manager gives a new namespace its default ServiceAccount (its
// informers retry with a backoff of up to half a minute after the apiserver comes back) and a
// one-replica Deployment there becomes Ready (the scheduler and kwok are back too). Specs that
// stop a member's apiserver call it, so the specs after them find the fleet as they expect.
func (e *Env) EventuallyMemberSettled(ctx context.Context, member string) {
	c := e.Members[member]
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "settle-"}}
	Expect(c.Create(ctx, ns)).To(Succeed())
	defer func() { _ = c.Delete(context.WithoutCancel(ctx), ns) }()
	labels := map[string]string{"app": "settle"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "settle"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "settle", Image: "settle"}}}}}}
	Expect(c.Create(ctx, d)).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		g.Expect(d.Status.ReadyReplicas).To(Equal(int32(1)))
	}).WithContext(ctx).WithTimeout(3*time.Minute).Should(Succeed(), func() string { return e.MemberReport(ctx, member, ns.Name) })
}
