package workstatus_test

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers/workstatus"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// scheduledBinding creates the ResourceBinding of a template, scheduled to the clusters
// with the replicas divided evenly.
func scheduledBinding(ctx context.Context, tmpl client.Object, replicas int32, clusters []string,
	mutate ...func(*workv1alpha2.ResourceBindingSpec)) *workv1alpha2.ResourceBinding {
	GinkgoHelper()
	var scheduled []any
	for _, c := range clusters {
		scheduled = append(scheduled, c, int(replicas)/len(clusters))
	}
	rb := env.Binding(tmpl, replicas, fleettest.Scheduled(scheduled...)...).(*workv1alpha2.ResourceBinding)
	for _, m := range mutate {
		m(&rb.Spec)
	}
	Expect(env.Host.Create(ctx, rb)).To(Succeed())
	return rb
}

// workOf creates the binding's Work carrying obj to the cluster, as the binding controller
// renders it.
func workOf(ctx context.Context, rb *workv1alpha2.ResourceBinding, cluster string, obj client.Object,
	mutate ...func(*workv1alpha1.Work)) *workv1alpha1.Work {
	GinkgoHelper()
	w := fleettest.Work(cluster, obj)
	fleettest.BindWork(w, rb)
	for _, m := range mutate {
		m(w)
	}
	Expect(env.Host.Create(ctx, w)).To(Succeed())
	return w
}

// setMemberStatus writes a Deployment's status in a member as its controller would, for
// the member object's current generation.
func setMemberStatus(ctx context.Context, cluster string, d *appsv1.Deployment, ready int32) {
	GinkgoHelper()
	c := env.Members[cluster]
	cur := &appsv1.Deployment{}
	Expect(c.Get(ctx, client.ObjectKeyFromObject(d), cur)).To(Succeed())
	cur.Status = appsv1.DeploymentStatus{ObservedGeneration: cur.Generation, Replicas: *cur.Spec.Replicas,
		UpdatedReplicas: *cur.Spec.Replicas, ReadyReplicas: ready, AvailableReplicas: ready,
		UnavailableReplicas: *cur.Spec.Replicas - ready}
	Expect(c.Status().Update(ctx, cur)).To(Succeed())
}

func statusField(g Gomega, raw []byte, field string) any {
	var m map[string]any
	g.Expect(json.Unmarshal(raw, &m)).To(Succeed())
	return m[field]
}

func fullyApplied(ctx context.Context, g Gomega, rb *workv1alpha2.ResourceBinding) *metav1.Condition {
	env.Get(ctx, g, rb)
	c := meta.FindStatusCondition(rb.Status.Conditions, wellknown.ConditionFullyApplied)
	g.Expect(c).NotTo(BeNil(), "no FullyApplied condition")
	g.Expect(c.ObservedGeneration).To(Equal(rb.Generation))
	return c
}

var both = []string{"member1", "member2"}

// expectAppliedOnMember1Only waits until the binding (scheduled to both members) is not
// FullyApplied, naming member2, whose item says why (why).
func expectAppliedOnMember1Only(ctx context.Context, rb *workv1alpha2.ResourceBinding, why string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		c := fullyApplied(ctx, g, rb)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(wellknown.ReasonNotFullyApplied))
		g.Expect(c.Message).To(ContainSubstring("Not applied on 1 of 2 clusters: [member2]"))
		g.Expect(rb.Status.AggregatedStatus).To(HaveLen(2))
		g.Expect(rb.Status.AggregatedStatus[0].Applied).To(BeTrue())
		g.Expect(rb.Status.AggregatedStatus[1].Applied).To(BeFalse())
		g.Expect(rb.Status.AggregatedStatus[1].AppliedMessage).To(ContainSubstring(why))
	}).WithContext(ctx).Should(Succeed())
}

