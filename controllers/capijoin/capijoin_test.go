package capijoin_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	clusterv1beta2 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/controllers/capijoin"
	"github.com/flotilla-io/flotilla/internal/localcluster"
)

// capiFinalizer is the finalizer Cluster API's cluster controller puts on its Clusters: their
// deletion waits for the infrastructure to go.
const capiFinalizer = "cluster.cluster.x-k8s.io"

func memberCluster(name string) *localcluster.Cluster {
	for _, m := range env.Fleet.Members {
		if m.Name == name {
			return m
		}
	}
	Fail("no member " + name)
	return nil
}

// provision creates a Cluster API Cluster for a local member as a provider would: the Cluster
// (with Cluster API's finalizer), then its kubeconfig Secret.
func provision(ctx context.Context, name, member string, labels map[string]string) *clusterv1beta2.Cluster {
	GinkgoHelper()
	c := &clusterv1beta2.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name, Labels: labels, Finalizers: []string{capiFinalizer}},
		Spec: clusterv1beta2.ClusterSpec{InfrastructureRef: clusterv1beta2.ContractVersionedObjectReference{
			APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "DockerCluster", Name: name}},
	}
	Expect(env.Host.Create(ctx, c)).To(Succeed())
	m := memberCluster(member)
	Expect(env.Host.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: capijoin.KubeconfigSecretName(name),
			Labels: map[string]string{clusterv1beta2.ClusterNameLabel: name}},
		Type: "cluster.x-k8s.io/secret",
		Data: map[string][]byte{capijoin.KubeconfigSecretKey: m.Kubeconfig("admin", m.AdminToken)},
	})).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(env.Host.Delete(ctx, c))).To(Succeed())
		release(ctx, c)
	})
	return c
}

// initialize reports the control plane initialized, as Cluster API does.
func initialize(ctx context.Context, c *clusterv1beta2.Cluster) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &clusterv1beta2.Cluster{}
		if err := env.Host.Get(ctx, client.ObjectKeyFromObject(c), cur); err != nil {
			return err
		}
		cur.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
		meta.SetStatusCondition(&cur.Status.Conditions, metav1.Condition{Type: clusterv1beta2.ClusterControlPlaneInitializedCondition,
			Status: metav1.ConditionTrue, Reason: "Initialized"})
		return env.Host.Status().Update(ctx, cur)
	})).To(Succeed())
}

func setLabel(ctx context.Context, c *clusterv1beta2.Cluster, key, value string) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &clusterv1beta2.Cluster{}
		if err := env.Host.Get(ctx, client.ObjectKeyFromObject(c), cur); err != nil {
			return err
		}
		if value == "" {
			delete(cur.Labels, key)
		} else {
			cur.Labels[key] = value
		}
		return env.Host.Update(ctx, cur)
	})).To(Succeed())
}

// release removes Cluster API's finalizer, as Cluster API does once the infrastructure is gone.
func release(ctx context.Context, c *clusterv1beta2.Cluster) {
	GinkgoHelper()
	env.Release(ctx, c)
}

func member(ctx context.Context, g Gomega, name string) *clusterv1alpha1.Cluster {
	c := &clusterv1alpha1.Cluster{}
	g.Expect(env.Host.Get(ctx, client.ObjectKey{Name: name}, c)).To(Succeed())
	return c
}

func gone(ctx context.Context, name string) func() bool {
	return func() bool {
		return apierrors.IsNotFound(env.Host.Get(ctx, client.ObjectKey{Name: name}, &clusterv1alpha1.Cluster{}))
	}
}

// accessServiceAccount is what join makes in a member for the control plane.
func accessServiceAccount(name string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: wellknown.SystemNamespace, Name: wellknown.MemberAccessName(name)}}
}

