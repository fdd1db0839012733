package hostguard_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inventoryv1alpha1 "github.com/flotilla-io/flotilla/api/clusterinventory/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/agentauth"
	"github.com/flotilla-io/flotilla/internal/hostguard"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

func TestGuard(t *testing.T) {
	fleettest.RunSuite(t, "Manager guard suite", "a host apiserver")
}

var (
	env *fleettest.Env
	// manager is a client as the manager's ServiceAccount, which RBAC lets do anything here:
	// only the guard stands in its way.
	manager client.Client
)

const (
	ns = "flotilla-system"
	sa = "flotilla-manager"
)

var _ = BeforeSuite(func(ctx SpecContext) {
	env = fleettest.Start(ctx, fleettest.Options{Name: "hostguard"})
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "guard-test-admin"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "dns"}, Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "dns"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "dns"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "dns", Image: "dns"}}}}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: agentauth.BootstrapServiceAccount("m1-abcdef")}},
	} {
		Expect(env.Host.Create(ctx, o)).To(Succeed())
	}
	kube, err := kubernetes.NewForConfig(env.Fleet.Host.RESTConfig())
	Expect(err).NotTo(HaveOccurred())
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	cfg := env.Fleet.Host.RESTConfig()
	cfg.BearerToken, cfg.BearerTokenFile = tr.Status.Token, ""
	cfg.CertData, cfg.KeyData, cfg.CertFile, cfg.KeyFile = nil, nil, "", ""
	manager, err = client.New(cfg, client.Options{Scheme: env.Scheme})
	Expect(err).NotTo(HaveOccurred())
})

// patchLabel patches one label of an object as c.
func patchLabel(ctx context.Context, c client.Client, obj client.Object, key, value string) error {
	return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+key+`":"`+value+`"}}}`)))
}