var _ = Describe("Status from members", func() {
	It("reflects member status into the Works and sums the Works into their binding", func(ctx SpecContext) {
		ns := "ws-status"
		env.TemplateNamespace(ctx, ns)
		web := fleettest.Deployment(ns, "web", 4)
		rb := scheduledBinding(ctx, web, 4, both)
		web.Spec.Replicas = &rb.Spec.Clusters[0].Replicas
		works := map[string]*workv1alpha1.Work{}
		for _, c := range []string{"member1", "member2"} {
			works[c] = workOf(ctx, rb, c, web)
		}
		for _, w := range works {
			env.ExpectApplied(ctx, w, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
		}
		Eventually(func(g Gomega) {
			c := fullyApplied(ctx, g, rb)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(wellknown.ReasonFullyApplied))
			g.Expect(rb.Status.AggregatedStatus).To(HaveLen(2))
			g.Expect(rb.Status.AggregatedStatus[0].ClusterName).To(Equal("member1"))
			g.Expect(rb.Status.AggregatedStatus[1].ClusterName).To(Equal("member2"))
			for _, item := range rb.Status.AggregatedStatus {
				g.Expect(item.Applied).To(BeTrue())
				g.Expect(item.AppliedMessage).To(BeEmpty())
			}
		}).WithContext(ctx).Should(Succeed())
		Eventually(func(g Gomega) []string { return env.EventReasons(ctx, g, rb) }).WithContext(ctx).
			Should(ContainElement(wellknown.EventReasonAggregateStatusSucceed))

		By("reflecting a member's new status into its Work")
		setMemberStatus(ctx, "member1", web, 2)
		Eventually(func(g Gomega) {
			w := works["member1"]
			env.Get(ctx, g, w)
			g.Expect(w.Status.ManifestStatuses).To(HaveLen(1))
			ms := w.Status.ManifestStatuses[0]
			g.Expect(ms.Identifier).To(Equal(workv1alpha1.ResourceIdentifier{Ordinal: 0, Group: "apps", Version: "v1",
				Kind: "Deployment", Resource: "deployments", Namespace: ns, Name: "web"}))
			g.Expect(ms.Health).To(Equal(workv1alpha1.ResourceHealthy))
			g.Expect(ms.Status).NotTo(BeNil())
			g.Expect(statusField(g, ms.Status.Raw, "readyReplicas")).To(BeNumerically("==", 2))
		}).WithContext(ctx).Should(Succeed())

		By("and into the binding's aggregated status")
		Eventually(func(g Gomega) {
			env.Get(ctx, g, rb)
			g.Expect(rb.Status.AggregatedStatus).To(HaveLen(2))
			m1, m2 := rb.Status.AggregatedStatus[0], rb.Status.AggregatedStatus[1]
			g.Expect(m1.Health).To(Equal(workv1alpha1.ResourceHealthy))
			g.Expect(m1.Status).NotTo(BeNil())
			g.Expect(statusField(g, m1.Status.Raw, "readyReplicas")).To(BeNumerically("==", 2))
			g.Expect(m2.Health).NotTo(Equal(workv1alpha1.ResourceHealthy), "member2 reported no ready replicas")
		}).WithContext(ctx).Should(Succeed())

		By("following a status that gets worse")
		setMemberStatus(ctx, "member1", web, 1)
		Eventually(func(g Gomega) {
			env.Get(ctx, g, rb)
			g.Expect(rb.Status.AggregatedStatus).To(HaveLen(2))
			g.Expect(rb.Status.AggregatedStatus[0].Health).To(Equal(workv1alpha1.ResourceUnhealthy))
			g.Expect(statusField(g, rb.Status.AggregatedStatus[0].Status.Raw, "readyReplicas")).To(BeNumerically("==", 1))
		}).WithContext(ctx).Should(Succeed())
	})

	It("reports a first placement made at creation in its first status write, and keeps it in the writes after", func(ctx SpecContext) {
		ns := "ws-first-placement"
		env.TemplateNamespace(ctx, ns)
		web := fleettest.Deployment(ns, "web", 4)
		// As the detector creates it with the scheduler's PlaceNew: placed, generation 1, the
		// applied-placement annotation set, no status (no scheduler runs in this suite).
		rb := scheduledBinding(ctx, web, 4, both, func(s *workv1alpha2.ResourceBindingSpec) {
			s.Placement = &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: both}}
		})
		patch := client.MergeFrom(rb.DeepCopy())
		metav1.SetMetaDataAnnotation(&rb.ObjectMeta, wellknown.AppliedPlacementAnnotation, `{"clusterAffinity":{"clusterNames":["member1","member2"]}}`)
		Expect(env.Host.Patch(ctx, rb, patch)).To(Succeed())
		Expect(rb.Generation).To(Equal(int64(1)))
		web.Spec.Replicas = &rb.Spec.Clusters[0].Replicas
		for _, c := range both {
			workOf(ctx, rb, c, web)
		}
		Eventually(func(g Gomega) {
			c := fullyApplied(ctx, g, rb)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			sched := meta.FindStatusCondition(rb.Status.Conditions, wellknown.ConditionScheduled)
			g.Expect(sched).NotTo(BeNil(), "Scheduled comes with the first status")
			g.Expect(sched.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(sched.Reason).To(Equal(wellknown.ReasonBindingScheduled))
			g.Expect(sched.Message).To(Equal("Binding has been scheduled to member1 (2), member2 (2)"))
			g.Expect(sched.ObservedGeneration).To(Equal(int64(1)))
			g.Expect(rb.Status.SchedulerObservedGeneration).To(Equal(int64(1)))
			g.Expect(rb.Status.LastScheduledTime).NotTo(BeNil())
			g.Expect(rb.Status.LastScheduledTime.Time).To(BeTemporally("==", rb.CreationTimestamp.Time))
		}).WithContext(ctx).Should(Succeed())

		By("a later status write of the binding-status controller keeps the scheduler's fields")
		setMemberStatus(ctx, "member1", web, 2)
		Eventually(func(g Gomega) {
			env.Get(ctx, g, rb)
			g.Expect(rb.Status.AggregatedStatus).To(HaveLen(2))
			g.Expect(rb.Status.AggregatedStatus[0].Health).To(Equal(workv1alpha1.ResourceHealthy))
		}).WithContext(ctx).Should(Succeed())
		Expect(meta.IsStatusConditionTrue(rb.Status.Conditions, wellknown.ConditionScheduled)).To(BeTrue())
		Expect(rb.Status.SchedulerObservedGeneration).To(Equal(int64(1)))
		Expect(rb.Status.LastScheduledTime).NotTo(BeNil())
	})

	It("writes nothing before the first schedule, then each Work's status and the binding's status once", func(ctx SpecContext) {
		ns := "ws-writes"
		env.TemplateNamespace(ctx, ns)
		web := fleettest.Deployment(ns, "web", 4)
		rb := scheduledBinding(ctx, web, 4, nil, func(s *workv1alpha2.ResourceBindingSpec) { s.Placement = &policyv1alpha1.Placement{} })

		By("scheduling it as the scheduler does: spec.clusters, then the Scheduled condition")
		patch := client.MergeFrom(rb.DeepCopy())
		rb.Spec.Clusters = fleettest.Scheduled("member1", 2, "member2", 2)
		Expect(env.Host.Patch(ctx, rb, patch)).To(Succeed())
		patch = client.MergeFrom(rb.DeepCopy())
		meta.SetStatusCondition(&rb.Status.Conditions, metav1.Condition{Type: wellknown.ConditionScheduled, Status: metav1.ConditionTrue,
			Reason: wellknown.ReasonBindingScheduled, Message: "scheduled", ObservedGeneration: rb.Generation})
		Expect(env.Host.Status().Patch(ctx, rb, patch)).To(Succeed())
		web.Spec.Replicas = ptr.To[int32](2)
		works := []*workv1alpha1.Work{workOf(ctx, rb, "member1", web), workOf(ctx, rb, "member2", web)}
		for _, w := range works {
			env.ExpectApplied(ctx, w, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
		}
		Eventually(func(g Gomega) {
			g.Expect(fullyApplied(ctx, g, rb).Status).To(Equal(metav1.ConditionTrue))
		}).WithContext(ctx).Should(Succeed())

		// Each Work's events (its creation, the Applied write, its member object appearing)
		// and the binding's (its creation, spec.clusters) bring them back, but a status that
		// changes nothing, or that a stale cache does not show yet, is not written again.
		for _, w := range works {
			Expect(env.ManagerRequests("PATCH", "/apis/work.karmada.io/v1alpha1/namespaces/"+w.Namespace+"/works/"+w.Name+"/status")).
				To(Equal(1), "Applied and the first manifest statuses in one write")
		}
		Expect(env.ManagerRequests("PATCH", "/apis/work.karmada.io/v1alpha2/namespaces/"+ns+"/resourcebindings/"+rb.Name+"/status")).
			To(Equal(1), "no status before the first schedule, one once every Work is applied")
	})

	It("reports a binding whose Work cannot be applied on one cluster as not FullyApplied, naming it", func(ctx SpecContext) {
		ns := "ws-partial"
		env.TemplateNamespace(ctx, ns)
		cm := fleettest.ConfigMap(ns, "cfg", map[string]string{"k": "v"})
		Expect(env.Members["member2"].Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		Expect(env.Members["member2"].Create(ctx, fleettest.ConfigMap(ns, "cfg", map[string]string{"owner": "someone"}))).To(Succeed())

		rb := scheduledBinding(ctx, cm, 0, both)
		w1 := workOf(ctx, rb, "member1", cm)
		w2 := workOf(ctx, rb, "member2", cm)
		env.ExpectApplied(ctx, w1, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
		env.ExpectApplied(ctx, w2, metav1.ConditionFalse, wellknown.ReasonConflict)
		expectAppliedOnMember1Only(ctx, rb, "not managed by Flotilla")
	})

	It("reports a binding scheduled nowhere as not FullyApplied", func(ctx SpecContext) {
		env.TemplateNamespace(ctx, "ws-unscheduled")
		rb := scheduledBinding(ctx, fleettest.ConfigMap("ws-unscheduled", "cfg", nil), 0, nil,
			func(s *workv1alpha2.ResourceBindingSpec) { s.Placement = &policyv1alpha1.Placement{} })
		By("the scheduler's answer: unschedulable, written to the status only")
		patch := client.MergeFrom(rb.DeepCopy())
		meta.SetStatusCondition(&rb.Status.Conditions, metav1.Condition{Type: wellknown.ConditionScheduled, Status: metav1.ConditionFalse,
			Reason: wellknown.ReasonBindingUnschedulable, Message: "no cluster fits", ObservedGeneration: rb.Generation})
		Expect(env.Host.Status().Patch(ctx, rb, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			c := fullyApplied(ctx, g, rb)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Message).To(Equal("Not scheduled to any cluster yet"))
			g.Expect(rb.Status.AggregatedStatus).To(BeEmpty())
		}).WithContext(ctx).Should(Succeed())
	})

	It("does not count a cluster whose dispatching is suspended as applied", func(ctx SpecContext) {
		ns := "ws-suspended"
		env.TemplateNamespace(ctx, ns)
		cm := fleettest.ConfigMap(ns, "cfg", map[string]string{"k": "v"})
		rb := scheduledBinding(ctx, cm, 0, both, func(s *workv1alpha2.ResourceBindingSpec) {
			s.Suspension = &workv1alpha2.Suspension{Suspension: policyv1alpha1.Suspension{
				DispatchingOnClusters: &policyv1alpha1.SuspendClusters{ClusterNames: []string{"member2"}}}}
		})
		w1 := workOf(ctx, rb, "member1", cm)
		w2 := workOf(ctx, rb, "member2", cm, func(w *workv1alpha1.Work) { w.Spec.SuspendDispatching = ptr.To(true) })
		env.ExpectApplied(ctx, w1, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
		env.ExpectApplied(ctx, w2, metav1.ConditionFalse, "DispatchingSuspended")
		expectAppliedOnMember1Only(ctx, rb, "suspended")
	})
})

// renderedFrom annotates a Work's manifest with its template's UID and generation, as the
// binding controller renders it.
func renderedFrom(tmpl client.Object) func(*workv1alpha1.Work) {
	return func(w *workv1alpha1.Work) {
		m := fleettest.Manifest(Default, w, 0)
		ann := m.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[wellknown.ResourceTemplateUIDAnnotation] = string(tmpl.GetUID())
		ann[wellknown.ResourceTemplateGenerationAnnotation] = strconv.FormatInt(tmpl.GetGeneration(), 10)
		m.SetAnnotations(ann)
		fleettest.SetManifest(w, m)
	}
}

var _ = Describe("The fleet's status on the template", func() {
	It("sums the members' Deployments into the template's status, and counts ready clusters on the binding", func(ctx SpecContext) {
		ns := "ws-template"
		env.TemplateNamespace(ctx, ns)
		web := fleettest.Deployment(ns, "web", 4)
		Expect(env.Host.Create(ctx, web)).To(Succeed())
		rb := scheduledBinding(ctx, web, 4, both)
		member := fleettest.Deployment(ns, "web", rb.Spec.Clusters[0].Replicas)
		for _, c := range both {
			env.ExpectApplied(ctx, workOf(ctx, rb, c, member, renderedFrom(web)), metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
		}
		setMemberStatus(ctx, "member1", member, 2)
		Eventually(func(g Gomega) {
			env.Get(ctx, g, rb)
			g.Expect(rb.Status.ClustersReady).To(Equal("1/2"))
			env.Get(ctx, g, web)
			g.Expect(web.Status.Replicas).To(BeEquivalentTo(2), "member2's controller has reported nothing")
			g.Expect(web.Status.UpdatedReplicas).To(BeEquivalentTo(2))
			g.Expect(web.Status.ReadyReplicas).To(BeEquivalentTo(2))
			g.Expect(web.Status.ObservedGeneration).To(BeZero(), "member2 has not rolled anything out")
		}).WithContext(ctx).Should(Succeed())

		setMemberStatus(ctx, "member2", member, 2)
		Eventually(func(g Gomega) {
			env.Get(ctx, g, rb)
			g.Expect(rb.Status.ClustersReady).To(Equal("2/2"))
			env.Get(ctx, g, web)
			g.Expect(web.Status.ReadyReplicas).To(BeEquivalentTo(4))
			g.Expect(web.Status.AvailableReplicas).To(BeEquivalentTo(4))
			g.Expect(web.Status.ObservedGeneration).To(Equal(web.Generation))
			g.Expect(web.Status.Conditions).To(ContainElement(And(
				HaveField("Type", appsv1.DeploymentConditionType("FleetRolledOut")), HaveField("Status", corev1.ConditionTrue))))
			for _, f := range web.ManagedFields {
				if f.Subresource == "status" {
					g.Expect(f.Manager).To(Equal(workstatus.TemplateStatusFieldOwner))
				}
			}
		}).WithContext(ctx).Should(Succeed())

		By("putting the fleet's status back when someone else overwrites it")
		env.Get(ctx, Default, web)
		web.Status.ReadyReplicas, web.Status.AvailableReplicas = 0, 0
		Expect(env.Host.Status().Update(ctx, web)).To(Succeed())
		setMemberStatus(ctx, "member2", member, 1)
		Eventually(func(g Gomega) {
			env.Get(ctx, g, web)
			g.Expect(web.Status.ReadyReplicas).To(BeEquivalentTo(3))
		}).WithContext(ctx).Should(Succeed())
	})

	It("never writes a template status onto a new template of the same name", func(ctx SpecContext) {
		ns := "ws-template-uid"
		env.TemplateNamespace(ctx, ns)
		web := fleettest.Deployment(ns, "web", 2)
		Expect(env.Host.Create(ctx, web)).To(Succeed())
		rb := scheduledBinding(ctx, web, 2, []string{"member1"})
		old := web.DeepCopy()
		member := fleettest.Deployment(ns, "web", 2)
		Expect(env.Host.Delete(ctx, web)).To(Succeed())
		web = fleettest.Deployment(ns, "web", 2)
		Expect(env.Host.Create(ctx, web)).To(Succeed())
		env.ExpectApplied(ctx, workOf(ctx, rb, "member1", member, renderedFrom(old)), metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
		setMemberStatus(ctx, "member1", member, 2)
		Eventually(func(g Gomega) []string { return env.EventReasons(ctx, g, rb) }).WithContext(ctx).
			Should(ContainElement(workstatus.EventReasonTemplateStatusFailed))
		env.Get(ctx, Default, web)
		Expect(web.Status.ReadyReplicas).To(BeZero())
	})
})

var _ = Describe("The fleet's Job status on the template", func() {
	It("says Complete once every member's Job completed, in a status the apiserver accepts", func(ctx SpecContext) {
		ns := "ws-job"
		env.TemplateNamespace(ctx, ns)
		job := func() *batchv1.Job {
			return &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "batch"},
				Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "c", Image: fleettest.Image}}}}}}
		}
		tmpl := job()
		Expect(env.Host.Create(ctx, tmpl)).To(Succeed())
		rb := scheduledBinding(ctx, tmpl, 0, both)
		for _, c := range both {
			env.ExpectApplied(ctx, workOf(ctx, rb, c, job(), renderedFrom(tmpl)), metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
		}
		complete := func(cluster string, at time.Time) {
			GinkgoHelper()
			cur := &batchv1.Job{}
			Expect(env.Members[cluster].Get(ctx, client.ObjectKey{Namespace: ns, Name: "batch"}, cur)).To(Succeed())
			start, done := metav1.NewTime(at.Add(-time.Minute)), metav1.NewTime(at)
			cur.Status = batchv1.JobStatus{StartTime: &start, CompletionTime: &done, Succeeded: 1,
				Conditions: []batchv1.JobCondition{
					{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: done},
					{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: done},
				}}
			Expect(env.Members[cluster].Status().Update(ctx, cur)).To(Succeed())
		}
		now := time.Now().Truncate(time.Second)
		complete("member1", now)
		Consistently(func(g Gomega) {
			env.Get(ctx, g, tmpl)
			for _, c := range tmpl.Status.Conditions {
				g.Expect(c.Type).NotTo(Equal(batchv1.JobComplete), "member2 has not completed")
			}
		}).WithContext(ctx).Should(Succeed())
		complete("member2", now.Add(time.Second))
		Eventually(func(g Gomega) {
			env.Get(ctx, g, tmpl)
			g.Expect(tmpl.Status.Succeeded).To(BeEquivalentTo(2))
			g.Expect(tmpl.Status.CompletionTime).NotTo(BeNil())
			var complete bool
			for _, c := range tmpl.Status.Conditions {
				complete = complete || (c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue)
			}
			g.Expect(complete).To(BeTrue())
		}).WithContext(ctx).Should(Succeed())
		Expect(env.EventReasons(ctx, Default, rb)).NotTo(ContainElement(workstatus.EventReasonTemplateStatusFailed))
	})
})

