package namespace_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/controllers/namespace"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

var holdKey = types.NamespacedName{Name: namespace.HoldPolicyName}

func getPolicy(ctx context.Context, g Gomega) *admissionv1.ValidatingAdmissionPolicy {
	p := &admissionv1.ValidatingAdmissionPolicy{}
	g.Expect(env.Host.Get(ctx, holdKey, p)).To(Succeed())
	return p
}

func getBinding(ctx context.Context, g Gomega) *admissionv1.ValidatingAdmissionPolicyBinding {
	b := &admissionv1.ValidatingAdmissionPolicyBinding{}
	g.Expect(env.Host.Get(ctx, holdKey, b)).To(Succeed())
	return b
}

// expectHold waits until the policies and bindings are as HoldPolicy, HoldBindings,
// JobPolicy and JobBindings say.
func expectHold(ctx context.Context) {
	GinkgoHelper()
	want := namespace.HoldPolicy(namespace.DefaultHostControllers)
	Eventually(func(g Gomega) {
		p := getPolicy(ctx, g)
		g.Expect(p.Spec.FailurePolicy).To(HaveValue(Equal(admissionv1.Fail)))
		g.Expect(p.Spec.Validations).To(HaveLen(len(want.Spec.Validations)))
		for i, v := range want.Spec.Validations {
			g.Expect(p.Spec.Validations[i].Expression).To(Equal(*v.Expression))
			g.Expect(p.Spec.Validations[i].Message).To(Equal(*v.Message))
		}
		g.Expect(p.Spec.MatchConstraints.ResourceRules).To(HaveLen(len(want.Spec.MatchConstraints.ResourceRules)))
		g.Expect(p.Spec.MatchConditions).To(HaveLen(len(want.Spec.MatchConditions)))
		g.Expect(p.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "flotilla"))

		for _, wb := range namespace.HoldBindings() {
			b := &admissionv1.ValidatingAdmissionPolicyBinding{}
			g.Expect(env.Host.Get(ctx, types.NamespacedName{Name: *wb.Name}, b)).To(Succeed())
			g.Expect(b.Spec.PolicyName).To(Equal(namespace.HoldPolicyName))
			g.Expect(b.Spec.ValidationActions).To(Equal([]admissionv1.ValidationAction{admissionv1.Deny}))
			g.Expect(b.Spec.MatchResources.NamespaceSelector.MatchLabels).To(Equal(wb.Spec.MatchResources.NamespaceSelector.MatchLabels))
			g.Expect(b.Spec.MatchResources.NamespaceSelector.MatchExpressions).To(BeEmpty())
		}
		// System namespaces are left out by the policies' match condition, not the selector.
		g.Expect(p.Spec.MatchConditions).To(ContainElement(HaveField("Expression", ContainSubstring(`request.namespace.startsWith("kube-")`))))
		mp := &admissionv1.MutatingAdmissionPolicy{}
		g.Expect(env.Host.Get(ctx, types.NamespacedName{Name: namespace.JobPolicyName}, mp)).To(Succeed())
		g.Expect(mp.Spec.Mutations).To(HaveLen(1))
		g.Expect(mp.Spec.MatchConditions).To(ContainElement(HaveField("Expression", ContainSubstring(`request.namespace.startsWith("kube-")`))))
		for _, wb := range namespace.JobBindings() {
			b := &admissionv1.MutatingAdmissionPolicyBinding{}
			g.Expect(env.Host.Get(ctx, types.NamespacedName{Name: *wb.Name}, b)).To(Succeed())
			g.Expect(b.Spec.PolicyName).To(Equal(namespace.JobPolicyName))
			g.Expect(b.Spec.MatchResources.NamespaceSelector.MatchLabels).To(Equal(wb.Spec.MatchResources.NamespaceSelector.MatchLabels))
		}
	}).WithContext(ctx).Should(Succeed())
}