var _ = Describe("The manager's guard", Ordered, func() {
	dns := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "dns"}}
	shop := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}

	It("is what stands between the manager's identity and the host: without it, RBAC alone decides", func(ctx SpecContext) {
		Expect(patchLabel(ctx, manager, dns, "before", "guard")).To(Succeed())
	})

	It("denies every write it does not list, and allows those it does, once installed", func(ctx SpecContext) {
		policy, binding := hostguard.Policy(ns, sa)
		Expect(env.Host.Create(ctx, policy)).To(Succeed())
		Expect(env.Host.Create(ctx, binding)).To(Succeed())
		// The apiserver loads a new policy within a second or so.
		Eventually(func() error {
			return patchLabel(ctx, manager, dns, "after", "guard")
		}).WithContext(ctx).Should(Satisfy(apierrors.IsForbidden))

		Expect(env.Host.Create(ctx, &inventoryv1alpha1.ClusterProfile{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "kept"},
			Spec: inventoryv1alpha1.ClusterProfileSpec{ClusterManager: inventoryv1alpha1.ClusterManager{Name: "someone-else"}}})).To(Succeed())
		denied := map[string]func() error{
			"a label on a Deployment in kube-system": func() error { return patchLabel(ctx, manager, dns, "x", "y") },
			"a Pod Security label of a namespace": func() error {
				return patchLabel(ctx, manager, shop, "pod-security.kubernetes.io/enforce", "privileged")
			},
			"a ConfigMap in a user's namespace": func() error {
				return manager.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "x"}})
			},
			"a namespace that is not an execution namespace": func() error {
				return manager.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "evil"}})
			},
			"a ClusterRole that is not a Pull agent's": func() error {
				return manager.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "evil"}})
			},
			"a webhook's neighbour: a ServiceAccount in kube-system": func() error {
				return manager.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "evil"}})
			},
			"a token for a ServiceAccount": func() error {
				return manager.SubResource("token").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}},
					&authenticationv1.TokenRequest{})
			},
			"a lease outside its namespace": func() error {
				return manager.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "x"}})
			},
			"deleting a Deployment in kube-system": func() error { return manager.Delete(ctx, dns) },
			"a ClusterProfile another cluster manager keeps": func() error {
				return manager.Create(ctx, &inventoryv1alpha1.ClusterProfile{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "theirs",
					Labels: map[string]string{inventoryv1alpha1.LabelClusterManagerKey: "someone-else"}},
					Spec: inventoryv1alpha1.ClusterProfileSpec{ClusterManager: inventoryv1alpha1.ClusterManager{Name: "someone-else"}}})
			},
			"deleting a ClusterProfile another cluster manager keeps": func() error {
				return manager.Delete(ctx, &inventoryv1alpha1.ClusterProfile{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "kept"}})
			},
			"a Secret in its namespace that is no member's credentials": func() error {
				return manager.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "loot"}})
			},
			"a member's credentials Secret outside its namespace": func() error {
				return manager.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "m1",
					Labels: map[string]string{wellknown.JoinedClusterLabel: "m1"}}})
			},
			"a namespace for ClusterProfiles other than the default": func() error {
				return manager.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other-inventory"}})
			},
			"deleting its own ServiceAccount": func() error {
				return manager.Delete(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}})
			},
		}
		for what, write := range denied {
			err := write()
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%s: %v", what, err)
			Expect(err.Error()).To(ContainSubstring("flotilla-manager-guard"), what)
		}

		// In order: the execution namespace before what goes into it.
		allowed := []struct {
			what  string
			write func() error
		}{
			{"the held label of a namespace", func() error { return patchLabel(ctx, manager, shop, wellknown.HeldLabel, wellknown.HeldTrue) }},
			{"an execution namespace", func() error {
				return manager.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: wellknown.ExecutionNamespace("m1")}})
			}},
			{"a Pull agent's ServiceAccount in its execution namespace", func() error {
				return manager.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: wellknown.ExecutionNamespace("m1"), Name: "agent"}})
			}},
			{"a Pull agent's ClusterRole", func() error {
				return manager.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "flotilla:agent:m1"}})
			}},
			{"an event in a user's namespace", func() error {
				return manager.Create(ctx, &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "e"},
					EventTime: metav1.NowMicro(), ReportingController: "flotilla.io/manager", ReportingInstance: "flotilla-1", Action: "Propagate", Reason: "Test",
					Regarding: corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "x"}, Type: corev1.EventTypeNormal})
			}},
			{"its leader election lease", func() error {
				return manager.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "flotilla"}})
			}},
			{"a template's status", func() error {
				return manager.Status().Patch(ctx, dns, client.RawPatch(types.MergePatchType, []byte(`{"status":{"observedGeneration":1}}`)))
			}},
			{"deleting a used bootstrap token's ServiceAccount", func() error {
				return manager.Delete(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: agentauth.BootstrapServiceAccount("m1-abcdef")}})
			}},
			{"a credentials Secret of a member it joins, in its namespace, and its deletion", func() error {
				s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "m1", Labels: map[string]string{wellknown.JoinedClusterLabel: "m1"}}}
				if err := manager.Create(ctx, s); err != nil {
					return err
				}
				return manager.Delete(ctx, s)
			}},
			{"the ClusterProfiles' default namespace", func() error {
				return manager.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: wellknown.ClusterInventoryNamespace}})
			}},
			{"a ClusterProfile it publishes", func() error {
				return manager.Create(ctx, &inventoryv1alpha1.ClusterProfile{ObjectMeta: metav1.ObjectMeta{Namespace: wellknown.ClusterInventoryNamespace, Name: "m1",
					Labels: map[string]string{wellknown.InventoryManagedByLabel: wellknown.InventoryManagedBy}},
					Spec: inventoryv1alpha1.ClusterProfileSpec{ClusterManager: inventoryv1alpha1.ClusterManager{Name: wellknown.ClusterManagerName}}})
			}},
			{"a PlacementDecision it publishes, and its deletion", func() error {
				pd := &inventoryv1alpha1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0",
					Labels: map[string]string{wellknown.InventoryManagedByLabel: wellknown.InventoryManagedBy}}, Decisions: []inventoryv1alpha1.ClusterDecision{}}
				if err := manager.Create(ctx, pd); err != nil {
					return err
				}
				return manager.Delete(ctx, pd)
			}},
			{"its own kinds", func() error {
				return manager.Create(ctx, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "pp"},
					Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap"}}}})
			}},
		}
		for _, a := range allowed {
			Expect(a.write()).To(Succeed(), a.what)
		}
		Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(shop), shop)).To(Succeed())
		Expect(shop.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "restricted"))
	})

	It("leaves every other identity alone", func(ctx SpecContext) {
		Expect(patchLabel(ctx, env.Host, dns, "admin", "yes")).To(Succeed())
	})

	It("is created by the manager for its own ServiceAccount where no install path shipped it, and never for an admin", func(ctx SpecContext) {
		policy, binding := hostguard.Policy(ns, sa)
		Expect(env.Host.Delete(ctx, binding)).To(Succeed())
		Expect(env.Host.Delete(ctx, policy)).To(Succeed())

		By("a manager running as an admin creates nothing")
		Expect((&hostguard.Ensurer{Client: env.Host}).Start(ctx)).To(Succeed())
		Expect(apierrors.IsNotFound(env.Host.Get(ctx, client.ObjectKeyFromObject(policy), &admissionv1.ValidatingAdmissionPolicy{}))).To(BeTrue())

		By("the manager as its ServiceAccount creates the guard for itself, which then denies it")
		Expect((&hostguard.Ensurer{Client: manager}).Start(ctx)).To(Succeed())
		got := &admissionv1.ValidatingAdmissionPolicy{}
		Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(policy), got)).To(Succeed())
		Expect(got.Spec.MatchConditions[0].Expression).To(ContainSubstring(hostguard.Username(ns, sa)))
		Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(binding), &admissionv1.ValidatingAdmissionPolicyBinding{})).To(Succeed())
		Eventually(func() error { return patchLabel(ctx, manager, dns, "again", "guard") }).WithContext(ctx).Should(Satisfy(apierrors.IsForbidden))

		By("an existing guard is left as it is")
		Expect((&hostguard.Ensurer{Client: manager}).Start(ctx)).To(Succeed())
		again := &admissionv1.ValidatingAdmissionPolicy{}
		Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(policy), again)).To(Succeed())
		Expect(again.ResourceVersion).To(Equal(got.ResourceVersion))
	})
})
