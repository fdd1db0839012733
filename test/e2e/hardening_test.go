package e2e

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/bindings"
	"github.com/flotilla-io/flotilla/internal/join"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// Everyday events of a fleet: each spec here failed on the first cut of the chain.

// eventuallyAllApplied waits until every Work of the namespace's bindings is Applied=True
// at its generation and every binding is FullyApplied.
func eventuallyAllApplied(ctx context.Context, ns string, bindingsWanted int) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		rbs := &workv1alpha2.ResourceBindingList{}
		g.Expect(env.Host.List(ctx, rbs, client.InNamespace(ns))).To(Succeed())
		g.Expect(rbs.Items).To(HaveLen(bindingsWanted))
		for _, rb := range rbs.Items {
			g.Expect(meta.IsStatusConditionTrue(rb.Status.Conditions, wellknown.ConditionFullyApplied)).To(BeTrue(),
				"binding %s: %+v", rb.Name, rb.Status.Conditions)
		}
		works := &workv1alpha1.WorkList{}
		g.Expect(env.Host.List(ctx, works)).To(Succeed())
		for _, w := range works.Items {
			if w.Annotations[wellknown.ResourceBindingNamespaceAnnotation] != ns {
				continue
			}
			c := meta.FindStatusCondition(w.Status.Conditions, wellknown.WorkConditionApplied)
			g.Expect(c).NotTo(BeNil(), "Work %s/%s has no Applied condition", w.Namespace, w.Name)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "Work %s/%s: %+v", w.Namespace, w.Name, c)
			g.Expect(c.ObservedGeneration).To(Equal(w.Generation), "Work %s/%s", w.Namespace, w.Name)
		}
	}).WithContext(ctx).Should(Succeed())
}

func patchTemplate(ctx context.Context, obj client.Object, patch string) {
	GinkgoHelper()
	Expect(env.Host.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
}

var _ = Describe("Member blips", func() {
	It("returns every Work to Applied=True and every binding to FullyApplied after a member was unreachable, without any edit", func(ctx context.Context) {
		ns := templateNamespace(ctx, "e2e-blip")
		Expect(env.Host.Create(ctx, policyTo(ns, "all", false, "member1", "member2"))).To(Succeed())
		for _, n := range []string{"a", "b", "c"} {
			Expect(env.Host.Create(ctx, configMap(ns, n, "v1"))).To(Succeed())
		}
		eventuallyAllApplied(ctx, ns, 3)

		m2 := env.Fleet.Member("member2")
		Expect(m2.StopAPIServer()).To(Succeed())
		restarted := false
		DeferCleanup(func(ctx context.Context) {
			if !restarted {
				_ = m2.StartAPIServer(ctx)
			}
		})
		// While it is down its Works say so.
		Eventually(func(g Gomega) {
			w := &workv1alpha1.Work{}
			g.Expect(env.Host.Get(ctx, types.NamespacedName{Namespace: wellknown.ExecutionNamespace("member2"),
				Name: bindings.WorkName("ConfigMap", ns, "a")}, w)).To(Succeed())
			c := meta.FindStatusCondition(w.Status.Conditions, wellknown.WorkConditionApplied)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionUnknown))
		}).WithContext(ctx).Should(Succeed())

		Expect(m2.StartAPIServer(ctx)).To(Succeed())
		restarted = true
		env.EventuallyMemberSettled(ctx, "member2")
		eventuallyAllApplied(ctx, ns, 3)

		// And later edits still reach it.
		setValue(ctx, ns, "b", "v2")
		Eventually(memberValue(ctx, "member2", ns, "b")).WithContext(ctx).Should(Equal("v2"))
	})
})