var _ = Describe("Templates whose status is the host's", func() {
	// Regression: a claim bound on the host before its namespace was held had its Bound
	// status replaced by the fleet's Pending.
	It("leaves a claim bound on the host alone", func(ctx SpecContext) {
		ns := "ws-bound-claim"
		env.TemplateNamespace(ctx, ns)
		claim := func() *corev1.PersistentVolumeClaim {
			return &corev1.PersistentVolumeClaim{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
		}
		tmpl := claim()
		tmpl.Spec.VolumeName = "host-volume"
		Expect(env.Host.Create(ctx, tmpl)).To(Succeed())
		tmpl.Status.Phase = corev1.ClaimBound
		Expect(env.Host.Status().Update(ctx, tmpl)).To(Succeed())

		rb := scheduledBinding(ctx, tmpl, 0, []string{"member1"})
		env.ExpectApplied(ctx, workOf(ctx, rb, "member1", claim(), renderedFrom(tmpl)), metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
		Eventually(func(g Gomega) {
			c := fullyApplied(ctx, g, rb)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		}).WithContext(ctx).Should(Succeed())
		Consistently(func(g Gomega) corev1.PersistentVolumeClaimPhase {
			env.Get(ctx, g, tmpl)
			return tmpl.Status.Phase
		}).WithContext(ctx).Should(Equal(corev1.ClaimBound))
	})
})

var _ = Describe("WorkReconciler on a member cache that cannot sync", func() {
	It("answers at once, not when the member's list of the Work's kind succeeds", func(ctx context.Context) {
		cluster := env.MemberNames()[0]
		mc := env.Members[cluster]
		By("a custom resource whose conversion webhook does not answer: the member cannot list it in v2")
		crd := fleettest.BrokenConversionCRD("stuck.flotilla.io", "Widget")
		Expect(mc.Create(ctx, fleettest.AsUnstructured(crd))).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(mc.Delete(ctx, fleettest.AsUnstructured(crd)))).To(Succeed())
		})
		stored := fleettest.CustomResource(crd, metav1.NamespaceDefault, "w", map[string]any{"size": 1})
		stored.SetLabels(map[string]string{wellknown.ManagedLabel: wellknown.ManagedLabelValue})
		Eventually(func() error { return mc.Create(ctx, stored) }).WithContext(ctx).Should(Succeed()) // once Established

		By("a Work of the object in v2, applied, as the execution controller leaves it")
		manifest := stored.DeepCopy()
		manifest.SetAPIVersion("stuck.flotilla.io/v2")
		manifest.SetResourceVersion("")
		raw, err := manifest.MarshalJSON()
		Expect(err).NotTo(HaveOccurred())
		work := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: wellknown.ExecutionNamespace(cluster), Name: "stuck-widget", Generation: 1},
			Spec: workv1alpha1.WorkSpec{Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}}}}
		meta.SetStatusCondition(&work.Status.Conditions, metav1.Condition{Type: wellknown.WorkConditionApplied, Status: metav1.ConditionTrue,
			Reason: wellknown.ReasonAppliedSuccessful, ObservedGeneration: 1})
		r := &workstatus.WorkReconciler{Client: &fleettest.PinnedClient{Client: env.Host, Pinned: work}, Members: members, Interpreter: interpreter.Interpreter{}}

		// Before, the read waited for the member cache to sync the kind, which it never does:
		// one such Work per worker held every worker of the controller.
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		res, err := r.Reconcile(rctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(work)})
		Expect(rctx.Err()).NotTo(HaveOccurred(), "Reconcile returned only when its context ended")
		Expect(err).NotTo(HaveOccurred())
		Expect(res.RequeueAfter).To(BeNumerically(">", 0), "the Work is looked at again")
	})
})

