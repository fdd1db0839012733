package migrate_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/migrate"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

func TestMigrate(t *testing.T) {
	fleettest.RunSuite(t, "Migrate suite", "a Karmada control plane, a host and two members")
}

// The suite plays the parts of the migration no manager is needed for: Clusters and policies.
// The Karmada control plane is an apiserver with the Karmada CRDs (Flotilla's, the same wire
// format); the host has two members to join. The templates' adoption, with a manager and full
// members, is in the e2e suite (test/e2e/migrate_test.go).
var _ = Describe("Migrating Clusters and policies", Ordered, func() {
	var karmada, host *fleettest.Env

	BeforeAll(func(ctx SpecContext) {
		karmada = fleettest.Start(ctx, fleettest.Options{Name: "karmada"})
		host = fleettest.Start(ctx, fleettest.Options{Name: "migrate", Members: 2})
		k := karmada.Host
		Expect(k.Create(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1", Labels: map[string]string{"env": "prod"}},
			Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://127.0.0.1:1", Provider: "aws", Region: "eu-west-1",
				Zones:  []string{"eu-west-1a"},
				Taints: []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}}})).To(Succeed())
		// member2 is reached through the credential Karmada has for it.
		m2 := host.Fleet.Members[1]
		Expect(k.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "karmada-cluster"}})).To(Succeed())
		Expect(k.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "karmada-cluster", Name: "member2"},
			Data: map[string][]byte{wellknown.SecretKeyToken: []byte(m2.AdminToken), wellknown.SecretKeyCABundle: m2.CAData}})).To(Succeed())
		Expect(k.Create(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member2"},
			Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: m2.Endpoint,
				SecretRef: &clusterv1alpha1.LocalSecretReference{Namespace: "karmada-cluster", Name: "member2"}}})).To(Succeed())
		Expect(k.Create(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "edge"},
			Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull}})).To(Succeed())
		Expect(k.Create(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "far"},
			Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://127.0.0.1:2"}})).To(Succeed())

		Expect(k.Create(ctx, &policyv1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "crds",
			Labels: map[string]string{wellknown.ClusterPropagationPolicyPermanentIDLabel: "karmada-id"}},
			Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"}}}})).To(Succeed())
		Expect(k.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}})).To(Succeed())
		Expect(k.Create(ctx, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "elsewhere", Name: "left"},
			Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap"}}}})).To(Succeed())
	}, NodeTimeout(3*time.Minute))

	options := func() migrate.Options {
		return migrate.Options{Karmada: karmada.Host, Host: host.Host, HostConfig: host.Fleet.Host.RESTConfig(), KarmadaStopped: true,
			MemberConfigs: map[string]*rest.Config{"member1": host.Fleet.Members[0].RESTConfig()}, UseKarmadaCredentials: true}
	}

	It("refuses when it cannot tell whether Karmada's controller-manager is stopped", func(ctx SpecContext) {
		o := options()
		o.KarmadaStopped = false
		_, err := migrate.Run(ctx, o)
		Expect(err).To(MatchError(ContainSubstring("its leader lease karmada-system/karmada-controller-manager is not in the Karmada control plane")))
	})

	It("joins the Push members with their labels and taints, and tells what to do for the others", func(ctx SpecContext) {
		r, err := migrate.Run(ctx, options())
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Items).To(ContainElements(
			migrate.Item{Kind: "Cluster", Name: "member1", Action: migrate.Join, Reason: "Push member: joined with a fresh least-privilege credential, through the kubeconfig given"},
			migrate.Item{Kind: "Cluster", Name: "member2", Action: migrate.Join, Reason: "Push member: joined with a fresh least-privilege credential, made through Karmada's credential for it"},
			migrate.Item{Kind: "Cluster", Name: "edge", Action: migrate.Register, Reason: "Pull member: run the commands below in it"},
			HaveField("Name", "far"),
			migrate.Item{Kind: "ClusterPropagationPolicy", Name: "crds", Action: migrate.Create},
			migrate.Item{Kind: "PropagationPolicy", Namespace: "elsewhere", Name: "left", Action: migrate.Skip, Reason: "its namespace is not moved (--namespaces)"},
		))
		Expect(r.Items).To(ContainElement(And(HaveField("Name", "far"), HaveField("Action", migrate.Skip), HaveField("Reason", ContainSubstring("--member-kubeconfig far=FILE")))))
		Expect(r.PullCommands).To(ContainElement("kubectl flotilla token create edge"))

		c := &clusterv1alpha1.Cluster{}
		Expect(host.Host.Get(ctx, types.NamespacedName{Name: "member1"}, c)).To(Succeed())
		Expect(c.Labels).To(HaveKeyWithValue("env", "prod"))
		Expect(c.Spec.Taints).To(ContainElement(HaveField("Key", "dedicated")))
		Expect(c.Spec.Provider).To(Equal("aws"))
		Expect(c.Spec.Zones).To(Equal([]string{"eu-west-1a"}))
		Expect(c.Spec.APIEndpoint).To(Equal(host.Fleet.Members[0].Endpoint))
		Expect(host.Host.Get(ctx, types.NamespacedName{Name: "member2"}, c)).To(Succeed())
		Expect(c.Spec.SecretRef.Namespace).To(Equal(wellknown.SystemNamespace), "Flotilla's own credential, not Karmada's")
		cpp := &policyv1alpha1.ClusterPropagationPolicy{}
		Expect(host.Host.Get(ctx, types.NamespacedName{Name: "crds"}, cpp)).To(Succeed())
		Expect(cpp.Labels).NotTo(HaveKey(wellknown.ClusterPropagationPolicyPermanentIDLabel), "Karmada's id is not carried over")
	})

	It("changes nothing when run again", func(ctx SpecContext) {
		r, err := migrate.Run(ctx, options())
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Count(migrate.Create)+r.Count(migrate.Join)+r.Count(migrate.Differs)).To(BeZero(), "%+v", r.Items)
	})
})