var _ = Describe("Metadata-only edits", func() {
	It("propagates label and annotation changes of templates of every kind", func(ctx context.Context) {
		ns := templateNamespace(ctx, "e2e-metadata")
		pp := policyTo(ns, "all", false, "member1")
		pp.Spec.ResourceSelectors = append(pp.Spec.ResourceSelectors, policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment"})
		Expect(env.Host.Create(ctx, pp)).To(Succeed())
		cm := configMap(ns, "cm", "v1")
		Expect(env.Host.Create(ctx, cm)).To(Succeed())
		dep := deploymentTemplate(ns, "web", 1)
		Expect(env.Host.Create(ctx, dep)).To(Succeed())
		eventuallyAllApplied(ctx, ns, 2)

		patchTemplate(ctx, cm, `{"metadata":{"labels":{"team":"blue"},"annotations":{"owner":"ops"}}}`)
		patchTemplate(ctx, dep, `{"metadata":{"labels":{"team":"blue"},"annotations":{"owner":"ops"}}}`)
		Eventually(func(g Gomega) {
			got := &corev1.ConfigMap{}
			g.Expect(env.Members["member1"].Get(ctx, client.ObjectKeyFromObject(cm), got)).To(Succeed())
			g.Expect(got.Labels).To(HaveKeyWithValue("team", "blue"))
			g.Expect(got.Annotations).To(HaveKeyWithValue("owner", "ops"))
			d := &appsv1.Deployment{}
			g.Expect(env.Members["member1"].Get(ctx, client.ObjectKeyFromObject(dep), d)).To(Succeed())
			g.Expect(d.Labels).To(HaveKeyWithValue("team", "blue"))
			g.Expect(d.Annotations).To(HaveKeyWithValue("owner", "ops"))
		}).WithContext(ctx).Should(Succeed())

		patchTemplate(ctx, cm, `{"metadata":{"labels":{"team":"green"}}}`)
		Eventually(func(g Gomega) {
			got := &corev1.ConfigMap{}
			g.Expect(env.Members["member1"].Get(ctx, client.ObjectKeyFromObject(cm), got)).To(Succeed())
			g.Expect(got.Labels).To(HaveKeyWithValue("team", "green"))
		}).WithContext(ctx).Should(Succeed())
	})
})

func deploymentTemplate(ns, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resourceQuantity("10m")}}}}},
			},
		},
	}
}

var _ = Describe("Fields owned by members", func() {
	It("leaves the replicas of a member HPA alone while template edits still arrive, and takes them back once it is deleted", func(ctx context.Context) {
		ns := templateNamespace(ctx, "e2e-hpa")
		pp := &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment"}},
				Placement:         policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1"}}},
			}}
		Expect(env.Host.Create(ctx, pp)).To(Succeed())
		dep := deploymentTemplate(ns, "web", 1)
		Expect(env.Host.Create(ctx, dep)).To(Succeed())
		memberReplicas := func() int32 {
			d := &appsv1.Deployment{}
			if err := env.Members["member1"].Get(ctx, client.ObjectKeyFromObject(dep), d); err != nil {
				return -1
			}
			return ptr.Deref(d.Spec.Replicas, 1)
		}
		Eventually(memberReplicas).WithContext(ctx).Should(Equal(int32(1)))

		// An HPA in the member: below minReplicas it scales up without needing metrics.
		hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
				MinReplicas:    ptr.To(int32(3)), MaxReplicas: 5,
				Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
					Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(int32(80))}}}},
			}}
		Expect(env.Members["member1"].Create(ctx, hpa)).To(Succeed())
		Eventually(memberReplicas).WithContext(ctx).WithTimeout(90 * time.Second).Should(Equal(int32(3)))

		// A template edit is applied, and the HPA's replicas are kept.
		patchTemplate(ctx, dep, `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.28"}]}}}}`)
		Eventually(func() string {
			d := &appsv1.Deployment{}
			if err := env.Members["member1"].Get(ctx, client.ObjectKeyFromObject(dep), d); err != nil {
				return ""
			}
			return d.Spec.Template.Spec.Containers[0].Image
		}).WithContext(ctx).Should(Equal("nginx:1.28"))
		Consistently(memberReplicas).WithContext(ctx).WithTimeout(5 * time.Second).Should(Equal(int32(3)))
		eventuallyAllApplied(ctx, ns, 1)

		// Without the HPA, the replicas are the template's again.
		Expect(env.Members["member1"].Delete(ctx, hpa)).To(Succeed())
		Eventually(memberReplicas).WithContext(ctx).Should(Equal(int32(1)))
	})
})

