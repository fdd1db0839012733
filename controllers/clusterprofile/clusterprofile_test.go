package clusterprofile_test

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	inventoryv1alpha1 "github.com/flotilla-io/flotilla/api/clusterinventory/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/controllers/clusterprofile"
	"github.com/flotilla-io/flotilla/internal/localcluster"
)

const inventory = wellknown.ClusterInventoryNamespace

func profile(ctx context.Context, g Gomega, name string) *inventoryv1alpha1.ClusterProfile {
	p := &inventoryv1alpha1.ClusterProfile{}
	g.Expect(env.Host.Get(ctx, client.ObjectKey{Namespace: inventory, Name: name}, p)).To(Succeed())
	return p
}

func cluster(ctx context.Context, g Gomega, name string) *clusterv1alpha1.Cluster {
	c := &clusterv1alpha1.Cluster{}
	g.Expect(env.Host.Get(ctx, client.ObjectKey{Name: name}, c)).To(Succeed())
	return c
}

func property(p *inventoryv1alpha1.ClusterProfile, name string) string {
	for _, x := range p.Status.Properties {
		if x.Name == name {
			return x.Value
		}
	}
	return ""
}

func healthy(p *inventoryv1alpha1.ClusterProfile) metav1.ConditionStatus {
	if c := meta.FindStatusCondition(p.Status.Conditions, inventoryv1alpha1.ConditionControlPlaneHealthy); c != nil {
		return c.Status
	}
	return ""
}

func accessProvider(g Gomega, p *inventoryv1alpha1.ClusterProfile, name string) inventoryv1alpha1.AccessCluster {
	for _, a := range p.Status.AccessProviders {
		if a.Name == name {
			return a.Cluster
		}
	}
	g.Expect(p.Status.AccessProviders).To(ContainElement(HaveField("Name", name)))
	return inventoryv1alpha1.AccessCluster{}
}

func memberCluster(name string) *localcluster.Cluster {
	for _, m := range env.Fleet.Members {
		if m.Name == name {
			return m
		}
	}
	Fail("no member " + name)
	return nil
}

