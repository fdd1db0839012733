package e2e

import (
	"context"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	clusterv1beta2 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	inventoryv1alpha1 "github.com/flotilla-io/flotilla/api/clusterinventory/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/controllers/capijoin"
	"github.com/flotilla-io/flotilla/controllers/clusterprofile"
	"github.com/flotilla-io/flotilla/internal/localcluster"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// profileOf reads member's ClusterProfile from the profiles' namespace.
func profileOf(ctx context.Context, g Gomega, member string) *inventoryv1alpha1.ClusterProfile {
	p := &inventoryv1alpha1.ClusterProfile{}
	g.Expect(env.Host.Get(ctx, types.NamespacedName{Namespace: wellknown.ClusterInventoryNamespace, Name: member}, p)).To(Succeed())
	return p
}

func property(p *inventoryv1alpha1.ClusterProfile, name string) string {
	for _, pr := range p.Status.Properties {
		if pr.Name == name {
			return pr.Value
		}
	}
	return ""
}

var _ = Describe("The fleet as a cluster inventory", func() {
	It("publishes every member as a ClusterProfile whose health follows the member's", func(ctx context.Context) {
		// The suite's members: two large kwok nodes each, and a small one on member1 and
		// member2 (heterogeneousMembers).
		nodes := map[string]string{"member1": "3", "member2": "3", "member3": "2"}
		for _, m := range []string{"member1", "member2", "member3"} {
			Eventually(func(g Gomega) {
				p := profileOf(ctx, g, m)
				g.Expect(p.Spec.ClusterManager.Name).To(Equal("flotilla"))
				g.Expect(meta.IsStatusConditionTrue(p.Status.Conditions, inventoryv1alpha1.ConditionControlPlaneHealthy)).To(BeTrue())
				g.Expect(p.Status.Version.Kubernetes).NotTo(BeEmpty())
				g.Expect(property(p, clusterprofile.PropertyNodeCount)).To(Equal(nodes[m]), "the member's kwok nodes")
				g.Expect(property(p, clusterprofile.PropertyCPUAllocatable)).NotTo(BeEmpty())
				g.Expect(p.Status.AccessProviders).NotTo(BeEmpty())
			}).WithContext(ctx).Should(Succeed(), m)
		}

		By("a member's outage shows on its profile, and its return")
		m3 := env.Fleet.Member("member3")
		Expect(m3.StopAPIServer()).To(Succeed())
		restarted := false
		DeferCleanup(func(ctx context.Context) {
			if !restarted {
				_ = m3.StartAPIServer(ctx)
			}
		})
		Eventually(func(g Gomega) metav1.ConditionStatus {
			c := meta.FindStatusCondition(profileOf(ctx, g, "member3").Status.Conditions, inventoryv1alpha1.ConditionControlPlaneHealthy)
			g.Expect(c).NotTo(BeNil())
			return c.Status
		}).WithContext(ctx).ShouldNot(Equal(metav1.ConditionTrue))
		Expect(m3.StartAPIServer(ctx)).To(Succeed())
		restarted = true
		env.EventuallyMemberSettled(ctx, "member3")
		Eventually(func(g Gomega) bool {
			return meta.IsStatusConditionTrue(profileOf(ctx, g, "member3").Status.Conditions, inventoryv1alpha1.ConditionControlPlaneHealthy)
		}).WithContext(ctx).Should(BeTrue())
	})

	It("publishes a binding's clusters as a PlacementDecision that follows a rescheduling", func(ctx context.Context) {
		ns := templateNamespace(ctx, "e2e-decision")
		pp := policyTo(ns, "all", false, "member1")
		Expect(env.Host.Create(ctx, pp)).To(Succeed())
		Expect(env.Host.Create(ctx, configMap(ns, "cm", "v1"))).To(Succeed())
		decided := func(g Gomega) []string {
			list := &inventoryv1alpha1.PlacementDecisionList{}
			g.Expect(env.Host.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			var out []string
			for _, d := range list.Items {
				for _, c := range d.Decisions {
					out = append(out, c.ClusterProfileRef.Name)
				}
			}
			slices.Sort(out)
			return out
		}
		Eventually(decided).WithContext(ctx).Should(Equal([]string{"member1"}))

		patch := client.MergeFrom(pp.DeepCopy())
		pp.Spec.Placement.ClusterAffinity.ClusterNames = []string{"member2", "member3"}
		Expect(env.Host.Patch(ctx, pp, patch)).To(Succeed())
		Eventually(decided).WithContext(ctx).Should(Equal([]string{"member2", "member3"}))

		Expect(env.Host.Delete(ctx, configMap(ns, "cm", ""))).To(Succeed())
		Eventually(decided).WithContext(ctx).Should(BeEmpty(), "removed with the binding")
	})
})

var _ = Describe("Cluster API clusters labelled for the fleet", func() {
	It("join by themselves, receive their workloads, and are unjoined when deleted", func(ctx context.Context) {
		// The stand-in for a provider: a cluster made and its admin kubeconfig written as
		// Cluster API does (cluster.x-k8s.io/v1beta2 Cluster, Secret <name>-kubeconfig).
		lc, err := localcluster.Start(ctx, localcluster.Options{Name: "capi1", Log: GinkgoWriter})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(lc.Stop)
		s := flotillascheme.New()
		Expect(clusterv1beta2.AddToScheme(s)).To(Succeed())
		host, err := client.New(env.Fleet.Host.RESTConfig(), client.Options{Scheme: s})
		Expect(err).NotTo(HaveOccurred())
		const ns = "e2e-capi"
		Expect(host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		capi := &clusterv1beta2.Cluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "capi1", Labels: map[string]string{"flotilla.io/join": "true", "env": "edge"}},
			Spec: clusterv1beta2.ClusterSpec{InfrastructureRef: clusterv1beta2.ContractVersionedObjectReference{
				APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "DockerCluster", Name: "capi1"}},
		}
		Expect(host.Create(ctx, capi)).To(Succeed())
		Expect(host.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: capijoin.KubeconfigSecretName("capi1"),
				Labels: map[string]string{clusterv1beta2.ClusterNameLabel: "capi1"}},
			Type: "cluster.x-k8s.io/secret",
			Data: map[string][]byte{capijoin.KubeconfigSecretKey: lc.Kubeconfig("admin", lc.AdminToken)},
		})).To(Succeed())
		capi.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
		meta.SetStatusCondition(&capi.Status.Conditions, metav1.Condition{Type: clusterv1beta2.ClusterControlPlaneInitializedCondition,
			Status: metav1.ConditionTrue, Reason: "Initialized"})
		Expect(host.Status().Update(ctx, capi)).To(Succeed())

		By("it becomes a Ready member, without anyone running join")
		framework.EventuallyClustersReady(ctx, env.Host, "capi1")
		c := &clusterv1alpha1.Cluster{}
		Expect(env.Host.Get(ctx, client.ObjectKey{Name: "capi1"}, c)).To(Succeed())
		Expect(c.Labels).To(HaveKeyWithValue(wellknown.OriginLabel, wellknown.OriginClusterAPI))
		Expect(c.Labels).To(HaveKeyWithValue("env", "edge"))

		By("it receives its workloads")
		tns := templateNamespace(ctx, "e2e-capi-apps")
		Expect(env.Host.Create(ctx, policyTo(tns, "edge", false, "capi1"))).To(Succeed())
		Expect(env.Host.Create(ctx, configMap(tns, "cfg", "v1"))).To(Succeed())
		member, err := client.New(lc.RESTConfig(), client.Options{Scheme: s})
		Expect(err).NotTo(HaveOccurred())
		inMember := func() string {
			cm := &corev1.ConfigMap{}
			if err := member.Get(ctx, types.NamespacedName{Namespace: tns, Name: "cfg"}, cm); err != nil {
				return ""
			}
			return cm.Data["key"]
		}
		Eventually(inMember).WithContext(ctx).Should(Equal("v1"))

		By("deleting it unjoins it, and its workloads go")
		Expect(host.Delete(ctx, capi)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(env.Host.Get(ctx, client.ObjectKey{Name: "capi1"}, &clusterv1alpha1.Cluster{}))
		}).WithContext(ctx).Should(BeTrue())
		Expect(inMember()).To(BeEmpty())
	})
})