var _ = Describe("The host hold", Ordered, func() {
	It("is applied at start-up: the ValidatingAdmissionPolicy and its binding", func(ctx SpecContext) {
		expectHold(ctx)
	})

	It("puts the policy back when it is deleted", func(ctx SpecContext) {
		old := getPolicy(ctx, Default)
		Expect(env.Host.Delete(ctx, old)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(getPolicy(ctx, g).UID).NotTo(Equal(old.UID))
		}).WithContext(ctx).Should(Succeed())
		expectHold(ctx)
	})

	It("puts the binding back when it is deleted", func(ctx SpecContext) {
		old := getBinding(ctx, Default)
		Expect(env.Host.Delete(ctx, old)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(getBinding(ctx, g).UID).NotTo(Equal(old.UID))
		}).WithContext(ctx).Should(Succeed())
		expectHold(ctx)
	})

	It("undoes edits of the policy", func(ctx SpecContext) {
		p := getPolicy(ctx, Default)
		patch := client.MergeFrom(p.DeepCopy())
		p.Spec.FailurePolicy = ptr.To(admissionv1.Ignore)
		p.Spec.Validations = p.Spec.Validations[:1]
		Expect(env.Host.Patch(ctx, p, patch)).To(Succeed())
		expectHold(ctx)
	})

	It("writes nothing when it starts again with the hold in place", func(ctx SpecContext) {
		expectHold(ctx)
		counted := &countingClient{Client: env.Host}
		again := &namespace.HoldReconciler{Client: counted, Reader: env.Host, Jobs: namespace.ServesMutatingPolicies(env.Host.RESTMapper())}
		_, err := again.Reconcile(ctx, reconcile.Request{})
		Expect(err).NotTo(HaveOccurred())
		Expect(counted.writes).To(BeZero())
	})

	It("undoes an edit of the binding's policy name", func(ctx SpecContext) {
		b := getBinding(ctx, Default)
		patch := client.MergeFrom(b.DeepCopy())
		b.Spec.PolicyName = "someone-elses"
		Expect(env.Host.Patch(ctx, b, patch)).To(Succeed())
		expectHold(ctx)
	})

	// Regression (issue 9): server-side apply merged validationActions ([Warn] + [Deny] is
	// invalid, so the hold errored forever at Warn) and matchLabels (an extra label made the
	// hold stop matching opted-in namespaces) with someone else's edit.
	It("undoes edits of the binding's validation actions and namespace selector", func(ctx SpecContext) {
		b := getBinding(ctx, Default)
		patch := client.MergeFrom(b.DeepCopy())
		b.Spec.ValidationActions = []admissionv1.ValidationAction{admissionv1.Warn}
		b.Spec.MatchResources.NamespaceSelector.MatchLabels = map[string]string{
			wellknown.PropagationLabel: wellknown.PropagationEnabled, "someone": "else"}
		Expect(env.Host.Patch(ctx, b, patch)).To(Succeed())
		expectHold(ctx)
	})

	It("stops the host's Deployment controller from making ReplicaSets in template namespaces only", func(ctx SpecContext) {
		held := "hold-templates"
		env.TemplateNamespace(ctx, held)
		plain := "hold-plain"
		env.CreateNamespace(ctx, plain, nil)

		// The apiserver enforces a new or changed policy a moment after it is written, and the
		// specs before this one edited it (one of them down to its Pod rule alone): wait for
		// the whole policy, the ReplicaSet rule included.
		waitHeld(ctx, held)
		Eventually(func(g Gomega) {
			rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: held, Name: "probe",
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "00000000-0000-0000-0000-000000000001"}}},
				Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "probe"}},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "probe"}},
						Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
			err := env.Host.Create(ctx, rs, client.DryRunAll)
			g.Expect(err).To(MatchError(ContainSubstring("ReplicaSets of Deployments")))
		}).WithContext(ctx).Should(Succeed())

		for _, ns := range []string{held, plain} {
			Expect(env.Host.Create(ctx, fleettest.Deployment(ns, "web", 1))).To(Succeed())
		}
		Eventually(func(g Gomega) {
			g.Expect(replicaSets(ctx, g, plain)).To(HaveLen(1))
		}).WithContext(ctx).Should(Succeed())

		// The host's Deployment controller tried in the held namespace, was denied, and says why.
		Eventually(func(g Gomega) {
			var denied []string
			for _, e := range coreEvents(ctx, g, held) {
				if e.InvolvedObject.Kind == "Deployment" && e.InvolvedObject.Name == "web" && e.Type == corev1.EventTypeWarning {
					denied = append(denied, e.Reason+": "+e.Message)
				}
			}
			// The Deployment controller reports a failed ReplicaSet create as ReplicaSetCreateError.
			g.Expect(denied).To(ContainElement(And(HavePrefix("ReplicaSetCreateError: "),
				ContainSubstring(namespace.HoldPolicyName), ContainSubstring("ReplicaSets of Deployments"),
				ContainSubstring(wellknown.PropagationLabel))))
		}).WithContext(ctx).Should(Succeed())
		Expect(replicaSets(ctx, Default, held)).To(BeEmpty())
	})
})