var _ = Describe("Member ownership", func() {
	It("does not take over an object another control plane manages", func(ctx context.Context) {
		ns := templateNamespace(ctx, "e2e-owner")
		Expect(env.Members["member1"].Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		theirs := configMap(ns, "shared", "theirs")
		theirs.Labels = map[string]string{wellknown.ManagedLabel: wellknown.ManagedLabelValue}
		theirs.Annotations = map[string]string{wellknown.HostIDAnnotation: "another-host", wellknown.ResourceTemplateUIDAnnotation: "another-template"}
		Expect(env.Members["member1"].Create(ctx, theirs)).To(Succeed())
		Expect(env.Host.Create(ctx, policyTo(ns, "all", false, "member1"))).To(Succeed())
		Expect(env.Host.Create(ctx, configMap(ns, "shared", "ours"))).To(Succeed())

		eventuallyConflict(ctx, "member1", ns, "shared", "another control plane (host id another-host)")
		Consistently(memberValue(ctx, "member1", ns, "shared")).WithContext(ctx).WithTimeout(2 * time.Second).Should(Equal("theirs"))
	})
})

var _ = Describe("Deletion order", func() {
	It("removes member objects when a namespace holding both the policy and its templates is deleted", func(ctx context.Context) {
		ns := templateNamespace(ctx, "e2e-nsdelete")
		Expect(env.Host.Create(ctx, policyTo(ns, "all", false, "member3"))).To(Succeed())
		for _, n := range []string{"a", "b", "c", "d"} {
			Expect(env.Host.Create(ctx, configMap(ns, n, "v1"))).To(Succeed())
		}
		eventuallyAllApplied(ctx, ns, 4)
		Expect(env.Host.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		for _, n := range []string{"a", "b", "c", "d"} {
			Eventually(memberValue(ctx, "member3", ns, n)).WithContext(ctx).Should(BeEmpty(), "ConfigMap %s is left in member3", n)
		}
		Eventually(func() error {
			return env.Host.Get(ctx, types.NamespacedName{Name: ns}, &corev1.Namespace{})
		}).WithContext(ctx).Should(Satisfy(apierrors.IsNotFound))
	})

	It("applies a Work created outside Flotilla without waiting for another event", func(ctx context.Context) {
		const ns = "e2e-raw-work"
		raw, err := json.Marshal(configMap(ns, "raw", "direct"))
		Expect(err).NotTo(HaveOccurred())
		var u map[string]any
		Expect(json.Unmarshal(raw, &u)).To(Succeed())
		u["apiVersion"], u["kind"] = "v1", "ConfigMap"
		raw, err = json.Marshal(u)
		Expect(err).NotTo(HaveOccurred())
		w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: wellknown.ExecutionNamespace("member1"), Name: "raw"},
			Spec: workv1alpha1.WorkSpec{Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}}}}
		Expect(env.Host.Create(ctx, w)).To(Succeed())
		Eventually(memberValue(ctx, "member1", ns, "raw")).WithContext(ctx).Should(Equal("direct"))
		Eventually(func(g Gomega) {
			g.Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(w), w)).To(Succeed())
			g.Expect(w.Finalizers).To(ContainElement(wellknown.ExecutionControllerFinalizer))
			g.Expect(meta.IsStatusConditionTrue(w.Status.Conditions, wellknown.WorkConditionApplied)).To(BeTrue())
		}).WithContext(ctx).Should(Succeed())
		Expect(env.Host.Delete(ctx, w)).To(Succeed())
		Eventually(memberValue(ctx, "member1", ns, "raw")).WithContext(ctx).Should(BeEmpty())
	})
})

