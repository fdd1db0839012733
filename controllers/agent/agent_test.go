package agent_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers/agent"
	"github.com/flotilla-io/flotilla/internal/agentauth"
	"github.com/flotilla-io/flotilla/internal/register"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

const (
	pulled = "member1"
	ns     = "pull-app"
)

var _ = Describe("The Pull agent", Ordered, func() {
	var (
		running      *framework.Agent
		kubeconfig   string
		dir          string
		member       client.Client
		registeredBy string // the bootstrap token that registered the Cluster
	)
	startAgentLogging := func(ctx context.Context, log io.Writer) {
		var err error
		running, err = framework.StartAgent(ctx, kubeconfig, log, "--heartbeat-interval", heartbeat.String(),
			"--failure-threshold", strconv.Itoa(failureThreshold), "--cluster-status-interval", "2s", "--credential-check-interval", "500ms", "--identity", "suite")
		Expect(err).NotTo(HaveOccurred())
	}
	startAgent := func(ctx context.Context) { startAgentLogging(ctx, GinkgoWriter) }
	ready := func(ctx context.Context) metav1.ConditionStatus {
		c := &clusterv1alpha1.Cluster{}
		if err := env.Host.Get(ctx, types.NamespacedName{Name: pulled}, c); err != nil {
			return ""
		}
		if cond := meta.FindStatusCondition(c.Status.Conditions, wellknown.ClusterConditionReady); cond != nil {
			return cond.Status
		}
		return ""
	}
	memberData := func(ctx context.Context) map[string]string {
		cm := &corev1.ConfigMap{}
		if err := member.Get(ctx, types.NamespacedName{Namespace: ns, Name: "settings"}, cm); err != nil {
			return nil
		}
		return cm.Data
	}

	BeforeAll(func(ctx context.Context) {
		member = env.Members[pulled]
		var err error
		dir, err = os.MkdirTemp("", "flotilla-agent-suite-")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(os.RemoveAll, dir)
		// The agent runs across specs: stopped with the container, not with a spec.
		DeferCleanup(func() {
			if running != nil {
				running.Kill()
			}
		})
	})

	It("registers with a bootstrap token; the host makes the agent's identity and never gets member credentials", func(ctx context.Context) {
		res, err := env.Register(ctx, pulled)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.MemberID).NotTo(BeEmpty())
		c := &clusterv1alpha1.Cluster{}
		Expect(env.Host.Get(ctx, types.NamespacedName{Name: pulled}, c)).To(Succeed())
		Expect(c.Spec.SyncMode).To(Equal(clusterv1alpha1.Pull))
		Expect(c.Spec.SecretRef).To(BeNil())
		Expect(c.Labels).To(BeEmpty())
		Expect(c.Annotations).To(HaveKey(agentauth.HostIDAnnotation))
		registeredBy = c.Annotations[agentauth.BootstrapTokenAnnotation]
		Expect(registeredBy).To(HavePrefix(pulled + "-"))
		Expect(env.Host.Get(ctx, types.NamespacedName{Name: agentauth.AgentClusterRoleName(pulled)}, &rbacv1.ClusterRole{})).To(Succeed())
		// The member holds the agent's credential; the host holds none of the member's.
		s := &corev1.Secret{}
		Expect(member.Get(ctx, types.NamespacedName{Namespace: agentauth.SystemNamespace, Name: agentauth.HostSecret}, s)).To(Succeed())
		Expect(s.Data[agentauth.SecretKeyToken]).NotTo(BeEmpty())
		secrets := &corev1.SecretList{}
		Expect(env.Host.List(ctx, secrets, client.InNamespace(wellknown.SystemNamespace), client.MatchingLabels{wellknown.JoinedClusterLabel: pulled})).To(Succeed())
		Expect(secrets.Items).To(BeEmpty())

		kubeconfig, err = env.AgentKubeconfig(ctx, pulled, dir)
		Expect(err).NotTo(HaveOccurred())
	})

	It("reports Ready and the member's status, and closes the token exchange once it runs", func(ctx context.Context) {
		Expect(ready(ctx)).NotTo(Equal(metav1.ConditionTrue), "no agent yet")
		startAgent(ctx)
		// Never Ready before the member's APIs are known: the scheduler would leave it out.
		Eventually(func(g Gomega) {
			c := &clusterv1alpha1.Cluster{}
			g.Expect(env.Host.Get(ctx, types.NamespacedName{Name: pulled}, c)).To(Succeed())
			isReady := meta.IsStatusConditionTrue(c.Status.Conditions, wellknown.ClusterConditionReady)
			if isReady && len(c.Status.APIEnablements) == 0 {
				StopTrying("the agent reported Ready before the member's APIs").Now()
			}
			g.Expect(isReady).To(BeTrue())
		}).WithContext(ctx).WithPolling(50 * time.Millisecond).Should(Succeed())
		c := &clusterv1alpha1.Cluster{}
		Eventually(func(g Gomega) {
			g.Expect(env.Host.Get(ctx, types.NamespacedName{Name: pulled}, c)).To(Succeed())
			g.Expect(c.Status.KubernetesVersion).NotTo(BeEmpty())
			g.Expect(c.Status.APIEnablements).NotTo(BeEmpty())
		}).WithContext(ctx).Should(Succeed())
		Eventually(func() bool {
			err := env.Host.Get(ctx, types.NamespacedName{Namespace: wellknown.ExecutionNamespace(pulled), Name: agentauth.ExchangeRoleBinding}, &rbacv1.RoleBinding{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).Should(BeTrue())
		expectConsumed(ctx, registeredBy)
	})

	It("applies what policies place on the member, with the status coming back, and repairs drift", func(ctx context.Context) {
		Expect(env.Host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
			Labels: map[string]string{wellknown.PropagationLabel: wellknown.PropagationEnabled}}})).To(Succeed())
		Expect(env.Host.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"},
			Data: map[string]string{"mode": "pull"}})).To(Succeed())
		Expect(env.Host.Create(ctx, &policyv1alpha1.PropagationPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Name: "settings"}},
				Placement:         policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{pulled}}},
			},
		})).To(Succeed())
		Eventually(memberData).WithContext(ctx).Should(HaveKeyWithValue("mode", "pull"))

		works := &workv1alpha1.WorkList{}
		applied := func(g Gomega) {
			g.Expect(env.Host.List(ctx, works, client.InNamespace(wellknown.ExecutionNamespace(pulled)))).To(Succeed())
			g.Expect(works.Items).To(HaveLen(1))
			cond := meta.FindStatusCondition(works.Items[0].Status.Conditions, wellknown.WorkConditionApplied)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), cond.Message)
			g.Expect(works.Items[0].Status.ManifestStatuses).To(HaveLen(1))
		}
		Eventually(applied).WithContext(ctx).Should(Succeed())
		// The host's own execution controller leaves the Work to the agent.
		Consistently(applied).WithContext(ctx).WithTimeout(3 * time.Second).Should(Succeed())

		cm := &corev1.ConfigMap{}
		Expect(member.Get(ctx, types.NamespacedName{Namespace: ns, Name: "settings"}, cm)).To(Succeed())
		Expect(cm.Labels).To(HaveKeyWithValue(wellknown.ManagedLabel, wellknown.ManagedLabelValue))
		cm.Data["mode"] = "edited by hand"
		Expect(member.Update(ctx, cm)).To(Succeed())
		Eventually(memberData).WithContext(ctx).Should(HaveKeyWithValue("mode", "pull"))
	})

	// The agent finalizes Works with the execution controller's code: what a preserving
	// policy leaves when its template goes is released in the member, as with Push.
	It("releases in the member what a preserving policy leaves when its template is deleted", func(ctx context.Context) {
		kept := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kept"}, Data: map[string]string{"mode": "pull"}}
		Expect(env.Host.Create(ctx, kept.DeepCopy())).To(Succeed())
		pp := &policyv1alpha1.PropagationPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kept"},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors:           []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Name: "kept"}},
				Placement:                   policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{pulled}}},
				PreserveResourcesOnDeletion: ptr.To(true),
			},
		}
		Expect(env.Host.Create(ctx, pp)).To(Succeed())
		inMember := func(g Gomega) *corev1.ConfigMap {
			cm := &corev1.ConfigMap{}
			g.Expect(member.Get(ctx, client.ObjectKeyFromObject(kept), cm)).To(Succeed())
			return cm
		}
		Eventually(func(g Gomega) {
			g.Expect(inMember(g).Labels).To(HaveKeyWithValue(wellknown.ManagedLabel, wellknown.ManagedLabelValue))
		}).WithContext(ctx).Should(Succeed())

		Expect(env.Host.Delete(ctx, kept)).To(Succeed())
		Eventually(func(g Gomega) {
			cm := inMember(g)
			g.Expect(cm.Labels).NotTo(HaveKey(wellknown.ManagedLabel))
			g.Expect(cm.Annotations).NotTo(HaveKey(wellknown.WorkNameAnnotation))
			g.Expect(cm.Data).To(HaveKeyWithValue("mode", "pull"))
		}).WithContext(ctx).Should(Succeed())
		Expect(env.Host.Delete(ctx, pp)).To(Succeed())
		Expect(member.Delete(ctx, kept)).To(Succeed())
	})

	// Issue 34: the agent interprets member objects with the host's customizations, as the
	// manager does for a Push member, so health (and so failover) and reflected status read
	// the same in both modes; an edit or a deletion on the host reaches it without a restart.
	It("applies the host's ResourceInterpreterCustomizations: health and reflected status as for Push, following edits", func(ctx context.Context) {
		gauge := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gauge"}, Data: map[string]string{"state": "down"}}
		Expect(env.Host.Create(ctx, gauge.DeepCopy())).To(Succeed())
		pp := &policyv1alpha1.PropagationPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gauge"},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Name: "gauge"}},
				Placement:         policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{pulled}}},
			},
		}
		Expect(env.Host.Create(ctx, pp)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(env.Host.Delete(ctx, pp))).To(Succeed())
			Expect(client.IgnoreNotFound(env.Host.Delete(ctx, gauge))).To(Succeed())
		})
		// reported is the gauge's health and reflected status in its Work, and its health in
		// its binding.
		reported := func(g Gomega) string {
			works := &workv1alpha1.WorkList{}
			g.Expect(env.Host.List(ctx, works, client.InNamespace(wellknown.ExecutionNamespace(pulled)))).To(Succeed())
			var out []string
			for _, w := range works.Items {
				for _, st := range w.Status.ManifestStatuses {
					if st.Identifier.Kind == "ConfigMap" && st.Identifier.Name == gauge.Name {
						status := "-"
						if st.Status != nil {
							status = string(st.Status.Raw)
						}
						out = append(out, string(st.Health)+" "+status)
					}
				}
			}
			g.Expect(out).To(HaveLen(1), "the gauge's Work")
			rb := &workv1alpha2.ResourceBinding{}
			g.Expect(env.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: "gauge-configmap"}, rb)).To(Succeed())
			g.Expect(rb.Status.AggregatedStatus).To(HaveLen(1))
			return out[0] + " / binding " + string(rb.Status.AggregatedStatus[0].Health)
		}
		By("the built-in rules: a ConfigMap is Healthy and has no status")
		Eventually(reported).WithContext(ctx).Should(Equal("Healthy - / binding Healthy"))

		By("a customization created on the host applies to what the member holds")
		ric := &configv1alpha1.ResourceInterpreterCustomization{ObjectMeta: metav1.ObjectMeta{Name: "pull-gauges"},
			Spec: configv1alpha1.ResourceInterpreterCustomizationSpec{
				Target: configv1alpha1.CustomizationTarget{APIVersion: "v1", Kind: "ConfigMap"},
				Customizations: configv1alpha1.CustomizationRules{
					HealthInterpretation: &configv1alpha1.HealthInterpretation{LuaScript: `
function InterpretHealth(obj)
  if obj.metadata.name ~= "gauge" then return true end
  return obj.data.state == "up"
end`},
					StatusReflection: &configv1alpha1.StatusReflection{LuaScript: `
function ReflectStatus(obj)
  if obj.metadata.name ~= "gauge" then return nil end
  return {state = obj.data.state}
end`},
				},
			}}
		Expect(env.Host.Create(ctx, ric)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Host.Delete(ctx, ric))).To(Succeed()) })
		Eventually(reported).WithContext(ctx).Should(Equal(`Unhealthy {"state":"down"} / binding Unhealthy`))

		By("the member object changes: the scripts read it")
		tmpl := &corev1.ConfigMap{}
		Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(gauge), tmpl)).To(Succeed())
		patch := client.MergeFrom(tmpl.DeepCopy())
		tmpl.Data["state"] = "up"
		Expect(env.Host.Patch(ctx, tmpl, patch)).To(Succeed())
		Eventually(reported).WithContext(ctx).Should(Equal(`Healthy {"state":"up"} / binding Healthy`))

		By("an edit of the customization applies without a restart")
		Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(ric), ric)).To(Succeed())
		ric.Spec.Customizations.HealthInterpretation.LuaScript = `
function InterpretHealth(obj)
  if obj.metadata.name ~= "gauge" then return true end
  return obj.data.state == "serving"
end`
		Expect(env.Host.Update(ctx, ric)).To(Succeed())
		Eventually(reported).WithContext(ctx).Should(Equal(`Unhealthy {"state":"up"} / binding Unhealthy`))

		By("deleting it brings the built-in rules back")
		Expect(env.Host.Delete(ctx, ric)).To(Succeed())
		Eventually(reported).WithContext(ctx).Should(Equal("Healthy - / binding Healthy"))
	})

	It("can do nothing else in the host with its credential", func(ctx context.Context) {
		s := &corev1.Secret{}
		Expect(member.Get(ctx, types.NamespacedName{Namespace: agentauth.SystemNamespace, Name: agentauth.HostSecret}, s)).To(Succeed())
		cred, err := agent.CredentialFromSecret(s)
		Expect(err).NotTo(HaveOccurred())
		as := hostClient(cred.Server, cred.Token, cred.CA)

		// Another member's execution namespace and Cluster: a second Pull Cluster with no agent.
		Expect(env.Host.Create(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "other"},
			Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull}})).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(env.Host.Delete(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "other"}}))).To(Succeed())
		})
		otherNS := wellknown.ExecutionNamespace("other")
		Eventually(func() error {
			return env.Host.Get(ctx, types.NamespacedName{Name: otherNS}, &corev1.Namespace{})
		}).WithContext(ctx).Should(Succeed())

		forbidden := map[string]error{
			"list Works of another member":       as.List(ctx, &workv1alpha1.WorkList{}, client.InNamespace(otherNS)),
			"list Works of every namespace":      as.List(ctx, &workv1alpha1.WorkList{}),
			"read another Cluster":               as.Get(ctx, types.NamespacedName{Name: "other"}, &clusterv1alpha1.Cluster{}),
			"list Clusters":                      as.List(ctx, &clusterv1alpha1.ClusterList{}),
			"read Secrets in its own namespace":  as.List(ctx, &corev1.SecretList{}, client.InNamespace(wellknown.ExecutionNamespace(pulled))),
			"read the host's Secrets":            as.List(ctx, &corev1.SecretList{}, client.InNamespace(wellknown.SystemNamespace)),
			"read PropagationPolicies":           as.List(ctx, &policyv1alpha1.PropagationPolicyList{}, client.InNamespace(ns)),
			"read ClusterPropagationPolicies":    as.List(ctx, &policyv1alpha1.ClusterPropagationPolicyList{}),
			"read the templates":                 as.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns)),
			"write its Cluster's spec":           as.Patch(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: pulled}}, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"taints":[]}}`))),
			"write another Cluster's status":     as.Status().Patch(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, client.RawPatch(types.MergePatchType, []byte(`{"status":{"kubernetesVersion":"x"}}`))),
			"create Works":                       as.Create(ctx, &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: wellknown.ExecutionNamespace(pulled), Name: "forged"}}),
			"read another member's Lease":        as.Get(ctx, types.NamespacedName{Namespace: otherNS, Name: agentauth.HeartbeatLease}, &coordinationv1.Lease{}),
			"ask for a token of another account": requestToken(ctx, as, wellknown.SystemNamespace, "flotilla-manager"),
			"create a customization": as.Create(ctx, &configv1alpha1.ResourceInterpreterCustomization{ObjectMeta: metav1.ObjectMeta{Name: "forged"},
				Spec: configv1alpha1.ResourceInterpreterCustomizationSpec{Target: configv1alpha1.CustomizationTarget{APIVersion: "v1", Kind: "ConfigMap"},
					Customizations: configv1alpha1.CustomizationRules{HealthInterpretation: &configv1alpha1.HealthInterpretation{LuaScript: "function InterpretHealth(obj) return true end"}}}}),
			"write a customization's status": as.Status().Patch(ctx, &configv1alpha1.ResourceInterpreterCustomization{ObjectMeta: metav1.ObjectMeta{Name: "any"}},
				client.RawPatch(types.MergePatchType, []byte(`{"status":{"observedGeneration":1}}`))),
		}
		for what, err := range forbidden {
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%s: want 403 Forbidden, got %v", what, err)
		}
		// What it needs works.
		Expect(as.Get(ctx, types.NamespacedName{Name: pulled}, &clusterv1alpha1.Cluster{})).To(Succeed())
		Expect(as.List(ctx, &workv1alpha1.WorkList{}, client.InNamespace(wellknown.ExecutionNamespace(pulled)))).To(Succeed())
		Expect(as.List(ctx, &configv1alpha1.ResourceInterpreterCustomizationList{})).To(Succeed())
	})

	It("keeps a bootstrap token to registering the one Pull Cluster it was made for, with nothing that decides placement", func(ctx context.Context) {
		const fresh = "fresh"
		t, err := register.CreateToken(ctx, env.Fleet.Host.RESTConfig(), fresh, register.MinTokenTTL)
		Expect(err).NotTo(HaveOccurred())
		Expect(t.ID).To(HavePrefix(fresh + "-"))
		DeferCleanup(func(ctx context.Context) {
			Expect(register.DeleteToken(ctx, env.Fleet.Host.RESTConfig(), t.ID)).To(Succeed())
		})
		as := hostClient(t.Server, t.Token, t.CA)
		pull := func(name string, edit func(*clusterv1alpha1.Cluster)) *clusterv1alpha1.Cluster {
			c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{agentauth.BootstrapTokenAnnotation: t.ID}},
				Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull}}
			if edit != nil {
				edit(c)
			}
			return c
		}
		refused := map[string]struct {
			cluster *clusterv1alpha1.Cluster
			says    string
		}{
			"a Push Cluster": {pull(fresh, func(c *clusterv1alpha1.Cluster) {
				c.Spec.SyncMode = clusterv1alpha1.Push
				c.Spec.SecretRef = &clusterv1alpha1.LocalSecretReference{Namespace: wellknown.SystemNamespace, Name: "anything"}
			}), "Pull"},
			"another token's name": {pull(fresh, func(c *clusterv1alpha1.Cluster) { c.Annotations[agentauth.BootstrapTokenAnnotation] = "someone-else" }), t.ID},
			"a second Cluster":     {pull("second", nil), "registers one cluster, the one it was made for: this one registers fresh, not second"},
			"labels":               {pull(fresh, func(c *clusterv1alpha1.Cluster) { c.Labels = map[string]string{"env": "prod"} }), "metadata.labels"},
			"taints": {pull(fresh, func(c *clusterv1alpha1.Cluster) {
				c.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}}
			}), "spec.taints"},
			"zones":    {pull(fresh, func(c *clusterv1alpha1.Cluster) { c.Spec.Zones = []string{"eu-west-1a"} }), "spec.zones"},
			"zone":     {pull(fresh, func(c *clusterv1alpha1.Cluster) { c.Spec.Zone = "eu-west-1a" }), "spec.zone"},
			"provider": {pull(fresh, func(c *clusterv1alpha1.Cluster) { c.Spec.Provider = "aws" }), "spec.provider"},
			"region and provider": {pull(fresh, func(c *clusterv1alpha1.Cluster) { c.Spec.Region, c.Spec.Provider = "eu-west-1", "aws" }),
				"remove spec.provider, spec.region"},
			"another annotation": {pull(fresh, func(c *clusterv1alpha1.Cluster) { c.Annotations[wellknown.KeepWorkloadsAnnotation] = "true" }), "no annotation"},
		}
		for what, r := range refused {
			err := as.Create(ctx, r.cluster)
			Expect(apierrors.IsInvalid(err) || apierrors.IsForbidden(err)).To(BeTrue(), "%s: %v", what, err)
			Expect(err.Error()).To(ContainSubstring(r.says), what)
		}
		Expect(apierrors.IsForbidden(as.List(ctx, &corev1.SecretList{}, client.InNamespace(wellknown.SystemNamespace)))).To(BeTrue())
		Expect(apierrors.IsForbidden(as.Get(ctx, types.NamespacedName{Name: pulled}, &clusterv1alpha1.Cluster{}))).To(BeTrue())
		// Its exchange is for its own Cluster only.
		Expect(apierrors.IsForbidden(requestToken(ctx, as, wellknown.ExecutionNamespace(pulled), agentauth.AgentServiceAccount))).To(BeTrue())
		// What register sends passes (dry run: the name stays free).
		Expect(as.Create(ctx, pull(fresh, func(c *clusterv1alpha1.Cluster) { c.Spec.ID, c.Spec.APIEndpoint = "some-id", "https://127.0.0.1:6443" }), client.DryRunAll)).To(Succeed())
		// A token made for another name is refused by register before it asks the host.
		_, err = register.Register(ctx, register.Options{Name: "second", Host: t.Server, Token: t.Token, CA: t.CA, Member: env.Fleet.Member(pulled).RESTConfig(), NoDeployment: true})
		Expect(err).To(MatchError(ContainSubstring("registers one cluster, fresh, not second")))
	})

	It("is reported Unknown and tainted when it stops, and Ready again when it comes back", func(ctx context.Context) {
		running.Kill()
		Eventually(ready).WithContext(ctx).Should(Equal(metav1.ConditionUnknown))
		Eventually(func(g Gomega) {
			c := &clusterv1alpha1.Cluster{}
			g.Expect(env.Host.Get(ctx, types.NamespacedName{Name: pulled}, c)).To(Succeed())
			g.Expect(c.Spec.Taints).To(ContainElement(HaveField("Key", wellknown.TaintClusterUnreachable)))
		}).WithContext(ctx).Should(Succeed())
		startAgent(ctx)
		Eventually(ready).WithContext(ctx).Should(Equal(metav1.ConditionTrue))
		Eventually(func(g Gomega) {
			c := &clusterv1alpha1.Cluster{}
			g.Expect(env.Host.Get(ctx, types.NamespacedName{Name: pulled}, c)).To(Succeed())
			g.Expect(c.Spec.Taints).To(BeEmpty())
		}).WithContext(ctx).Should(Succeed())
	})

	It("rotates its credential and goes on working with the new one", func(ctx context.Context) {
		key := types.NamespacedName{Namespace: agentauth.SystemNamespace, Name: agentauth.HostSecret}
		s := &corev1.Secret{}
		Expect(member.Get(ctx, key, s)).To(Succeed())
		old := string(s.Data[agentauth.SecretKeyToken])
		// Make the credential look old: four fifths of its lifetime gone.
		s.Data[agentauth.SecretKeyIssued] = []byte(time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))
		s.Data[agentauth.SecretKeyExpires] = []byte(time.Now().Add(time.Minute).UTC().Format(time.RFC3339))
		Expect(member.Update(ctx, s)).To(Succeed())
		Eventually(func() string {
			_ = member.Get(ctx, key, s)
			return string(s.Data[agentauth.SecretKeyToken])
		}).WithContext(ctx).ShouldNot(Equal(old))
		cred, err := agent.CredentialFromSecret(s)
		Expect(err).NotTo(HaveOccurred())
		Expect(cred.Expires).To(BeTemporally(">", time.Now().Add(time.Hour)))

		tmpl := &corev1.ConfigMap{}
		Expect(env.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: "settings"}, tmpl)).To(Succeed())
		patch := client.MergeFrom(tmpl.DeepCopy())
		tmpl.Data["mode"] = "rotated"
		Expect(env.Host.Patch(ctx, tmpl, patch)).To(Succeed())
		Eventually(memberData).WithContext(ctx).Should(HaveKeyWithValue("mode", "rotated"))
		Consistently(ready).WithContext(ctx).WithTimeout(3 * time.Second).Should(Equal(metav1.ConditionTrue))
	})

	// Issue 33: an agent offline past its credential's expiry cannot renew it; it says what to
	// run, and a token made for its Cluster with register run again bring it back without
	// unregistering: the Cluster, its Works and the member's objects stay as they are.
	It("comes back after it was offline past its credential's expiry, with a token made for its Cluster and register run again", func(ctx context.Context) {
		running.Kill()
		// The TokenRequest API grants at least 10 minutes, so an expired credential is played
		// by one the host rejects, dated as expired.
		key := types.NamespacedName{Namespace: agentauth.SystemNamespace, Name: agentauth.HostSecret}
		s := &corev1.Secret{}
		Expect(member.Get(ctx, key, s)).To(Succeed())
		s.Data[agentauth.SecretKeyToken] = []byte("expired-credential")
		s.Data[agentauth.SecretKeyIssued] = []byte(time.Now().Add(-8 * 24 * time.Hour).UTC().Format(time.RFC3339))
		s.Data[agentauth.SecretKeyExpires] = []byte(time.Now().Add(-24 * time.Hour).UTC().Format(time.RFC3339))
		Expect(member.Update(ctx, s)).To(Succeed())
		Eventually(ready).WithContext(ctx).Should(Equal(metav1.ConditionUnknown))

		log := &syncBuffer{}
		startAgentLogging(ctx, io.MultiWriter(GinkgoWriter, log))
		Eventually(log.String).WithContext(ctx).Should(And(ContainSubstring("401"), ContainSubstring("expired at"),
			ContainSubstring("kubectl flotilla token create "+pulled), ContainSubstring("kubectl flotilla register "+pulled)))
		Consistently(ready).WithContext(ctx).WithTimeout(2 * time.Second).ShouldNot(Equal(metav1.ConditionTrue))

		t, err := register.CreateToken(ctx, env.Fleet.Host.RESTConfig(), pulled, register.MinTokenTTL)
		Expect(err).NotTo(HaveOccurred())
		Expect(t.Reregisters).To(BeTrue())
		o := register.Options{Name: pulled, Host: t.Server, Token: t.Token, CA: t.CA, Member: env.Fleet.Member(pulled).RESTConfig(), NoDeployment: true}
		res, err := register.Register(ctx, o)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Reregistered).To(BeTrue())

		// The running agent picks the new credential up.
		Eventually(ready).WithContext(ctx).Should(Equal(metav1.ConditionTrue))
		Expect(memberData(ctx)).To(HaveKeyWithValue("mode", "rotated"), "the member's objects stayed")
		tmpl := &corev1.ConfigMap{}
		Expect(env.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: "settings"}, tmpl)).To(Succeed())
		patch := client.MergeFrom(tmpl.DeepCopy())
		tmpl.Data["mode"] = "recovered"
		Expect(env.Host.Patch(ctx, tmpl, patch)).To(Succeed())
		Eventually(memberData).WithContext(ctx).Should(HaveKeyWithValue("mode", "recovered"))

		// The token was good for this once.
		expectConsumed(ctx, t.ID)
		_, err = register.Register(ctx, o)
		Expect(err).To(MatchError(And(ContainSubstring("401"), ContainSubstring("used already"), ContainSubstring("kubectl flotilla token create "+pulled))))
	})

	It("unregisters: the Cluster goes with what it propagated, then the agent's objects in the member", func(ctx context.Context) {
		removed, err := register.Unregister(ctx, register.UnregisterOptions{Name: pulled, Member: env.Fleet.Member(pulled).RESTConfig(), Host: env.Fleet.Host.RESTConfig()})
		Expect(err).NotTo(HaveOccurred())
		Expect(removed).NotTo(BeEmpty())
		Expect(memberData(ctx)).To(BeNil(), "the agent removed the propagated ConfigMap before its Cluster went")
		Expect(apierrors.IsNotFound(member.Get(ctx, types.NamespacedName{Namespace: agentauth.SystemNamespace, Name: agentauth.HostSecret}, &corev1.Secret{}))).To(BeTrue())
		Expect(apierrors.IsNotFound(member.Get(ctx, types.NamespacedName{Name: agentauth.AgentServiceAccount}, &rbacv1.ClusterRole{}))).To(BeTrue())
		Expect(apierrors.IsNotFound(env.Host.Get(ctx, types.NamespacedName{Name: agentauth.AgentClusterRoleName(pulled)}, &rbacv1.ClusterRole{}))).To(BeTrue())
		running.Kill()
	})
})

// expectConsumed waits until bootstrap token id is gone from the host, with the annotation
// that named it on the Cluster, once the agent it registered reports.
func expectConsumed(ctx context.Context, id string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		err := env.Host.Get(ctx, types.NamespacedName{Namespace: agentauth.SystemNamespace, Name: agentauth.BootstrapServiceAccount(id)}, &corev1.ServiceAccount{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the token's ServiceAccount: %v", err)
		err = env.Host.Get(ctx, types.NamespacedName{Name: agentauth.BootstrapBinding(id)}, &rbacv1.ClusterRoleBinding{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the token's ClusterRoleBinding: %v", err)
		c := &clusterv1alpha1.Cluster{}
		g.Expect(env.Host.Get(ctx, types.NamespacedName{Name: pulled}, c)).To(Succeed())
		g.Expect(c.Annotations).NotTo(HaveKey(agentauth.BootstrapTokenAnnotation))
	}).WithContext(ctx).Should(Succeed())
}

// syncBuffer collects a process's output for a spec to read while it runs.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func hostClient(server, token string, ca []byte) client.Client {
	cl, err := client.New(&rest.Config{Host: server, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: ca}},
		client.Options{Scheme: flotillascheme.New()})
	Expect(err).NotTo(HaveOccurred())
	return cl
}

func requestToken(ctx context.Context, cl client.Client, namespace, name string) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	return cl.SubResource("token").Create(ctx, sa, &authenticationv1.TokenRequest{})
}