func replicaSets(ctx context.Context, g Gomega, ns string) []appsv1.ReplicaSet {
	list := &appsv1.ReplicaSetList{}
	g.Expect(env.Host.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}

// coreEvents lists the core/v1 events of a namespace: kube-controller-manager records those.
func coreEvents(ctx context.Context, g Gomega, ns string) []corev1.Event {
	list := &corev1.EventList{}
	g.Expect(env.Host.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}

// as is a client of the host that impersonates user, in system:masters: what is tested is
// admission, not authorization.
func as(user string) client.Client {
	cfg := rest.CopyConfig(env.Fleet.Host.RESTConfig())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:masters", "system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// waitHeld waits until the apiserver enforces the current hold in namespace ns: a host
// controller's ControllerRevision (a rule the first version of the hold did not have) is
// denied, and a Job is marked managed by Flotilla. The apiserver applies a new policy, binding
// or namespace label a moment after it is written, and its validating and mutating policies
// each in their own time (a Job created once the first applied, before the second, kept no
// spec.managedBy).
func waitHeld(ctx context.Context, ns string) {
	GinkgoHelper()
	kcm := as("system:kube-controller-manager")
	Eventually(func(g Gomega) {
		rev := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"}, Revision: 1,
			Data: k8sruntime.RawExtension{Raw: []byte("{}")}}
		g.Expect(kcm.Create(ctx, rev, client.DryRunAll)).To(MatchError(ContainSubstring("ControllerRevisions")))
	}).WithContext(ctx).Should(Succeed())
	Eventually(func(g Gomega) {
		var job *batchv1.Job
		for _, t := range fleettest.HostControllerTemplates(ns) {
			if j, ok := t.(*batchv1.Job); ok {
				job = j
			}
		}
		g.Expect(job).NotTo(BeNil())
		job.Name = "probe"
		g.Expect(env.Host.Create(ctx, job, client.DryRunAll)).To(Succeed())
		g.Expect(job.Spec.ManagedBy).To(HaveValue(Equal(wellknown.JobManagedBy)))
	}).WithContext(ctx).Should(Succeed())
}

// The suite's host runs kube-controller-manager with --use-service-account-credentials=false,
// so that every controller, garbage collection and namespace deletion included, writes as
// system:kube-controller-manager (the e2e host runs the other setting).
var _ = Describe("Host controllers in a held namespace", Ordered, func() {
	const held, plain = "hostkinds", "hostkinds-plain"
	var templates []client.Object

	BeforeAll(func(ctx SpecContext) {
		expectHold(ctx)
		fleettest.EnsureImmediateStorageClass(ctx, env.Host)
		env.TemplateNamespace(ctx, held)
		env.CreateNamespace(ctx, plain, nil)
		waitHeld(ctx, held)
		templates = fleettest.HostControllerTemplates(held)
		for _, t := range templates {
			Expect(env.Host.Create(ctx, t)).To(Succeed())
		}
	})

	It("act in a plain namespace: the HPA scales, the volume binder asks for a volume", func(ctx SpecContext) {
		for _, t := range fleettest.HostControllerTemplates(plain) {
			switch t.(type) {
			case *appsv1.Deployment, *autoscalingv2.HorizontalPodAutoscaler, *corev1.PersistentVolumeClaim:
				Expect(env.Host.Create(ctx, t)).To(Succeed())
			}
		}
		Eventually(func(g Gomega) {
			web := &appsv1.Deployment{}
			g.Expect(env.Host.Get(ctx, client.ObjectKey{Namespace: plain, Name: "web"}, web)).To(Succeed())
			g.Expect(web.Spec.Replicas).To(HaveValue(BeEquivalentTo(3)))
			pvc := &corev1.PersistentVolumeClaim{}
			g.Expect(env.Host.Get(ctx, client.ObjectKey{Namespace: plain, Name: "data"}, pvc)).To(Succeed())
			g.Expect(pvc.Annotations).To(HaveKey("volume.kubernetes.io/storage-provisioner"))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
	})

	It("make and write nothing in a held one, CronJob runs included", func(ctx SpecContext) {
		// The CronJob fires within a minute; its controller's Job is denied.
		Eventually(func(g Gomega) {
			var reasons []string
			for _, e := range coreEvents(ctx, g, held) {
				if e.InvolvedObject.Kind == "CronJob" {
					reasons = append(reasons, e.Reason)
				}
			}
			g.Expect(reasons).To(ContainElement("FailedCreate"))
		}).WithContext(ctx).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Succeed())
		fleettest.ExpectHostControllersKeptOff(ctx, Default, env.Host, held, templates)
	})

	It("leave held Jobs alone: the host marks them managed by Flotilla", func(ctx SpecContext) {
		job := &batchv1.Job{}
		Expect(env.Host.Get(ctx, client.ObjectKey{Namespace: held, Name: "batch"}, job)).To(Succeed())
		Expect(job.Spec.ManagedBy).To(HaveValue(Equal(wellknown.JobManagedBy)))

		own := fleettest.HostControllerTemplates(held)[5].(*batchv1.Job)
		own.Name, own.Spec.ManagedBy = "own-manager", ptr.To("example.com/other")
		Expect(env.Host.Create(ctx, own)).To(Succeed())
		Expect(own.Spec.ManagedBy).To(HaveValue(Equal("example.com/other")))

		elsewhere := fleettest.HostControllerTemplates(plain)[5].(*batchv1.Job)
		Expect(env.Host.Create(ctx, elsewhere)).To(Succeed())
		Expect(elsewhere.Spec.ManagedBy).To(BeNil())
	})

	It("deny the cloud's load balancer finalizer and ingress controllers' status, not users' writes", func(ctx SpecContext) {
		svc := &corev1.Service{}
		Expect(env.Host.Get(ctx, client.ObjectKey{Namespace: held, Name: "web"}, svc)).To(Succeed())
		patch := client.MergeFrom(svc.DeepCopy())
		svc.Finalizers = append(svc.Finalizers, "service.kubernetes.io/load-balancer-cleanup")
		err := as("system:serviceaccount:kube-system:service-controller").Patch(ctx, svc.DeepCopy(), patch)
		Expect(err).To(MatchError(ContainSubstring("add finalizers")))

		ing := &networkingv1.Ingress{}
		Expect(env.Host.Get(ctx, client.ObjectKey{Namespace: held, Name: "web"}, ing)).To(Succeed())
		ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "192.0.2.1"}}
		err = as("system:serviceaccount:ingress-nginx:ingress-nginx").Status().Update(ctx, ing.DeepCopy())
		Expect(err).To(MatchError(ContainSubstring("status")))
		// Flotilla (here the admin) writes the fleet's status.
		Expect(env.Host.Status().Update(ctx, ing)).To(Succeed())
	})

	It("let garbage collection remove finalizers and host controllers delete, under the shared identity", func(ctx SpecContext) {
		cm := fleettest.ConfigMap(held, "gc", nil)
		cm.Finalizers = []string{"example.com/wait"}
		Expect(env.Host.Create(ctx, cm)).To(Succeed())
		kcm := as("system:kube-controller-manager")
		patch := client.MergeFrom(cm.DeepCopy())
		cm.Finalizers = nil
		Expect(kcm.Patch(ctx, cm, patch)).To(Succeed())
		Expect(kcm.Delete(ctx, cm)).To(Succeed())
	})

	// Regression: a binding's namespace selector never exempts cluster-scoped objects, so the
	// first version of these rules denied the shared identity's Node, PersistentVolume and
	// CertificateSigningRequest status writes across the whole host.
	It("leave host controllers' writes to cluster-scoped objects alone", func(ctx SpecContext) {
		pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "hold-scope"},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/hold-scope"}},
				StorageClassName:       "manual",
			}}
		Expect(env.Host.Create(ctx, pv)).To(Succeed())
		kcm := as("system:kube-controller-manager")
		Eventually(func(g Gomega) {
			cur := &corev1.PersistentVolume{}
			g.Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(pv), cur)).To(Succeed())
			cur.Status.Message = "written by the host's volume binder"
			g.Expect(kcm.Status().Update(ctx, cur)).To(Succeed())
			patch := client.MergeFrom(cur.DeepCopy())
			cur.Finalizers = append(cur.Finalizers, "example.com/host-controller")
			g.Expect(kcm.Patch(ctx, cur, patch)).To(Succeed())
		}).WithContext(ctx).Should(Succeed())
		cur := &corev1.PersistentVolume{}
		Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(pv), cur)).To(Succeed())
		patch := client.MergeFrom(cur.DeepCopy())
		cur.Finalizers = nil
		Expect(env.Host.Patch(ctx, cur, patch)).To(Succeed())
		Expect(env.Host.Delete(ctx, cur)).To(Succeed())
	})

	It("keep quota working", func(ctx SpecContext) {
		quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: held, Name: "count"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/deployments.apps": resource.MustParse("10")}}}
		Expect(env.Host.Create(ctx, quota)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(quota), quota)).To(Succeed())
			g.Expect(quota.Status.Used).To(HaveKeyWithValue(corev1.ResourceName("count/deployments.apps"), resource.MustParse("1")))
		}).WithContext(ctx).Should(Succeed())
	})
})

