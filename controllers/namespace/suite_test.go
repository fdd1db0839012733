package namespace_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/flotilla-io/flotilla/controllers/namespace"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// The suite runs the HoldReconciler alone, in-process, against a host with its own
// kube-controller-manager, so that the host's Deployment controller really tries to create
// ReplicaSets in template namespaces.
var env *fleettest.Env

func TestNamespaceController(t *testing.T) {
	fleettest.RunSuite(t, "Namespace controller suite", "a host cluster with kube-controller-manager")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	env = fleettest.Start(ctx, fleettest.Options{Name: "namespace", ControllerManager: true})
	mgr := env.NewManager()
	Expect((&namespace.HoldReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)).To(Succeed())
	fleettest.StartManager(mgr)
}, NodeTimeout(3*time.Minute))
