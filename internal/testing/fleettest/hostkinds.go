package fleettest

import (
	"context"
	"fmt"
	"slices"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ImmediateStorageClass is a StorageClass with Immediate binding whose provisioner does not
// exist: kube-controller-manager's volume binder asks for a volume for each claim of it (the
// claim gets the storage-provisioner annotation), and nothing answers.
const ImmediateStorageClass = "flotilla-test-immediate"

// HostControllerManagers are the field managers kube-controller-manager writes as.
var HostControllerManagers = []string{"kube-controller-manager"}

// EnsureImmediateStorageClass creates ImmediateStorageClass if it is missing.
func EnsureImmediateStorageClass(ctx context.Context, c client.Client) {
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: ImmediateStorageClass},
		Provisioner:       "example.com/nothing",
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate),
	}
	Expect(client.IgnoreAlreadyExists(c.Create(ctx, sc))).To(Succeed())
}

// HostControllerTemplates are templates of every kind a host controller acts on, in ns:
// a Deployment "web" of 2 replicas, with an HPA that wants at least 3 and a PDB; a
// StatefulSet with a volume claim template; a DaemonSet; a Job; a CronJob that runs every
// minute; a LoadBalancer Service and an Ingress; a PersistentVolumeClaim of
// ImmediateStorageClass; a NetworkPolicy.
func HostControllerTemplates(ns string) []client.Object {
	labels := func(app string) map[string]string { return map[string]string{"app": app} }
	pod := func(app string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels(app)},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: Image}}},
		}
	}
	jobPod := pod("batch")
	jobPod.Spec.RestartPolicy = corev1.RestartPolicyNever
	claim := corev1.PersistentVolumeClaimSpec{
		AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		StorageClassName: ptr.To(ImmediateStorageClass),
		Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	return []client.Object{
		Deployment(ns, "web", 2),
		&autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: meta("web"), Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To[int32](3), MaxReplicas: 5,
		}},
		&policyv1.PodDisruptionBudget{ObjectMeta: meta("web"), Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels("web")},
		}},
		&appsv1.StatefulSet{ObjectMeta: meta("db"), Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels("db")}, Template: pod("db"),
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: claim}},
		}},
		&appsv1.DaemonSet{ObjectMeta: meta("agent"), Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels("agent")}, Template: pod("agent"),
		}},
		&batchv1.Job{ObjectMeta: meta("batch"), Spec: batchv1.JobSpec{Template: jobPod}},
		&batchv1.CronJob{ObjectMeta: meta("tick"), Spec: batchv1.CronJobSpec{
			Schedule: "* * * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: jobPod}},
		}},
		&corev1.Service{ObjectMeta: meta("web"), Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, Selector: labels("web"),
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		}},
		&networkingv1.Ingress{ObjectMeta: meta("web"), Spec: networkingv1.IngressSpec{
			DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
				Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}},
		}},
		&corev1.PersistentVolumeClaim{ObjectMeta: meta("data"), Spec: claim},
		&networkingv1.NetworkPolicy{ObjectMeta: meta("deny-all"), Spec: networkingv1.NetworkPolicySpec{
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		}},
	}
}

// ExpectHostControllersKeptOff checks that the host's controllers made nothing from the
// templates of ns and wrote nothing to them: no Pods, ReplicaSets, ControllerRevisions, or
// Jobs and PersistentVolumeClaims besides the templates; the HPA has not scaled "web"; the
// claim was not sent to a provisioner; and no template's managed fields name a host
// controller.
func ExpectHostControllersKeptOff(ctx context.Context, g Gomega, c client.Client, ns string, templates []client.Object) {
	in := client.InNamespace(ns)
	pods := &corev1.PodList{}
	g.Expect(c.List(ctx, pods, in)).To(Succeed())
	g.Expect(pods.Items).To(BeEmpty(), "Pods")
	rss := &appsv1.ReplicaSetList{}
	g.Expect(c.List(ctx, rss, in)).To(Succeed())
	g.Expect(rss.Items).To(BeEmpty(), "ReplicaSets")
	revs := &appsv1.ControllerRevisionList{}
	g.Expect(c.List(ctx, revs, in)).To(Succeed())
	g.Expect(revs.Items).To(BeEmpty(), "ControllerRevisions")
	jobs := &batchv1.JobList{}
	g.Expect(c.List(ctx, jobs, in)).To(Succeed())
	g.Expect(jobs.Items).To(HaveLen(1), "Jobs besides the template")
	pvcs := &corev1.PersistentVolumeClaimList{}
	g.Expect(c.List(ctx, pvcs, in)).To(Succeed())
	g.Expect(pvcs.Items).To(HaveLen(1), "PersistentVolumeClaims besides the template")
	g.Expect(pvcs.Items[0].Spec.VolumeName).To(BeEmpty())
	g.Expect(pvcs.Items[0].Annotations).NotTo(HaveKey("volume.kubernetes.io/storage-provisioner"))
	web := &appsv1.Deployment{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, web)).To(Succeed())
	g.Expect(web.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)), "the HPA scaled the template")
	for _, t := range templates {
		cur := t.DeepCopyObject().(client.Object)
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(t), cur)).To(Succeed())
		for _, f := range cur.GetManagedFields() {
			g.Expect(slices.Contains(HostControllerManagers, f.Manager)).To(BeFalse(),
				fmt.Sprintf("%T %s was written by %s (%s %s)", t, t.GetName(), f.Manager, f.Operation, f.Subresource))
		}
		g.Expect(cur.GetFinalizers()).NotTo(ContainElement("service.kubernetes.io/load-balancer-cleanup"))
	}
}
