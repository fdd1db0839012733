package e2e

import (
	"context"
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	mcscontroller "github.com/flotilla-io/flotilla/controllers/mcs"
	"github.com/flotilla-io/flotilla/internal/mcs"
)

// A Service and Deployment propagated to member1 and member2 with a ServiceExport beside them
// (all three are templates of one policy) are imported into member3: kube-controller-manager
// builds the providers' EndpointSlices from kwok's pods, and member3 gets a ServiceImport, a
// derived Service and EndpointSlices with the providers' pod IPs.
var _ = Describe("Multi-cluster services", func() {
	It("imports a Service exported from member1 and member2 into member3, follows scaling and pod deletion, and cleans up when the export goes", func(ctx context.Context) {
		ns := templateNamespace(ctx, "e2e-mcs")
		providers := []string{"member1", "member2"}
		web := deploymentTemplate(ns, "web", 2)
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
		}}
		export := &mcsv1alpha1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
		Expect(env.Host.Create(ctx, web)).To(Succeed())
		Expect(env.Host.Create(ctx, svc)).To(Succeed())
		// The platform engineer installs the MCS CRDs in the host (the operator installs them
		// into members only).
		Expect(mcscontroller.EnsureCRDs(ctx, env.Host)).To(Succeed())
		Eventually(func() error { return env.Host.Create(ctx, export) }).WithContext(ctx).Should(Succeed())
		Expect(env.Host.Create(ctx, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{
					{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
					{APIVersion: "v1", Kind: "Service", Name: "web"},
					// The template is watched at the CRD's preferred version, and selectors
					// match the apiVersion exactly.
					{APIVersion: "multicluster.x-k8s.io/v1beta1", Kind: "ServiceExport", Name: "web"},
				},
				Placement: policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: providers}},
			}})).To(Succeed())

		consumer := env.Members["member3"]
		By("member3 imports the providers' pod IPs")
		Eventually(func(g Gomega) {
			g.Expect(importedIPs(ctx, g, consumer, ns)).To(ConsistOf(providerPodIPs(ctx, g, ns, providers)))
			g.Expect(providerPodIPs(ctx, g, ns, providers)).To(HaveLen(4))
		}).WithContext(ctx).Should(Succeed())
		imp := &mcsv1alpha1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
		derived := &corev1.Service{}
		Eventually(func(g Gomega) {
			g.Expect(consumer.Get(ctx, client.ObjectKey{Namespace: ns, Name: mcs.DerivedServiceName("web")}, derived)).To(Succeed())
			g.Expect(consumer.Get(ctx, client.ObjectKeyFromObject(imp), imp)).To(Succeed())
			g.Expect(imp.Spec.IPs).To(ConsistOf(derived.Spec.ClusterIP))
		}).WithContext(ctx).Should(Succeed())
		Expect(imp.Spec.Type).To(Equal(mcsv1alpha1.ClusterSetIP))
		Expect(imp.Spec.Ports).To(ConsistOf(mcsv1alpha1.ServicePort{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}))
		Expect(derived.Spec.Selector).To(BeEmpty())
		slicesOf := derivedSlices(ctx, Default, consumer, ns)
		sources := map[string]bool{}
		for _, s := range slicesOf {
			sources[s.Labels[mcsv1alpha1.LabelSourceCluster]] = true
			Expect(s.Labels).To(HaveKeyWithValue(discoveryv1.LabelServiceName, mcs.DerivedServiceName("web")))
		}
		Expect(sources).To(Equal(map[string]bool{"member1": true, "member2": true}))
		By("the exports report no conflict")
		Eventually(func(g Gomega) {
			e := &mcsv1alpha1.ServiceExport{}
			g.Expect(env.Members["member1"].Get(ctx, client.ObjectKeyFromObject(export), e)).To(Succeed())
			g.Expect(e.Status.Conditions).To(ContainElement(And(
				HaveField("Type", string(mcsv1alpha1.ServiceExportConditionConflict)), HaveField("Status", metav1.ConditionFalse))))
			g.Expect(e.Status.Conditions).To(ContainElement(And(
				HaveField("Type", string(mcsv1alpha1.ServiceExportConditionValid)), HaveField("Status", metav1.ConditionTrue))))
		}).WithContext(ctx).Should(Succeed())

		By("scaling the template to 3 replicas per member")
		Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(web), web)).To(Succeed())
		patch := client.MergeFrom(web.DeepCopy()) // as kubectl scale: no conflict with Flotilla's status writes
		web.Spec.Replicas = ptr.To[int32](3)
		Expect(env.Host.Patch(ctx, web, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			want := providerPodIPs(ctx, g, ns, providers)
			g.Expect(want).To(HaveLen(6))
			g.Expect(importedIPs(ctx, g, consumer, ns)).To(ConsistOf(want))
		}).WithContext(ctx).Should(Succeed())

		By("deleting a pod in member1")
		// kwok gives every member pod IPs from the same range, so IPs repeat across members
		// (and a replacement pod may get the deleted pod's IP): compare by source cluster, and
		// time the first change of each side's endpoints.
		pods := &corev1.PodList{}
		Expect(env.Members["member1"].List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app": "web"})).To(Succeed())
		victim := pods.Items[0]
		providerSel := client.MatchingLabels{discoveryv1.LabelServiceName: "web"}
		consumerSel := client.MatchingLabels{mcsv1alpha1.LabelServiceName: "web", mcsv1alpha1.LabelSourceCluster: "member1", mcs.ManagedByLabel: mcs.ManagedByValue}
		var providerBefore, consumerBefore []string
		Eventually(func(g Gomega) {
			providerBefore = endpointStates(ctx, g, env.Members["member1"], ns, providerSel)
			consumerBefore = endpointStates(ctx, g, consumer, ns, consumerSel)
			g.Expect(consumerBefore).To(Equal(providerBefore))
		}).WithContext(ctx).Should(Succeed())
		start := time.Now()
		Expect(env.Members["member1"].Delete(ctx, &victim, client.GracePeriodSeconds(0))).To(Succeed())
		var providerAt, consumerAt time.Duration
		Eventually(func(g Gomega) {
			if providerAt == 0 && !equalStates(endpointStates(ctx, g, env.Members["member1"], ns, providerSel), providerBefore) {
				providerAt = time.Since(start)
			}
			if consumerAt == 0 && !equalStates(endpointStates(ctx, g, consumer, ns, consumerSel), consumerBefore) {
				consumerAt = time.Since(start)
			}
			// The pod is replaced, and member3's derived slice is member1's again. The
			// replacement may take the deleted pod's address: then member1's slice may show
			// no change at all (its EndpointSlice controller folds the removal and the
			// addition into one write), or a short-lived one that ends where it began and that
			// member3's need not show; either way there is no latency to measure.
			g.Expect(podUIDs(ctx, g, ns, "member1")).NotTo(ContainElement(victim.UID))
			g.Expect(providerPodIPs(ctx, g, ns, []string{"member1"})).To(HaveLen(3))
			g.Expect(endpointStates(ctx, g, consumer, ns, consumerSel)).To(Equal(endpointStates(ctx, g, env.Members["member1"], ns, providerSel)))
		}).WithContext(ctx).WithPolling(10 * time.Millisecond).Should(Succeed())
		if providerAt == 0 || consumerAt == 0 {
			GinkgoWriter.Printf("MCS latency: pod %s deleted in member1 and replaced at the same address (member1's EndpointSlice changed after %v, member3's after %v): nothing to measure\n",
				victim.Name, providerAt.Round(time.Millisecond), consumerAt.Round(time.Millisecond))
		} else {
			GinkgoWriter.Printf("MCS latency: pod %s deleted in member1; member1's EndpointSlice changed after %v, member3's derived EndpointSlice after %v (%v after the provider's slice)\n",
				victim.Name, providerAt.Round(time.Millisecond), consumerAt.Round(time.Millisecond), (consumerAt - providerAt).Round(time.Millisecond))
		}
		Eventually(func(g Gomega) {
			g.Expect(providerPodIPs(ctx, g, ns, []string{"member1"})).To(HaveLen(3)) // the ReplicaSet replaced the pod
			g.Expect(podUIDs(ctx, g, ns, "member1")).NotTo(ContainElement(victim.UID))
			g.Expect(endpointStates(ctx, g, consumer, ns, consumerSel)).To(Equal(endpointStates(ctx, g, env.Members["member1"], ns, providerSel)))
			g.Expect(importedIPs(ctx, g, consumer, ns)).To(ConsistOf(providerPodIPs(ctx, g, ns, providers)))
		}).WithContext(ctx).Should(Succeed())

		By("deleting the ServiceExport template removes everything derived from it in member3")
		Expect(env.Host.Delete(ctx, export)).To(Succeed())
		Eventually(func(g Gomega) {
			err := consumer.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &mcsv1alpha1.ServiceImport{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ServiceImport: %v", err)
			err = consumer.Get(ctx, client.ObjectKey{Namespace: ns, Name: mcs.DerivedServiceName("web")}, &corev1.Service{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "derived Service: %v", err)
			g.Expect(derivedSlices(ctx, g, consumer, ns)).To(BeEmpty())
		}).WithContext(ctx).Should(Succeed())
		// The providers' own Services are not Flotilla's MCS objects: they stay.
		Expect(env.Members["member1"].Get(ctx, client.ObjectKeyFromObject(svc), &corev1.Service{})).To(Succeed())
		Expect(env.Members["member1"].Get(ctx, client.ObjectKeyFromObject(web), &appsv1.Deployment{})).To(Succeed())
	})
})

