package rollout_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/flotilla-io/flotilla/controllers/binding"
	"github.com/flotilla-io/flotilla/controllers/rollout"
	"github.com/flotilla-io/flotilla/internal/handoff"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// The suite runs the rollout controller and the ResourceBinding controller, in-process,
// against a host apiserver. The tests play the detector (templates and scheduled bindings)
// and the execution and work-status controllers (they write the Works' Applied condition
// and the member objects' status and health); the Clusters are objects only.
var env *fleettest.Env

var clusterNames = []string{"member1", "member2", "member3"}

func TestRolloutController(t *testing.T) {
	fleettest.RunSuite(t, "Rollout controller suite", "a host cluster")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	env = fleettest.Start(ctx, fleettest.Options{Name: "rollout"})
	env.CreateClusters(ctx, clusterNames...)
	mgr := env.NewManager()
	Expect(binding.SetupIndexes(context.Background(), mgr)).To(Succeed())
	interp := interpreter.Interpreter{}
	Expect((&rollout.Reconciler{Interpreter: interp}).SetupWithManager(mgr, 2)).To(Succeed())
	Expect((&binding.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("binding-controller"),
		Interpreter: interp, NewBinding: fleettest.BindingKinds()[0], Templates: handoff.New(handoff.DefaultSize, handoff.DefaultTTL),
		Rollouts: &rollout.Gate{Client: mgr.GetClient(), Interpreter: interp},
	}).SetupWithManager(mgr, 4)).To(Succeed())
	fleettest.StartManager(mgr)
}, NodeTimeout(3*time.Minute))