var _ = Describe("Opting a namespace out", func() {
	It("keeps its templates held until the user removes the held label too", func(ctx SpecContext) {
		const ns = "optout"
		env.TemplateNamespace(ctx, ns)
		waitHeld(ctx, ns)
		n := &corev1.Namespace{}
		Eventually(func(g Gomega) {
			g.Expect(env.Host.Get(ctx, client.ObjectKey{Name: ns}, n)).To(Succeed())
			g.Expect(n.Labels).To(HaveKeyWithValue(wellknown.HeldLabel, wellknown.HeldTrue))
		}).WithContext(ctx).Should(Succeed())

		patch := client.MergeFrom(n.DeepCopy())
		delete(n.Labels, wellknown.PropagationLabel)
		Expect(env.Host.Patch(ctx, n, patch)).To(Succeed())
		Eventually(func(g Gomega) []string {
			return env.EventReasons(ctx, g, n)
		}).WithContext(ctx).Should(ContainElement(namespace.EventReasonStillHeld))
		waitHeld(ctx, ns)

		// Still held: a Deployment made now gets no ReplicaSet.
		Expect(env.Host.Create(ctx, fleettest.Deployment(ns, "after", 1))).To(Succeed())
		Consistently(func(g Gomega) []appsv1.ReplicaSet {
			return replicaSets(ctx, g, ns)
		}).WithContext(ctx).WithTimeout(5 * time.Second).Should(BeEmpty())
		Expect(env.Host.Get(ctx, client.ObjectKey{Name: ns}, n)).To(Succeed())
		Expect(n.Labels).To(HaveKeyWithValue(wellknown.HeldLabel, wellknown.HeldTrue))

		// Released: the host's controllers take the namespace's workloads over.
		patch = client.MergeFrom(n.DeepCopy())
		delete(n.Labels, wellknown.HeldLabel)
		Expect(env.Host.Patch(ctx, n, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(env.Host.Get(ctx, client.ObjectKey{Name: ns}, n)).To(Succeed())
			g.Expect(n.Labels).NotTo(HaveKey(wellknown.HeldLabel))
			// A new template shows the hold is gone at once (the old one waits for the
			// Deployment controller's next retry).
			d := fleettest.Deployment(ns, "released", 1)
			_ = env.Host.Create(ctx, d)
			g.Expect(replicaSets(ctx, g, ns)).NotTo(BeEmpty())
		}).WithContext(ctx).Should(Succeed())
	})
})

