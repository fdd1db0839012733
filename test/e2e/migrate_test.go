package e2e

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/fleetview"
	"github.com/flotilla-io/flotilla/internal/localcluster"
	"github.com/flotilla-io/flotilla/internal/migrate"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// A "Karmada leftover", built from Karmada's documented behaviour rather than by running it:
// a Karmada control plane (an apiserver of its own with the Karmada CRDs, which Flotilla's
// serve in the same wire format) holding Clusters, policies, templates and their bindings,
// and members holding the objects Karmada would have made for them: its karmada.io/managed
// label, work.karmada.io and resourcebinding.karmada.io keys, the template's UID in
// Karmada, and its field manager.
var _ = Describe("Migrating from Karmada", Ordered, func() {
	const (
		ns        = "e2e-migrate"
		templates = 20
		policies  = 5
	)
	var (
		karmada   client.Client
		opts      migrate.Options
		objUIDs   map[string]types.UID // cluster/name → member Deployment UID
		podUIDs   map[string]types.UID // cluster/pod → UID
		clusterOf = func(i int) string { return fmt.Sprintf("member%d", i%3+1) }
	)

	BeforeAll(func(ctx context.Context) {
		kc, err := localcluster.Start(ctx, localcluster.Options{Name: "karmada", Log: GinkgoWriter})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(kc.Stop)
		_, err = kc.InstallCRDs(ctx, filepath.Join(framework.RepoRoot(), "config", "crd", "bases"))
		Expect(err).NotTo(HaveOccurred())
		karmada, err = client.New(kc.RESTConfig(), client.Options{Scheme: flotillascheme.New()})
		Expect(err).NotTo(HaveOccurred())

		Expect(karmada.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		for _, m := range []string{"member1", "member2", "member3"} {
			Expect(karmada.Create(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: m},
				Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://127.0.0.1:1"}})).To(Succeed())
		}
		// 5 policies, each pinning 4 of the 20 Deployments to one member; 2 overrides.
		for p := range policies {
			pp := &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("pp%d", p),
				Labels: map[string]string{wellknown.PropagationPolicyPermanentIDLabel: fmt.Sprintf("karmada-id-%d", p)}},
				Spec: policyv1alpha1.PropagationSpec{Placement: policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{clusterOf(p)}}}}}
			for i := p; i < templates; i += policies {
				pp.Spec.ResourceSelectors = append(pp.Spec.ResourceSelectors, policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", Name: fmt.Sprintf("app%d", i)})
			}
			Expect(karmada.Create(ctx, pp)).To(Succeed())
		}
		for o, team := range []string{"blue", "green"} {
			Expect(karmada.Create(ctx, &policyv1alpha1.OverridePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("op%d", o)},
				Spec: policyv1alpha1.OverrideSpec{
					ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: fmt.Sprintf("app%d", o)}},
					OverrideRules: []policyv1alpha1.RuleWithCluster{{Overriders: policyv1alpha1.Overriders{
						LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{{Operator: policyv1alpha1.OverriderOpAdd, Value: map[string]string{"team": team}}}}}},
				}})).To(Succeed())
		}

		objUIDs, podUIDs = map[string]types.UID{}, map[string]types.UID{}
		for i := range templates {
			name := fmt.Sprintf("app%d", i)
			p := i % policies
			tmpl := deploymentTemplate(ns, name, 1)
			tmpl.Labels = map[string]string{wellknown.PropagationPolicyPermanentIDLabel: fmt.Sprintf("karmada-id-%d", p)}
			tmpl.Annotations = map[string]string{wellknown.PropagationPolicyNameAnnotation: fmt.Sprintf("pp%d", p), wellknown.PropagationPolicyNamespaceAnnotation: ns}
			Expect(karmada.Create(ctx, tmpl)).To(Succeed())
			cluster := clusterOf(p)
			Expect(karmada.Create(ctx, &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-deployment"},
				Spec: workv1alpha2.ResourceBindingSpec{
					Resource: workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: name, UID: tmpl.UID},
					Clusters: []workv1alpha2.TargetCluster{{Name: cluster, Replicas: 1}},
				}})).To(Succeed())

			// What Karmada made in the member for it.
			if err := env.Members[cluster].Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
				Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
			}
			made := deploymentTemplate(ns, name, 1)
			made.Labels = map[string]string{wellknown.ManagedLabel: wellknown.ManagedLabelValue,
				"work.karmada.io/permanent-id": "w-" + name, "resourcebinding.karmada.io/permanent-id": "rb-" + name,
				wellknown.PropagationPolicyPermanentIDLabel: fmt.Sprintf("karmada-id-%d", p)}
			if i < 2 {
				made.Labels["team"] = []string{"blue", "green"}[i]
			}
			made.Annotations = map[string]string{wellknown.ResourceTemplateUIDAnnotation: string(tmpl.UID),
				wellknown.WorkNamespaceAnnotation: "karmada-es-" + cluster, wellknown.WorkNameAnnotation: name + "-7c9d",
				"resourcetemplate.karmada.io/managed-labels": "app"}
			Expect(env.Members[cluster].Create(ctx, made, client.FieldOwner("karmada-controller-manager"))).To(Succeed())
			objUIDs[cluster+"/"+name] = made.UID
		}
		// Running, with their pods, before the migration.
		Eventually(func(g Gomega) {
			for key := range objUIDs {
				cluster, name := splitKey(key)
				d := &appsv1.Deployment{}
				g.Expect(env.Members[cluster].Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, d)).To(Succeed())
				g.Expect(d.Status.ReadyReplicas).To(Equal(int32(1)), "%s not ready", key)
			}
		}).WithContext(ctx).WithTimeout(3 * time.Minute).Should(Succeed())
		for _, m := range []string{"member1", "member2", "member3"} {
			pods := &corev1.PodList{}
			Expect(env.Members[m].List(ctx, pods, client.InNamespace(ns))).To(Succeed())
			for _, p := range pods.Items {
				podUIDs[m+"/"+p.Name] = p.UID
			}
		}
		Expect(podUIDs).To(HaveLen(templates))

		// Karmada's controller-manager holds its lease.
		Expect(karmada.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: migrate.DefaultLease.Namespace}})).To(Succeed())
		Expect(karmada.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: migrate.DefaultLease.Namespace, Name: migrate.DefaultLease.Name},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("karmada-controller-manager-7f9c_1"), LeaseDurationSeconds: ptr.To(int32(15)),
				RenewTime: &metav1.MicroTime{Time: time.Now()}}})).To(Succeed())

		configs := map[string]*rest.Config{}
		for _, m := range env.Fleet.Members {
			configs[m.Name] = m.RESTConfig()
		}
		opts = migrate.Options{Karmada: karmada, Host: env.Host, HostConfig: env.Fleet.Host.RESTConfig(),
			Namespaces: []string{ns}, MemberConfigs: configs}
	}, NodeTimeout(6*time.Minute))

	It("refuses while Karmada's controller-manager holds its lease", func(ctx context.Context) {
		_, err := migrate.Run(ctx, opts)
		Expect(errors.Is(err, migrate.ErrKarmadaRunning)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring("scale deployment karmada-controller-manager --replicas=0"))
	})

	It("plans, migrates without restarting a pod, and changes nothing when run again", func(ctx context.Context) {
		By("Karmada's controller-manager stopped: its lease expires")
		lease := &coordinationv1.Lease{}
		Expect(karmada.Get(ctx, migrate.DefaultLease, lease)).To(Succeed())
		lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Add(-time.Minute)}
		Expect(karmada.Update(ctx, lease)).To(Succeed())

		By("a dry run writes nothing, and says every member object will be adopted")
		dry := opts
		dry.DryRun = true
		plan, err := migrate.Run(ctx, dry)
		Expect(err).NotTo(HaveOccurred())
		Expect(plan.Count(migrate.Create)).To(Equal(templates+policies+2), "templates, policies and overrides")
		Expect(plan.Members).To(HaveLen(templates))
		for _, mo := range plan.Members {
			Expect(mo.Fate).To(Equal("adopt"), "%+v", mo)
		}
		Expect(env.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: "pp0"}, &policyv1alpha1.PropagationPolicy{})).
			To(MatchError(ContainSubstring("not found")))

		By("migrating")
		start := time.Now()
		done, err := migrate.Run(ctx, opts)
		Expect(err).NotTo(HaveOccurred())
		Expect(done.Items).To(Equal(plan.Items), "the run did what the dry run planned")
		eventuallyAllApplied(ctx, ns, templates)
		took := time.Since(start)
		AddReportEntry("migration of 20 templates, 5 policies and 2 overrides, until every binding is FullyApplied", took.String())
		GinkgoWriter.Printf("Migrated in %s (until every binding is FullyApplied)\n", took)

		By("every member object kept its UID, and every pod its own")
		for key, uid := range objUIDs {
			cluster, name := splitKey(key)
			d := &appsv1.Deployment{}
			Expect(env.Members[cluster].Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, d)).To(Succeed())
			Expect(d.UID).To(Equal(uid), key)
			Expect(d.Annotations).To(HaveKey(wellknown.HostIDAnnotation), key)
			Expect(d.Labels).NotTo(HaveKey("work.karmada.io/permanent-id"), key)
		}
		Consistently(func(g Gomega) map[string]types.UID {
			got := map[string]types.UID{}
			for _, m := range []string{"member1", "member2", "member3"} {
				pods := &corev1.PodList{}
				g.Expect(env.Members[m].List(ctx, pods, client.InNamespace(ns))).To(Succeed())
				for _, p := range pods.Items {
					got[m+"/"+p.Name] = p.UID
				}
			}
			return got
		}).WithContext(ctx).WithTimeout(5 * time.Second).Should(Equal(podUIDs))

		By("running it again changes nothing")
		again, err := migrate.Run(ctx, opts)
		Expect(err).NotTo(HaveOccurred())
		Expect(again.Count(migrate.Create)).To(BeZero())
		Expect(again.Count(migrate.Differs)).To(BeZero(), "%+v", again.Items)
	})
})