var _ = Describe("Unjoin", func() {
	It("finishes while bindings are pinned to the member, keeping or deleting its workloads as asked", func(ctx context.Context) {
		ns := templateNamespace(ctx, "e2e-unjoin")
		Expect(env.Host.Create(ctx, policyTo(ns, "pinned", false, "member3"))).To(Succeed())
		Expect(env.Host.Create(ctx, configMap(ns, "cm", "v1"))).To(Succeed())
		eventuallyAllApplied(ctx, ns, 1)
		rejoin := func(ctx context.Context) {
			Expect(env.Join(ctx, "member3")).To(Succeed())
			framework.EventuallyClustersReady(ctx, env.Host, "member3")
		}
		DeferCleanup(func(ctx context.Context) {
			if err := env.Host.Get(ctx, types.NamespacedName{Name: "member3"}, &clusterv1alpha1.Cluster{}); apierrors.IsNotFound(err) {
				rejoin(ctx)
			}
		})

		// --keep-workloads: the Cluster goes, the member object stays.
		_, err := join.Unjoin(ctx, join.UnjoinOptions{Name: "member3", Host: env.Fleet.Host.RESTConfig(), Timeout: time.Minute, KeepWorkloads: true})
		Expect(err).NotTo(HaveOccurred())
		Consistently(memberValue(ctx, "member3", ns, "cm")).WithContext(ctx).WithTimeout(2 * time.Second).Should(Equal("v1"))

		// Joined again, the member gets the binding back and takes the object over.
		rejoin(ctx)
		setValue(ctx, ns, "cm", "v2")
		Eventually(memberValue(ctx, "member3", ns, "cm")).WithContext(ctx).Should(Equal("v2"))
		eventuallyAllApplied(ctx, ns, 1)

		// By default, the workloads go with the Cluster.
		_, err = join.Unjoin(ctx, join.UnjoinOptions{Name: "member3", Host: env.Fleet.Host.RESTConfig(), Timeout: time.Minute})
		Expect(err).NotTo(HaveOccurred())
		Eventually(memberValue(ctx, "member3", ns, "cm")).WithContext(ctx).Should(BeEmpty())
		rejoin(ctx)
		Eventually(memberValue(ctx, "member3", ns, "cm")).WithContext(ctx).Should(Equal("v2"))
	})
})

var _ = Describe("Member caches", func() {
	It("creates a member namespace again after someone deleted it there", func(ctx context.Context) {
		ns := templateNamespace(ctx, "e2e-nscache")
		Expect(env.Host.Create(ctx, policyTo(ns, "all", false, "member2"))).To(Succeed())
		Expect(env.Host.Create(ctx, configMap(ns, "cm", "v1"))).To(Succeed())
		Eventually(memberValue(ctx, "member2", ns, "cm")).WithContext(ctx).Should(Equal("v1"))

		old := &corev1.Namespace{}
		Expect(env.Members["member2"].Get(ctx, types.NamespacedName{Name: ns}, old)).To(Succeed())
		Expect(env.Members["member2"].Delete(ctx, old)).To(Succeed())
		// Gone, or already made again by the execution controller (the ConfigMap's deletion
		// is drift it repairs).
		Eventually(func() bool {
			cur := &corev1.Namespace{}
			err := env.Members["member2"].Get(ctx, types.NamespacedName{Name: ns}, cur)
			return apierrors.IsNotFound(err) || (err == nil && cur.UID != old.UID)
		}).WithContext(ctx).Should(BeTrue())
		// The execution controller had seen the namespace; it must not trust that any more.
		setValue(ctx, ns, "cm", "v2")
		Eventually(memberValue(ctx, "member2", ns, "cm")).WithContext(ctx).Should(Equal("v2"))
		eventuallyAllApplied(ctx, ns, 1)
	})
})

