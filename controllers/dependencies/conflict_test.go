package dependencies_test

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers/dependencies"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

var _ = Describe("A dependency's binding whose delete meets a conflict", func() {
	// Regression (session 17's soak, seed 612775190): the controller emptied requiredBy and
	// then deleted the binding; the delete failed (the scheduler had written the binding
	// meanwhile), and the retry found the binding listed by no workload: it stayed, unclaimed
	// and required by nothing, for good.
	It("is deleted at the retry", func(ctx SpecContext) {
		// A host of its own whose only controller is this one, reading through a client
		// whose first delete of a binding fails as if the binding had changed.
		own := fleettest.Start(ctx, fleettest.Options{Name: "dependencies-conflict"})
		mgr := own.NewManager()
		Expect(dependencies.SetupIndexes(context.Background(), mgr)).To(Succeed())
		c := &conflictOnce{Client: mgr.GetClient()}
		deps := dependencies.New(c, mgr.GetAPIReader(), mgr.GetEventRecorder("dependencies-distributor"), interpreter.Interpreter{})
		Expect(deps.SetupWithManager(mgr, 2)).To(Succeed())
		fleettest.StartManager(mgr)

		ns := "deps-conflict"
		Expect(own.Host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		cm := fleettest.ConfigMap(ns, "cfg", map[string]string{"k": "v"})
		Expect(own.Host.Create(ctx, cm)).To(Succeed())
		// Attached (no policy claims it) and required only by a workload binding that is gone.
		b := &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg-configmap"},
			Spec: workv1alpha2.ResourceBindingSpec{
				Resource:   workv1alpha2.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "cfg", UID: cm.UID},
				RequiredBy: []workv1alpha2.BindingSnapshot{{Namespace: ns, Name: "web-deployment"}},
			}}
		Expect(own.Host.Create(ctx, b)).To(Succeed())

		Eventually(func() bool { return c.refused.Load() }).WithContext(ctx).WithTimeout(timeout).Should(BeTrue())
		Eventually(func() error { return own.Host.Get(ctx, client.ObjectKeyFromObject(b), b) }).
			WithContext(ctx).WithTimeout(timeout).Should(Satisfy(apierrors.IsNotFound), "deleted at the retry")
	}, SpecTimeout(2*time.Minute))
})

var _ = Describe("A dependency whose preserve mark meets a conflict", func() {
	// The edge left in session 17's note: a workload unbound with its member objects kept
	// marks its dependencies' bindings preserveResourcesOnDeletion before deleting them. When
	// that patch met a conflict, the retry came at the next reconcile, and if the workload's
	// binding was gone by then, nothing said its objects were kept any more: the dependency
	// was deleted without preserving, and its member objects with it.
	It("is still marked when the workload's binding is gone by the time it is retried", func(ctx SpecContext) {
		own := fleettest.Start(ctx, fleettest.Options{Name: "dependencies-preserve"})
		mgr := own.NewManager()
		Expect(dependencies.SetupIndexes(context.Background(), mgr)).To(Succeed())
		ns := "deps-preserve"
		const hold = "test.flotilla.io/hold"
		parentKey := types.NamespacedName{Namespace: ns, Name: "web-deployment"}
		depKey := types.NamespacedName{Namespace: ns, Name: "cfg-configmap"}
		// The first patch of the dependency after it is armed meets a real conflict (another
		// writer touches the binding first, as the scheduler does), and by the time it returns
		// the workload's binding is gone.
		c := &raceFirstPatch{Client: mgr.GetClient(), target: depKey, before: func(ctx context.Context) error {
			return own.Host.Patch(ctx, &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: depKey.Name}},
				client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"test.flotilla.io/touched":"true"}}}`)))
		}, after: func(ctx context.Context) error {
			return own.Host.Patch(ctx, &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: parentKey.Name}},
				client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
		}}
		deps := dependencies.New(c, mgr.GetAPIReader(), mgr.GetEventRecorder("dependencies-distributor"), interpreter.Interpreter{})
		Expect(deps.SetupWithManager(mgr, 2)).To(Succeed())
		fleettest.StartManager(mgr)

		// The workload's binding, held by a finalizer of the test's (the binding controller's,
		// in a manager), is unbound with its member objects kept.
		parent := preservingWorkload(ctx, own.Host, ns, hold)
		dep := &workv1alpha2.ResourceBinding{}
		Eventually(func(g Gomega) {
			g.Expect(own.Host.Get(ctx, depKey, dep)).To(Succeed())
			g.Expect(dep.Spec.RequiredBy).To(ConsistOf(HaveField("Name", parentKey.Name)))
		}).WithContext(ctx).WithTimeout(timeout).Should(Succeed())
		// A finalizer keeps the dependency's binding readable once it is deleted.
		Expect(own.Host.Patch(ctx, dep, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":["`+hold+`"]}}`)))).To(Succeed())

		c.armed.Store(true)
		Expect(own.Host.Delete(ctx, parent)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(own.Host.Get(ctx, depKey, dep)).To(Succeed())
			g.Expect(dep.DeletionTimestamp).NotTo(BeNil(), "the dependency's binding is deleted")
		}).WithContext(ctx).WithTimeout(timeout).Should(Succeed())
		Expect(c.fired.Load()).To(BeTrue(), "the dependency's preserve mark met the conflict")
		Expect(apierrors.IsNotFound(own.Host.Get(ctx, parentKey, &workv1alpha2.ResourceBinding{}))).To(BeTrue(), "the workload's binding is gone")
		Expect(dep.Spec.PreserveResourcesOnDeletion).To(HaveValue(BeTrue()), "the dependency keeps its member objects as the workload does")
		Expect(own.Host.Patch(ctx, dep, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))).To(Succeed())
	}, SpecTimeout(2*time.Minute))
})

// raceFirstPatch is a client whose first patch of the target binding, once armed, runs
// before first and after once it returns.
type raceFirstPatch struct {
	client.Client
	target        types.NamespacedName
	before, after func(context.Context) error
	armed, fired  atomic.Bool
}

func (c *raceFirstPatch) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if _, ok := obj.(*workv1alpha2.ResourceBinding); !ok || client.ObjectKeyFromObject(obj) != c.target || !c.armed.Load() || !c.fired.CompareAndSwap(false, true) {
		return c.Client.Patch(ctx, obj, patch, opts...)
	}
	if err := c.before(ctx); err != nil {
		return err
	}
	err := c.Client.Patch(ctx, obj, patch, opts...)
	if aerr := c.after(ctx); aerr != nil {
		return errors.Join(err, aerr)
	}
	return err
}

// conflictOnce is a client whose first delete of a ResourceBinding fails with a conflict.
type conflictOnce struct {
	client.Client
	refused atomic.Bool
}

func (c *conflictOnce) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if _, ok := obj.(*workv1alpha2.ResourceBinding); ok && c.refused.CompareAndSwap(false, true) {
		return apierrors.NewConflict(schema.GroupResource{Group: workv1alpha2.GroupVersion.Group, Resource: "resourcebindings"},
			obj.GetName(), errors.New("the object has been modified"))
	}
	return c.Client.Delete(ctx, obj, opts...)
}