// providerPodIPs are the IPs of the Ready web pods of the providers.
func providerPodIPs(ctx context.Context, g Gomega, ns string, providers []string) []string {
	var ips []string
	for _, m := range providers {
		pods := &corev1.PodList{}
		g.Expect(env.Members[m].List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app": "web"})).To(Succeed())
		for _, p := range pods.Items {
			if p.Status.PodIP != "" && p.DeletionTimestamp.IsZero() && podReady(&p) {
				ips = append(ips, p.Status.PodIP)
			}
		}
	}
	return ips
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// endpointStates are the endpoints of the matching slices as "address ready serving
// terminating", sorted.
func endpointStates(ctx context.Context, g Gomega, c client.Client, ns string, sel client.MatchingLabels) []string {
	list := &discoveryv1.EndpointSliceList{}
	g.Expect(c.List(ctx, list, client.InNamespace(ns), sel)).To(Succeed())
	out := []string{}
	for _, s := range list.Items {
		for _, ep := range s.Endpoints {
			out = append(out, fmt.Sprintf("%v %v %v %v", ep.Addresses, ptr.Deref(ep.Conditions.Ready, true),
				ptr.Deref(ep.Conditions.Serving, true), ptr.Deref(ep.Conditions.Terminating, false)))
		}
	}
	slices.Sort(out)
	return out
}

func equalStates(a, b []string) bool { return slices.Equal(a, b) }

func podUIDs(ctx context.Context, g Gomega, ns, m string) []types.UID {
	pods := &corev1.PodList{}
	g.Expect(env.Members[m].List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app": "web"})).To(Succeed())
	var out []types.UID
	for _, p := range pods.Items {
		out = append(out, p.UID)
	}
	return out
}

func derivedSlices(ctx context.Context, g Gomega, c client.Client, ns string) []discoveryv1.EndpointSlice {
	list := &discoveryv1.EndpointSliceList{}
	g.Expect(c.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{mcsv1alpha1.LabelServiceName: "web", mcs.ManagedByLabel: mcs.ManagedByValue})).To(Succeed())
	return list.Items
}

// importedIPs are the ready addresses of member3's derived EndpointSlices.
func importedIPs(ctx context.Context, g Gomega, c client.Client, ns string) []string {
	return sliceIPs(ctx, g, c, ns, client.MatchingLabels{mcsv1alpha1.LabelServiceName: "web", mcs.ManagedByLabel: mcs.ManagedByValue})
}

func sliceIPs(ctx context.Context, g Gomega, c client.Client, ns string, sel client.MatchingLabels) []string {
	list := &discoveryv1.EndpointSliceList{}
	g.Expect(c.List(ctx, list, client.InNamespace(ns), sel)).To(Succeed())
	ips := []string{}
	for _, s := range list.Items {
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
				ips = append(ips, ep.Addresses...)
			}
		}
	}
	return ips
}
