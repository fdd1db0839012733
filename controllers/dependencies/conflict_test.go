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