var _ = Describe("The binding's status when its cache does not show the aggregator's last write", func() {
	It("writes a status that went back to what the stale copy shows", func(ctx SpecContext) {
		// A host of its own, where only r writes binding status, and a client that shows r
		// the binding as it was before r's last write. Found by a soak: a restarted manager
		// wrote "Not applied on member2" while member2 was not connected yet, the Work was
		// applied a moment later, and the binding stayed not FullyApplied, its cache still
		// showing the status the manager before it had written.
		own, mgr := fleettest.Isolated(ctx, "ws-stale", "member1")
		pinned := &fleettest.PinnedClient{Client: mgr.GetClient()}
		r := &workstatus.AggregateReconciler{Client: pinned, Recorder: events.NewFakeRecorder(100),
			NewBinding: func() client.Object { return &workv1alpha2.ResourceBinding{} }}

		own.TemplateNamespace(ctx, "stale")
		cm := fleettest.ConfigMap("stale", "cfg", map[string]string{"k": "v"})
		Expect(own.Host.Create(ctx, cm)).To(Succeed())
		rb := own.Binding(cm, 0, fleettest.Scheduled("member1", 0)...).(*workv1alpha2.ResourceBinding)
		Expect(own.Host.Create(ctx, rb)).To(Succeed())
		w := fleettest.Work("member1", cm)
		fleettest.BindWork(w, rb)
		Expect(own.Host.Create(ctx, w)).To(Succeed())
		req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(rb)}
		// setApplied writes the Work's Applied condition and waits until r's cache shows it.
		setApplied := func(status metav1.ConditionStatus) {
			GinkgoHelper()
			Expect(own.Host.Get(ctx, client.ObjectKeyFromObject(w), w)).To(Succeed())
			meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: wellknown.WorkConditionApplied, Status: status,
				Reason: string(status), ObservedGeneration: w.Generation})
			Expect(own.Host.Status().Update(ctx, w)).To(Succeed())
			Eventually(func(g Gomega) {
				cached := &workv1alpha1.Work{}
				g.Expect(mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(w), cached)).To(Succeed())
				g.Expect(meta.IsStatusConditionPresentAndEqual(cached.Status.Conditions, wellknown.WorkConditionApplied, status)).To(BeTrue())
			}).WithContext(ctx).WithTimeout(10 * time.Second).Should(Succeed())
		}
		reconcileTo := func(want metav1.ConditionStatus) {
			GinkgoHelper()
			c := own.ReconcileBinding(ctx, r, req, wellknown.ConditionFullyApplied)
			Expect(c).NotTo(BeNil())
			Expect(c.Status).To(Equal(want), "FullyApplied on the host")
		}

		setApplied(metav1.ConditionTrue)
		Eventually(func() error { return mgr.GetClient().Get(ctx, req.NamespacedName, &workv1alpha2.ResourceBinding{}) }).
			WithContext(ctx).WithTimeout(10 * time.Second).Should(Succeed())
		reconcileTo(metav1.ConditionTrue)

		By("r's reads of the binding stay at this version, FullyApplied")
		stale := &workv1alpha2.ResourceBinding{}
		Expect(own.Host.Get(ctx, req.NamespacedName, stale)).To(Succeed())
		pinned.Pinned = stale

		By("the Work fails, then is applied again")
		setApplied(metav1.ConditionFalse)
		reconcileTo(metav1.ConditionFalse)
		setApplied(metav1.ConditionTrue)
		// Before, the stale copy already showed FullyApplied, so nothing was written.
		reconcileTo(metav1.ConditionTrue)
	}, SpecTimeout(2*time.Minute))
})

