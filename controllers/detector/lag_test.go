package detector_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers/detector"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

var _ = Describe("Releasing a template whose new binding the cache does not show yet", func() {
	It("deletes the binding it has just created when the policy goes at once", func(ctx SpecContext) {
		// A host of its own, with a detector whose cache never shows ResourceBindings: a
		// policy deleted right after the detector created the binding of a template it
		// claimed (found by a soak: a namespace opted in again as the manager restarted, and
		// its policy deleted a second later). No event brings the template back once the
		// cache shows the binding, so the release must not trust the cache's miss.
		bound := boundOnOwnHost(ctx, "detector-lag", "lag", func(c client.Client) client.Client { return &hiddenBindings{Client: c} })
		own, pp, cm, b := bound.own, bound.pp, bound.cm, bound.binding

		By("the policy deleted while the detector's cache does not show the binding")
		Expect(own.Host.Delete(ctx, pp)).To(Succeed())
		// Before, the release found no binding in the cache and deleted nothing.
		Eventually(func(g Gomega) {
			g.Expect(own.Host.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
			g.Expect(b.DeletionTimestamp).NotTo(BeNil(), "the binding is deleted")
		}).WithContext(ctx).WithTimeout(20 * time.Second).Should(Succeed())
		// Never scheduled (no scheduler here): nothing in the members to keep.
		Eventually(func(g Gomega) {
			own.Get(ctx, g, cm)
			g.Expect(cm.Labels).NotTo(HaveKey(wellknown.PropagationPolicyPermanentIDLabel))
		}).WithContext(ctx).WithTimeout(20 * time.Second).Should(Succeed())
		own.Release(ctx, b)
	}, SpecTimeout(2*time.Minute))
})

// ownBound is what boundOnOwnHost made.
type ownBound struct {
	own     *fleettest.Env
	mgr     ctrl.Manager
	pp      client.Object
	cm      *corev1.ConfigMap
	binding *workv1alpha2.ResourceBinding
}

// boundOnOwnHost starts a host of its own whose only controller is a detector reading through
// wrap (a client that shows it a cache behind the host), opts namespace ns in, and creates
// PropagationPolicy "pp" for ConfigMap "cfg" and the ConfigMap; it returns once the detector
// has bound it.
func boundOnOwnHost(ctx context.Context, name, ns string, wrap func(client.Client) client.Client) ownBound {
	GinkgoHelper()
	own := fleettest.Start(ctx, fleettest.Options{Name: name})
	mgr := own.NewManager()
	r := &detector.Reconciler{Client: wrap(mgr.GetClient()), APIReader: mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorder("detector"), Interpreter: interpreter.Interpreter{}}
	Expect(r.SetupWithManager(mgr, detector.Options{Workers: 2})).To(Succeed())
	fleettest.StartManager(mgr)

	own.TemplateNamespace(ctx, ns)
	pp := policy(ns, "pp", selectConfigMap("cfg"))
	Expect(own.Host.Create(ctx, pp)).To(Succeed())
	cm := fleettest.ConfigMap(ns, "cfg", map[string]string{"k": "v"})
	Expect(own.Host.Create(ctx, cm)).To(Succeed())
	b := rb(ns, "ConfigMap", "cfg")
	Eventually(func() error { return own.Host.Get(ctx, client.ObjectKeyFromObject(b), b) }).
		WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	return ownBound{own: own, mgr: mgr, pp: pp, cm: cm, binding: b}
}

// hiddenBindings is a client whose reads never find a ResourceBinding: a cache that has not
// seen the bindings just created.
type hiddenBindings struct {
	client.Client
}

func (h *hiddenBindings) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*workv1alpha2.ResourceBinding); ok {
		return apierrors.NewNotFound(schema.GroupResource{Group: workv1alpha2.GroupVersion.Group, Resource: "resourcebindings"}, key.Name)
	}
	return h.Client.Get(ctx, key, obj, opts...)
}