// Issue 33: a system namespace (here kube-*) labelled to opt in is refused, with a Warning on
// the namespace; the host's controllers run its workloads, and nothing there is propagated.
var _ = Describe("Opting in a kube-* namespace", func() {
	It("is refused with a Warning: the host runs its workloads and nothing is propagated", func(ctx context.Context) {
		const ns = "kube-e2e-optin"
		Expect(env.Host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
			Labels: map[string]string{wellknown.PropagationLabel: wellknown.PropagationEnabled}}})).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(env.Host.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
		})
		Eventually(func(g Gomega) {
			var refused []string
			for _, e := range framework.EventsFor(ctx, g, env.Host, metav1.NamespaceDefault, "Namespace", ns) {
				if e.Type == corev1.EventTypeWarning {
					refused = append(refused, e.Reason+": "+e.Note)
				}
			}
			g.Expect(refused).To(ConsistOf(And(HavePrefix("OptInRefused: "), ContainSubstring("kube-*"))))
		}).WithContext(ctx).Should(Succeed())

		Expect(env.Host.Create(ctx, policyTo(ns, "all", false, "member1"))).To(Succeed())
		Expect(env.Host.Create(ctx, configMap(ns, "cm", "v1"))).To(Succeed())
		dep := deploymentTemplate(ns, "web", 1)
		Expect(env.Host.Create(ctx, dep)).To(Succeed())
		// The host's Deployment controller is not held off: it makes the ReplicaSet.
		Eventually(func(g Gomega) {
			rss := &appsv1.ReplicaSetList{}
			g.Expect(env.Host.List(ctx, rss, client.InNamespace(ns))).To(Succeed())
			g.Expect(rss.Items).To(HaveLen(1))
		}).WithContext(ctx).Should(Succeed())
		Expect(env.Host.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, client.DryRunAll)).To(Succeed())
		Consistently(func(g Gomega) {
			rbs := &workv1alpha2.ResourceBindingList{}
			g.Expect(env.Host.List(ctx, rbs, client.InNamespace(ns))).To(Succeed())
			g.Expect(rbs.Items).To(BeEmpty())
			g.Expect(memberValue(ctx, "member1", ns, "cm")()).To(BeEmpty())
			cur := &corev1.Namespace{}
			g.Expect(env.Host.Get(ctx, types.NamespacedName{Name: ns}, cur)).To(Succeed())
			g.Expect(cur.Labels).NotTo(HaveKey(wellknown.HeldLabel))
		}).WithContext(ctx).WithTimeout(5 * time.Second).Should(Succeed())
	})
})

var _ = Describe("The member credential", func() {
	It("may not mint a token for another ServiceAccount nor exec into a pod", func(ctx context.Context) {
		// The credential the host holds for member1, as join wrote it.
		secret := &corev1.Secret{}
		Expect(env.Host.Get(ctx, types.NamespacedName{Namespace: wellknown.SystemNamespace, Name: "member1"}, secret)).To(Succeed())
		cred, err := kubernetes.NewForConfig(&rest.Config{Host: env.Fleet.Member("member1").Endpoint,
			BearerToken:     string(secret.Data[wellknown.SecretKeyToken]),
			TLSClientConfig: rest.TLSClientConfig{CAData: secret.Data[wellknown.SecretKeyCABundle]}})
		Expect(err).NotTo(HaveOccurred())

		admin := env.Members["member1"]
		victim := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "e2e-victim"}}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "e2e-exec-target"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}}
		for _, obj := range []client.Object{victim, pod} {
			Expect(admin.Create(ctx, obj)).To(Succeed())
			DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(admin.Delete(ctx, obj))).To(Succeed()) })
		}

		_, err = cred.CoreV1().ServiceAccounts(victim.Namespace).CreateToken(ctx, victim.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "TokenRequest for %s/%s: %v", victim.Namespace, victim.Name, err)

		err = cred.CoreV1().RESTClient().Post().Namespace(pod.Namespace).Resource("pods").Name(pod.Name).SubResource("exec").
			Param("command", "sh").Param("container", "app").Param("stdout", "true").Do(ctx).Error()
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "pods/exec: %v", err)
		review, err := cred.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: pod.Namespace, Verb: "create", Resource: "pods", Subresource: "exec", Name: pod.Name}}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(review.Status.Allowed).To(BeFalse(), "the member's RBAC allows pods/exec")
	})
})