var _ = Describe("A Work's manifest statuses when its cache does not show the last write", func() {
	It("writes a member status that went back to what the stale copy shows", func(ctx SpecContext) {
		// A host and member of their own, where no other work-status controller runs, and a
		// client that shows r the Work as it was before r's writes: a member object whose
		// status changes and changes back within a cache's lag.
		own := fleettest.Start(ctx, fleettest.Options{Name: "ws-reflect", Members: 1})
		mgr := own.NewManager()
		ownMembers := own.SetupClusterAndExecution(mgr)
		fleettest.StartManager(mgr)
		own.JoinAndWait(ctx)
		pinned := &fleettest.PinnedClient{Client: mgr.GetClient()}
		r := &workstatus.WorkReconciler{Client: pinned, Members: ownMembers, Interpreter: interpreter.Interpreter{}}

		ns := "reflect"
		own.TemplateNamespace(ctx, ns)
		web := fleettest.Deployment(ns, "web", 2)
		w := fleettest.Work("member1", web)
		Expect(own.Host.Create(ctx, w)).To(Succeed())
		own.ExpectApplied(ctx, w, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
		req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(w)}
		setReady := func(ready int32) {
			GinkgoHelper()
			c := own.Members["member1"]
			cur := &appsv1.Deployment{}
			Expect(c.Get(ctx, client.ObjectKeyFromObject(web), cur)).To(Succeed())
			cur.Status = appsv1.DeploymentStatus{ObservedGeneration: cur.Generation, Replicas: 2, UpdatedReplicas: 2,
				ReadyReplicas: ready, AvailableReplicas: ready, UnavailableReplicas: 2 - ready}
			Expect(c.Status().Update(ctx, cur)).To(Succeed())
		}
		reflects := func(ready int32) {
			GinkgoHelper()
			Eventually(func(g Gomega) {
				_, err := r.Reconcile(ctx, req)
				g.Expect(err).NotTo(HaveOccurred())
				got := &workv1alpha1.Work{}
				g.Expect(own.Host.Get(ctx, req.NamespacedName, got)).To(Succeed())
				g.Expect(got.Status.ManifestStatuses).To(HaveLen(1))
				g.Expect(got.Status.ManifestStatuses[0].Status).NotTo(BeNil())
				g.Expect(statusField(g, got.Status.ManifestStatuses[0].Status.Raw, "readyReplicas")).To(BeNumerically("==", ready))
			}).WithContext(ctx).WithTimeout(15 * time.Second).Should(Succeed())
		}

		setReady(1)
		reflects(1)
		By("r's reads of the Work stay at this version, one ready replica")
		stale := &workv1alpha1.Work{}
		Expect(own.Host.Get(ctx, req.NamespacedName, stale)).To(Succeed())
		pinned.Pinned = stale

		By("the member's status changing, and changing back")
		setReady(2)
		reflects(2)
		setReady(1)
		// Before, the stale copy already showed one ready replica, so nothing was written and
		// the Work kept saying two.
		reflects(1)
	}, SpecTimeout(3*time.Minute))
})
