package mcs_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	mcscontroller "github.com/flotilla-io/flotilla/controllers/mcs"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// The suite runs the mcs controller in-process against a host apiserver and three
// apiserver-only members, with the cluster controller beside it to connect them. No
// kube-controller-manager runs in the members, so the tests write the providers' Services,
// ServiceExports and EndpointSlices by hand, labelled as propagation and
// kube-controller-manager label them.
var env *fleettest.Env

// reconciler is the suite's mcs controller, for what it keeps in memory.
var reconciler *mcscontroller.Reconciler

func TestMCSController(t *testing.T) {
	fleettest.RunSuite(t, "Multi-cluster services controller suite", "a host and three member clusters")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	env = fleettest.Start(ctx, fleettest.Options{Name: "mcs", Members: 3})
	mgr := env.NewManager()
	members := env.SetupClusterController(mgr)
	reconciler = &mcscontroller.Reconciler{Client: mgr.GetClient(), Members: members,
		Recorder: mgr.GetEventRecorder(mcscontroller.ControllerName)}
	Expect(reconciler.SetupWithManager(mgr, 2)).To(Succeed())
	fleettest.StartManager(mgr)
	env.JoinAndWait(ctx)
}, NodeTimeout(3*time.Minute))
