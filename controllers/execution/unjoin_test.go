package execution_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

var _ = Describe("A Cluster deleted while the manager has no connection to its member", func() {
	// Regression (a 12-minute soak): a manager that started while a Cluster was being
	// deleted never connected to its member, and the execution controller released the
	// Works at once, leaving their objects in the member.
	It("has its Works' objects deleted in the member once connected, not left behind", func(ctx SpecContext) {
		cm := fleettest.ConfigMap("exec-unjoin", "cfg", map[string]string{"k": "v"})
		w := createWork(ctx, "member1", cm)
		env.ExpectApplied(ctx, w, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
		DeferCleanup(rejoin, "member1")
		Expect(reconciler.RemembersMember("member1")).NotTo(BeZero(), "the namespace the ConfigMap went to")

		By("deleting the Cluster right after its connection is dropped, as after a restart")
		members.Disconnect("member1")
		Expect(env.Host.Delete(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}})).To(Succeed())
		Eventually(memberGone(ctx, "member1", cm)).WithContext(ctx).Should(BeTrue(), "deleted in the member, not left behind")
		Eventually(fleettest.Gone(ctx, env.Host, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}})).
			WithContext(ctx).Should(BeTrue())
		Eventually(func() int { return reconciler.RemembersMember("member1") }).WithContext(ctx).
			Should(BeZero(), "namespaces and granted groups kept of the deleted member1")
	})
})

// rejoin joins a member whose Cluster was deleted again. This host runs no namespace
// controller: the old execution namespace, empty by now, is finalized by hand first.
func rejoin(ctx context.Context, name string) {
	Eventually(fleettest.Gone(ctx, env.Host, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}})).WithContext(ctx).Should(BeTrue())
	ns := &corev1.Namespace{}
	if err := env.Host.Get(ctx, client.ObjectKey{Name: wellknown.ExecutionNamespace(name)}, ns); err == nil && ns.DeletionTimestamp != nil {
		kube, err := kubernetes.NewForConfig(env.Fleet.Host.RESTConfig())
		Expect(err).NotTo(HaveOccurred())
		ns.Spec.Finalizers = nil
		_, err = kube.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(fleettest.Gone(ctx, env.Host, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns.Name}})).WithContext(ctx).Should(BeTrue())
	}
	env.JoinAndWait(ctx)
}