func splitKey(key string) (string, string) {
	cluster, name, _ := strings.Cut(key, "/")
	return cluster, name
}

var _ = Describe("Promoting a workload that runs in one member", func() {
	It("takes it and its ConfigMap over in place, without restarting its pods", func(ctx context.Context) {
		const ns, member = "e2e-promote", "member2"
		m := env.Members[member]
		Expect(m.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		cm := configMap(ns, "legacy-config", "v1")
		Expect(m.Create(ctx, cm)).To(Succeed())
		d := deploymentTemplate(ns, "legacy", 2)
		d.Spec.Template.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "legacy-config"}}}}
		Expect(m.Create(ctx, d)).To(Succeed())
		Eventually(func(g Gomega) int32 {
			g.Expect(m.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
			return d.Status.ReadyReplicas
		}).WithContext(ctx).Should(Equal(int32(2)))
		pods := func(g Gomega) map[string]types.UID {
			list := &corev1.PodList{}
			g.Expect(m.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			out := map[string]types.UID{}
			for _, p := range list.Items {
				out[p.Name] = p.UID
			}
			return out
		}
		before := pods(Default)
		Expect(before).To(HaveLen(2))

		// As the command does: the member read through the host's credential for it.
		h, err := fleetview.NewHost(env.Fleet.Host.RESTConfig())
		Expect(err).NotTo(HaveOccurred())
		c := &clusterv1alpha1.Cluster{}
		Expect(env.Host.Get(ctx, client.ObjectKey{Name: member}, c)).To(Succeed())
		mcfg, err := h.MemberConfig(ctx, c)
		Expect(err).NotTo(HaveOccurred())
		memberClient, err := client.New(mcfg, client.Options{Scheme: flotillascheme.New()})
		Expect(err).NotTo(HaveOccurred())
		items, err := migrate.Promote(ctx, migrate.PromoteOptions{Host: env.Host, Member: memberClient, Cluster: member,
			GVK: appsv1.SchemeGroupVersion.WithKind("Deployment"), Namespace: ns, Name: "legacy", Dependencies: true, OptIn: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(items).To(ContainElements(
			HaveField("Kind", "PropagationPolicy"), HaveField("Kind", "Deployment"), HaveField("Kind", "ConfigMap")))

		eventuallyAllApplied(ctx, ns, 2)
		got := &appsv1.Deployment{}
		Expect(m.Get(ctx, client.ObjectKeyFromObject(d), got)).To(Succeed())
		Expect(got.UID).To(Equal(d.UID))
		Expect(got.Annotations).To(HaveKey(wellknown.HostIDAnnotation))
		gotCM := &corev1.ConfigMap{}
		Expect(m.Get(ctx, client.ObjectKeyFromObject(cm), gotCM)).To(Succeed())
		Expect(gotCM.UID).To(Equal(cm.UID))
		Expect(gotCM.Labels).To(HaveKeyWithValue(wellknown.ManagedLabel, wellknown.ManagedLabelValue))
		Consistently(pods).WithContext(ctx).WithTimeout(5 * time.Second).Should(Equal(before))
	})
})
