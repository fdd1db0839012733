package dependencies_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers/dependencies"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// Issue 34, item 2: a preserving workload's binding gone before the dependencies controller
// looked (the binding controller, done with its Works, let it go first; here, while the
// dependencies controller was not running) left nothing that said its member objects were
// kept: the dependencies were deleted from the members while the Deployment stayed. The
// workload's binding now waits for the dependencies controller (DependenciesFinalizer).
var _ = Describe("A preserving workload's binding deleted while the dependencies controller is away", func() {
	It("keeps the dependencies' member objects: the binding waits for their release", func(ctx SpecContext) {
		own := fleettest.Start(ctx, fleettest.Options{Name: "dependencies-order"})
		start := func() context.CancelFunc {
			mgr := own.NewManager()
			Expect(dependencies.SetupIndexes(context.Background(), mgr)).To(Succeed())
			deps := dependencies.New(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder("dependencies-distributor"), interpreter.Interpreter{})
			Expect(deps.SetupWithManager(mgr, 2)).To(Succeed())
			mctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer GinkgoRecover()
				defer close(done)
				Expect(mgr.Start(mctx)).To(Succeed())
			}()
			stop := func() { cancel(); <-done }
			DeferCleanup(stop)
			return stop
		}
		const hold = "test.flotilla.io/binding-controller"
		ns := "deps-order"
		parentKey := types.NamespacedName{Namespace: ns, Name: "web-deployment"}
		depKey := types.NamespacedName{Namespace: ns, Name: "cfg-configmap"}
		// The workload's binding as the detector makes it for a preserving policy; the test's
		// finalizer stands for the binding controller's.
		parent := preservingWorkload(ctx, own.Host, ns, hold)

		stop := start()
		dep := &workv1alpha2.ResourceBinding{}
		Eventually(func(g Gomega) {
			g.Expect(own.Host.Get(ctx, depKey, dep)).To(Succeed())
			g.Expect(dep.Spec.RequiredBy).To(ConsistOf(HaveField("Name", parentKey.Name)))
		}).WithContext(ctx).WithTimeout(timeout).Should(Succeed())
		// A finalizer keeps the dependency's binding readable once it is deleted.
		Expect(own.Host.Patch(ctx, dep, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":["`+hold+`"]}}`)))).To(Succeed())
		stop()

		By("the workload is unbound, its member objects kept, and the binding controller is done first")
		Expect(own.Host.Delete(ctx, parent)).To(Succeed())
		Expect(own.Host.Get(ctx, parentKey, parent)).To(Succeed())
		Expect(own.Host.Patch(ctx, parent, client.RawPatch(types.JSONPatchType,
			[]byte(`[{"op":"remove","path":"/metadata/finalizers/0"}]`)))).To(Succeed())
		Expect(own.Host.Get(ctx, parentKey, parent)).To(Succeed(), "the workload's binding waits for the dependencies controller")
		Expect(parent.Finalizers).To(ConsistOf(wellknown.DependenciesFinalizer))

		By("the dependencies controller comes back")
		start()
		Eventually(func(g Gomega) {
			g.Expect(own.Host.Get(ctx, depKey, dep)).To(Succeed())
			g.Expect(dep.DeletionTimestamp).NotTo(BeNil(), "the dependency's binding is deleted")
		}).WithContext(ctx).WithTimeout(timeout).Should(Succeed())
		Expect(dep.Spec.PreserveResourcesOnDeletion).To(HaveValue(BeTrue()), "the dependency keeps its member objects as the workload does")
		Eventually(func() bool {
			return apierrors.IsNotFound(own.Host.Get(ctx, parentKey, &workv1alpha2.ResourceBinding{}))
		}).WithContext(ctx).WithTimeout(timeout).Should(BeTrue(), "then the workload's binding goes")
		Expect(own.Host.Patch(ctx, dep, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))).To(Succeed())
	}, SpecTimeout(2*time.Minute))
})

// A workload's binding whose policy stopped propagating dependencies while no leader ran the
// dependencies controller (the soak with sharded managers: the policy changed between a
// leader's kill and its successor's start) still held DependenciesFinalizer, and the new
// leader's controller, which looked only at bindings with propagateDeps or requiredBy, never
// looked at it again: deleted, it stayed for good.
var _ = Describe("A workload's binding that stopped propagating dependencies while the dependencies controller was away", func() {
	It("still lets go of it once deleted", func(ctx SpecContext) {
		own := fleettest.Start(ctx, fleettest.Options{Name: "dependencies-away"})
		start := func() func() {
			mgr := own.NewManager()
			Expect(dependencies.SetupIndexes(context.Background(), mgr)).To(Succeed())
			deps := dependencies.New(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder("dependencies-distributor"), interpreter.Interpreter{})
			Expect(deps.SetupWithManager(mgr, 2)).To(Succeed())
			mctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer GinkgoRecover()
				defer close(done)
				Expect(mgr.Start(mctx)).To(Succeed())
			}()
			stop := func() { cancel(); <-done }
			DeferCleanup(stop)
			return stop
		}
		const hold = "test.flotilla.io/binding-controller"
		ns := "deps-away"
		parentKey := types.NamespacedName{Namespace: ns, Name: "web-deployment"}
		parent := preservingWorkload(ctx, own.Host, ns, hold)
		stop := start()
		Eventually(func(g Gomega) {
			g.Expect(own.Host.Get(ctx, parentKey, parent)).To(Succeed())
			g.Expect(parent.Finalizers).To(ContainElement(wellknown.DependenciesFinalizer))
		}).WithContext(ctx).WithTimeout(timeout).Should(Succeed())
		stop()

		By("the policy stops propagating dependencies while the controller is away")
		Expect(own.Host.Patch(ctx, parent, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"propagateDeps":false}}`)))).To(Succeed())
		start()

		By("the template is deleted, and the binding controller is done")
		Expect(own.Host.Delete(ctx, parent)).To(Succeed())
		Expect(own.Host.Get(ctx, parentKey, parent)).To(Succeed())
		Expect(own.Host.Patch(ctx, parent, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":["`+wellknown.DependenciesFinalizer+`"]}}`)))).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(own.Host.Get(ctx, parentKey, &workv1alpha2.ResourceBinding{}))
		}).WithContext(ctx).WithTimeout(timeout).Should(BeTrue(), "the workload's binding goes")
	}, SpecTimeout(2*time.Minute))
})

// preservingWorkload creates, in a new namespace, the ConfigMap cfg, a Deployment web that
// mounts it, and web's binding as the detector makes it for a policy with propagateDeps that
// preserves member objects, held by the finalizer hold (the binding controller's, in a
// manager).
func preservingWorkload(ctx context.Context, host client.Client, ns, hold string) *workv1alpha2.ResourceBinding {
	GinkgoHelper()
	Expect(host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	Expect(host.Create(ctx, fleettest.ConfigMap(ns, "cfg", map[string]string{"k": "v"}))).To(Succeed())
	web := fleettest.Deployment(ns, "web", 1)
	web.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}}
	Expect(host.Create(ctx, web)).To(Succeed())
	parent := &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-deployment", Finalizers: []string{hold}},
		Spec: workv1alpha2.ResourceBindingSpec{
			Resource:                    workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: "web", UID: web.UID},
			PropagateDeps:               true,
			PreserveResourcesOnDeletion: ptr.To(true),
		}}
	Expect(host.Create(ctx, parent)).To(Succeed())
	return parent
}