// Issue 33: the hold leaves out exactly the namespaces the detector never propagates from
// (internal/systemnamespace), kube-* included, however they are labelled; their opt-in is
// refused with a Warning.
var _ = Describe("Opting in a namespace Flotilla never propagates from", func() {
	It("holds nothing there, and the namespace gets a Warning saying why", func(ctx SpecContext) {
		expectHold(ctx)
		// The hold is in force: a Pod is denied in an ordinary opted-in namespace.
		const ordinary = "optin-ordinary"
		env.TemplateNamespace(ctx, ordinary)
		waitHeld(ctx, ordinary)
		Expect(env.Host.Create(ctx, probePod(ordinary), client.DryRunAll)).To(MatchError(ContainSubstring("create Pods")))

		optIn := map[string]string{wellknown.PropagationLabel: wellknown.PropagationEnabled}
		kube := env.CreateNamespace(ctx, "kube-optin", optIn)
		system := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: wellknown.SystemNamespace}}
		if err := env.Host.Create(ctx, system); err != nil {
			Expect(apierrors.IsAlreadyExists(err)).To(BeTrue(), "%v", err)
		}
		patch := client.MergeFrom(system.DeepCopy())
		system.Labels = optIn
		Expect(env.Host.Patch(ctx, system, patch)).To(Succeed())

		for _, ns := range []*corev1.Namespace{kube, system} {
			Eventually(func(g Gomega) {
				var refused []string
				for _, e := range env.Events(ctx, g, ns) {
					if e.Type == corev1.EventTypeWarning && e.Reason == namespace.EventReasonOptInRefused {
						refused = append(refused, e.Note)
					}
				}
				g.Expect(refused).To(ConsistOf(And(ContainSubstring("never propagates"), ContainSubstring(wellknown.PropagationLabel))))
			}).WithContext(ctx).Should(Succeed(), "namespace %s", ns.Name)
			// Long enough for the apiserver to have seen the label: the ordinary namespace's
			// Pod was denied above after the same wait.
			Consistently(func(g Gomega) {
				g.Expect(env.Host.Create(ctx, probePod(ns.Name), client.DryRunAll)).To(Succeed())
			}).WithContext(ctx).WithTimeout(3*time.Second).Should(Succeed(), "namespace %s", ns.Name)
			cur := &corev1.Namespace{}
			Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(ns), cur)).To(Succeed())
			Expect(cur.Labels).NotTo(HaveKey(wellknown.HeldLabel))
		}
	})
})

func probePod(ns string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
}

// countingClient counts the writes made through it.
type countingClient struct {
	client.Client
	writes int
}

func (c *countingClient) Apply(ctx context.Context, obj k8sruntime.ApplyConfiguration, opts ...client.ApplyOption) error {
	c.writes++
	return c.Client.Apply(ctx, obj, opts...)
}

func (c *countingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	c.writes++
	return c.Client.Update(ctx, obj, opts...)
}