var _ = Describe("Cluster API clusters labelled for the fleet", func() {
	It("join once their control plane is initialized, with a credential of their own, and carry their labels and location", func(ctx SpecContext) {
		c := provision(ctx, "edge-1", "member1", map[string]string{wellknown.CAPIJoinLabel: "true", "env": "prod",
			"topology.kubernetes.io/region": "eu-west-3", clusterv1beta2.ClusterNameLabel: "edge-1"})
		Eventually(func(g Gomega) {
			g.Expect(env.EventReasons(ctx, g, c)).To(ContainElement(capijoin.EventReasonWaiting))
		}).WithContext(ctx).Should(Succeed())
		Consistently(gone(ctx, "edge-1")).WithContext(ctx).Should(BeTrue(), "not joined before the control plane is initialized")

		initialize(ctx, c)
		Eventually(func(g Gomega) {
			m := member(ctx, g, "edge-1")
			g.Expect(m.Labels).To(HaveKeyWithValue(wellknown.OriginLabel, wellknown.OriginClusterAPI))
			g.Expect(m.Labels).To(HaveKeyWithValue("env", "prod"))
			g.Expect(m.Labels).NotTo(HaveKey(clusterv1beta2.ClusterNameLabel))
			g.Expect(m.Annotations).To(HaveKeyWithValue(wellknown.CAPIClusterAnnotation, "team-a/edge-1"))
			g.Expect(m.Spec.Provider).To(Equal("docker"))
			g.Expect(m.Spec.Region).To(Equal("eu-west-3"))
			g.Expect(meta.IsStatusConditionTrue(m.Status.Conditions, wellknown.ClusterConditionReady)).To(BeTrue())
			g.Expect(env.EventReasons(ctx, g, c)).To(ContainElement(capijoin.EventReasonJoined))
		}).WithContext(ctx).Should(Succeed())

		By("the host keeps the token of Flotilla's own ServiceAccount in the member, not Cluster API's admin credential")
		m := memberCluster("member1")
		secret := &corev1.Secret{}
		Expect(env.Host.Get(ctx, client.ObjectKey{Namespace: wellknown.SystemNamespace, Name: "edge-1"}, secret)).To(Succeed())
		Expect(secret.Data[wellknown.SecretKeyToken]).NotTo(BeEmpty())
		Expect(string(secret.Data[wellknown.SecretKeyToken])).NotTo(Equal(m.AdminToken))
		Expect(env.Members["member1"].Get(ctx, client.ObjectKeyFromObject(accessServiceAccount("edge-1")), &corev1.ServiceAccount{})).To(Succeed())

		By("label changes follow")
		setLabel(ctx, c, "env", "staging")
		Eventually(func(g Gomega) {
			g.Expect(member(ctx, g, "edge-1").Labels).To(HaveKeyWithValue("env", "staging"))
		}).WithContext(ctx).Should(Succeed())

		By("deleted, it is unjoined while Cluster API tears it down: the Cluster goes, and what join made in the member")
		Expect(env.Host.Delete(ctx, c)).To(Succeed())
		Eventually(gone(ctx, "edge-1")).WithContext(ctx).Should(BeTrue())
		Eventually(func(g Gomega) {
			err := env.Members["member1"].Get(ctx, client.ObjectKeyFromObject(accessServiceAccount("edge-1")), &corev1.ServiceAccount{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the access ServiceAccount is removed: %v", err)
			g.Expect(env.EventReasons(ctx, g, c)).To(ContainElement(capijoin.EventReasonUnjoined))
			g.Expect(apierrors.IsNotFound(env.Host.Get(ctx, client.ObjectKey{Namespace: wellknown.SystemNamespace, Name: "edge-1"}, &corev1.Secret{}))).To(BeTrue())
		}).WithContext(ctx).Should(Succeed())
	})

	It("keep their workloads when labelled so, and are unjoined when the label goes", func(ctx SpecContext) {
		c := provision(ctx, "edge-2", "member2", map[string]string{wellknown.CAPIJoinLabel: "true", wellknown.CAPIKeepWorkloadsLabel: "true",
			wellknown.CAPIMemberNameLabel: "lyon"})
		initialize(ctx, c)
		Eventually(func(g Gomega) {
			m := member(ctx, g, "lyon")
			g.Expect(m.Annotations).To(HaveKeyWithValue(wellknown.KeepWorkloadsAnnotation, "true"))
			g.Expect(m.Labels).NotTo(HaveKey(wellknown.CAPIKeepWorkloadsLabel))
		}).WithContext(ctx).Should(Succeed())

		setLabel(ctx, c, wellknown.CAPIJoinLabel, "")
		Eventually(gone(ctx, "lyon")).WithContext(ctx).Should(BeTrue())
	})

	It("leave Cluster API clusters without the label, and Clusters they did not join, alone", func(ctx SpecContext) {
		c := provision(ctx, "lab", "member2", map[string]string{"env": "lab"})
		initialize(ctx, c)
		Consistently(gone(ctx, "lab")).WithContext(ctx).Should(BeTrue())

		By("a Cluster of the same name joined by hand is not taken over")
		manual := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "taken"},
			Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://127.0.0.1:1"}}
		Expect(env.Host.Create(ctx, manual)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(env.Host.Delete(ctx, manual))).To(Succeed())
			env.Release(ctx, manual)
		})
		t := provision(ctx, "taken", "member2", map[string]string{wellknown.CAPIJoinLabel: "true"})
		initialize(ctx, t)
		Eventually(func(g Gomega) {
			g.Expect(env.EventReasons(ctx, g, t)).To(ContainElement(capijoin.EventReasonJoinFailed))
		}).WithContext(ctx).Should(Succeed())
		Consistently(func(g Gomega) {
			m := member(ctx, g, "taken")
			g.Expect(m.Labels).NotTo(HaveKey(wellknown.OriginLabel))
			g.Expect(m.Spec.APIEndpoint).To(Equal("https://127.0.0.1:1"))
		}).WithContext(ctx).Should(Succeed())
	})
})