var _ = Describe("ClusterProfiles", func() {
	It("publish every member in the inventory namespace: manager, health, version, properties and how to reach it", func(ctx SpecContext) {
		ns := &corev1.Namespace{}
		Expect(env.Host.Get(ctx, client.ObjectKey{Name: inventory}, ns)).To(Succeed(), "the controller creates its namespace")
		for i, name := range env.MemberNames() {
			topo := env.Fleet.MemberOptions[i]
			Eventually(func(g Gomega) {
				c := cluster(ctx, g, name)
				p := profile(ctx, g, name)
				g.Expect(p.Labels).To(HaveKeyWithValue(inventoryv1alpha1.LabelClusterManagerKey, "flotilla"))
				g.Expect(p.Spec.ClusterManager.Name).To(Equal("flotilla"))
				g.Expect(p.Spec.DisplayName).To(Equal(name))
				g.Expect(p.OwnerReferences).To(ConsistOf(HaveField("UID", c.UID)))
				g.Expect(healthy(p)).To(Equal(metav1.ConditionTrue))
				g.Expect(meta.IsStatusConditionTrue(p.Status.Conditions, inventoryv1alpha1.ConditionJoined)).To(BeTrue())
				g.Expect(c.Status.KubernetesVersion).NotTo(BeEmpty())
				g.Expect(p.Status.Version.Kubernetes).To(Equal(c.Status.KubernetesVersion))
				g.Expect(property(p, clusterprofile.PropertyProvider)).To(Equal(topo.Provider))
				g.Expect(property(p, clusterprofile.PropertyRegion)).To(Equal(topo.Region))
				g.Expect(property(p, clusterprofile.PropertyZones)).To(Equal(topo.Zone))
				g.Expect(property(p, clusterprofile.PropertyClusterID)).To(Equal(c.Spec.ID))
				g.Expect(property(p, clusterprofile.PropertySyncMode)).To(Equal("Push"))
				// Apiserver-only members have no Node: the collected summary says 0.
				g.Expect(c.Status.NodeSummary).NotTo(BeNil())
				g.Expect(property(p, clusterprofile.PropertyNodeCount)).To(Equal("0"))

				secret := &corev1.Secret{}
				g.Expect(env.Host.Get(ctx, client.ObjectKey{Namespace: c.Spec.SecretRef.Namespace, Name: c.Spec.SecretRef.Name}, secret)).To(Succeed())
				a := accessProvider(g, p, clusterprofile.DefaultAccessProvider)
				g.Expect(a.Server).To(Equal(c.Spec.APIEndpoint))
				g.Expect(a.CertificateAuthorityData).To(Equal(secret.Data[wellknown.SecretKeyCABundle]))
				g.Expect(p.Status.CredentialProviders).To(Equal(p.Status.AccessProviders))
			}).WithContext(ctx).Should(Succeed())
		}
	})

	It("let a consumer reach a member with its own identity, and with nothing more than that identity's rights", func(ctx SpecContext) {
		name := env.MemberNames()[0]
		m := env.Members[name]
		By("the member's admin gives the consumer an identity of its own in the member, allowed to list namespaces")
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kueue"}}
		Expect(m.Create(ctx, sa)).To(Succeed())
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "kueue-reader"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"list"}}}}
		Expect(m.Create(ctx, role)).To(Succeed())
		Expect(m.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "kueue-reader"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: sa.Namespace, Name: sa.Name}}})).To(Succeed())
		tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))}}
		Expect(m.SubResource("token").Create(ctx, sa, tr)).To(Succeed())

		By("and stores its token on the host where the consumer's credential plugin reads it: <consumer namespace>/<profile name>, key token")
		consumerNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kueue-system"}}
		Expect(env.Host.Create(ctx, consumerNS)).To(Succeed())
		Expect(env.Host.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: consumerNS.Name, Name: name},
			Data: map[string][]byte{"token": []byte(tr.Status.Token)}})).To(Succeed())

		By("the consumer reads the profile, takes the access provider it is configured for, and runs its plugin's steps")
		var cfg *rest.Config
		Eventually(func(g Gomega) {
			p := profile(ctx, g, name)
			a := accessProvider(g, p, clusterprofile.DefaultAccessProvider)
			g.Expect(a.Extensions).To(ContainElement(HaveField("Name", inventoryv1alpha1.ExecExtensionName)))
			var exec struct {
				ClusterName string `json:"clusterName"`
			}
			for _, e := range a.Extensions {
				if e.Name == inventoryv1alpha1.ExecExtensionName {
					g.Expect(json.Unmarshal(e.Extension.Raw, &exec)).To(Succeed())
				}
			}
			secret := &corev1.Secret{}
			g.Expect(env.Host.Get(ctx, client.ObjectKey{Namespace: consumerNS.Name, Name: exec.ClusterName}, secret)).To(Succeed())
			cfg = &rest.Config{Host: a.Server, BearerToken: string(secret.Data["token"]),
				TLSClientConfig: rest.TLSClientConfig{CAData: a.CertificateAuthorityData, Insecure: a.InsecureSkipTLSVerify}}
		}).WithContext(ctx).Should(Succeed())
		consumer, err := client.New(cfg, client.Options{Scheme: env.Scheme})
		Expect(err).NotTo(HaveOccurred())
		Expect(consumer.List(ctx, &corev1.NamespaceList{})).To(Succeed(), "the consumer lists the member's namespaces, trusting the published CA")
		err = consumer.List(ctx, &corev1.SecretList{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the consumer has its own rights, not Flotilla's: %v", err)
	})

	It("follow a member's outage: ControlPlaneHealthy leaves True while its apiserver is down, and comes back", func(ctx SpecContext) {
		name := env.MemberNames()[1]
		m := memberCluster(name)
		Expect(m.StopAPIServer()).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { _ = m.StartAPIServer(ctx) })
		Eventually(func(g Gomega) {
			p := profile(ctx, g, name)
			c := meta.FindStatusCondition(p.Status.Conditions, inventoryv1alpha1.ConditionControlPlaneHealthy)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).NotTo(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(wellknown.ClusterReasonNotReachable))
		}).WithContext(ctx).Within(time.Minute).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(env.EventReasons(ctx, g, cluster(ctx, g, name))).To(ContainElement(clusterprofile.EventReasonHealthChanged))
		}).WithContext(ctx).Should(Succeed())

		Expect(m.StartAPIServer(ctx)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(healthy(profile(ctx, g, name))).To(Equal(metav1.ConditionTrue))
		}).WithContext(ctx).Within(time.Minute).Should(Succeed())
	})

	It("publish a member's new CA when its credentials Secret changes", func(ctx SpecContext) {
		name := env.MemberNames()[0]
		c := &clusterv1alpha1.Cluster{}
		Expect(env.Host.Get(ctx, client.ObjectKey{Name: name}, c)).To(Succeed())
		secret := &corev1.Secret{}
		Expect(env.Host.Get(ctx, client.ObjectKey{Namespace: c.Spec.SecretRef.Namespace, Name: c.Spec.SecretRef.Name}, secret)).To(Succeed())
		// The same CA with a trailing line: still valid PEM, so the member stays connected.
		rotated := append(append([]byte{}, secret.Data[wellknown.SecretKeyCABundle]...), []byte("\n")...)
		secret.Data[wellknown.SecretKeyCABundle] = rotated
		Expect(env.Host.Update(ctx, secret)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(accessProvider(g, profile(ctx, g, name), clusterprofile.DefaultAccessProvider).CertificateAuthorityData).To(Equal(rotated))
		}).WithContext(ctx).Should(Succeed())
	})

	It("are put back when someone else deletes or changes them", func(ctx SpecContext) {
		name := env.MemberNames()[0]
		var uid string
		Eventually(func(g Gomega) { uid = string(profile(ctx, g, name).UID) }).WithContext(ctx).Should(Succeed())
		Expect(env.Host.Delete(ctx, &inventoryv1alpha1.ClusterProfile{ObjectMeta: metav1.ObjectMeta{Namespace: inventory, Name: name}})).To(Succeed())
		Eventually(func(g Gomega) {
			p := profile(ctx, g, name)
			g.Expect(string(p.UID)).NotTo(Equal(uid))
			g.Expect(healthy(p)).To(Equal(metav1.ConditionTrue))
		}).WithContext(ctx).Should(Succeed())

		Expect(env.Host.Patch(ctx, &inventoryv1alpha1.ClusterProfile{ObjectMeta: metav1.ObjectMeta{Namespace: inventory, Name: name}},
			client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"displayName":"renamed"}}`)))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(profile(ctx, g, name).Spec.DisplayName).To(Equal(name))
		}).WithContext(ctx).Should(Succeed())
	})

	It("leave another cluster manager's profile of the same name alone, and say so on the Cluster", func(ctx SpecContext) {
		theirs := &inventoryv1alpha1.ClusterProfile{ObjectMeta: metav1.ObjectMeta{Namespace: inventory, Name: "shared",
			Labels: map[string]string{inventoryv1alpha1.LabelClusterManagerKey: "ocm"}},
			Spec: inventoryv1alpha1.ClusterProfileSpec{DisplayName: "theirs", ClusterManager: inventoryv1alpha1.ClusterManager{Name: "ocm"}}}
		Expect(env.Host.Create(ctx, theirs)).To(Succeed())
		c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "shared"},
			Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://127.0.0.1:1"}}
		Expect(env.Host.Create(ctx, c)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(env.Host.Delete(ctx, c))).To(Succeed())
			env.Release(ctx, c)
		})
		Eventually(func(g Gomega) {
			g.Expect(env.EventReasons(ctx, g, cluster(ctx, g, "shared"))).To(ContainElement(clusterprofile.EventReasonFailed))
		}).WithContext(ctx).Should(Succeed())
		Consistently(func(g Gomega) {
			p := profile(ctx, g, "shared")
			g.Expect(p.Spec.ClusterManager.Name).To(Equal("ocm"))
			g.Expect(p.Spec.DisplayName).To(Equal("theirs"))
			g.Expect(p.Status.Conditions).To(BeEmpty())
		}).WithContext(ctx).Should(Succeed())
	})

	It("replace Flotilla's profile of an earlier Cluster of the same name", func(ctx SpecContext) {
		old := &inventoryv1alpha1.ClusterProfile{ObjectMeta: metav1.ObjectMeta{Namespace: inventory, Name: "reborn",
			Labels:          map[string]string{wellknown.InventoryManagedByLabel: wellknown.InventoryManagedBy, inventoryv1alpha1.LabelClusterManagerKey: "flotilla"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "cluster.karmada.io/v1alpha1", Kind: "Cluster", Name: "reborn", UID: "earlier-uid", Controller: ptr(true)}}},
			Spec: inventoryv1alpha1.ClusterProfileSpec{ClusterManager: inventoryv1alpha1.ClusterManager{Name: "flotilla"}}}
		Expect(env.Host.Create(ctx, old)).To(Succeed())
		c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "reborn"},
			Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://127.0.0.1:1"}}
		Expect(env.Host.Create(ctx, c)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(env.Host.Delete(ctx, c))).To(Succeed())
			env.Release(ctx, c)
		})
		Eventually(func(g Gomega) {
			p := profile(ctx, g, "reborn")
			g.Expect(p.UID).NotTo(Equal(old.UID))
			g.Expect(p.OwnerReferences).To(ConsistOf(HaveField("UID", c.UID)))
		}).WithContext(ctx).Should(Succeed())
	})

	It("are removed with their Cluster", func(ctx SpecContext) {
		c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "leaving"},
			Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://127.0.0.1:1", Region: "r1"}}
		Expect(env.Host.Create(ctx, c)).To(Succeed())
		Eventually(func(g Gomega) {
			p := profile(ctx, g, "leaving")
			g.Expect(property(p, clusterprofile.PropertyRegion)).To(Equal("r1"))
			g.Expect(env.EventReasons(ctx, g, cluster(ctx, g, "leaving"))).To(ContainElement(clusterprofile.EventReasonPublished))
		}).WithContext(ctx).Should(Succeed())
		// The cluster controller's finalizer waits for the execution namespace, which no
		// namespace controller removes here: the profile goes as soon as the deletion starts.
		Expect(env.Host.Delete(ctx, c)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(env.Host.Get(ctx, client.ObjectKey{Namespace: inventory, Name: "leaving"}, &inventoryv1alpha1.ClusterProfile{}))
		}).WithContext(ctx).Should(BeTrue())
		env.Release(ctx, c)
	})
})

func ptr[T any](v T) *T { return &v }
