package namespace_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/flotilla-io/flotilla/controllers/namespace"
	"github.com/flotilla-io/flotilla/internal/localcluster"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// The suite runs the HoldReconciler and HeldReconciler alone, in-process, against a host with
// its own kube-controller-manager (its controllers sharing one identity, and the volume binder
// on), so that the host's controllers really try to act on templates.
var env *fleettest.Env

func TestNamespaceController(t *testing.T) {
	fleettest.RunSuite(t, "Namespace controller suite", "a host cluster with kube-controller-manager")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	env = fleettest.Start(ctx, fleettest.Options{Name: "namespace", ControllerManager: true, ControllerManagerArgs: []string{
		"--use-service-account-credentials=false",
		"--controllers=" + localcluster.ControllerManagerControllersWithVolumeBinder,
	}})
	mgr := env.NewManager()
	Expect((&namespace.HoldReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)).To(Succeed())
	Expect((&namespace.HeldReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("namespace-controller")}).SetupWithManager(mgr)).To(Succeed())
	fleettest.StartManager(mgr)
}, NodeTimeout(3*time.Minute))
