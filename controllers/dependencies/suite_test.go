package dependencies_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/flotilla-io/flotilla/controllers/binding"
	"github.com/flotilla-io/flotilla/controllers/dependencies"
	"github.com/flotilla-io/flotilla/controllers/detector"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// The suite runs the detector, the dependencies controller and the binding controllers,
// in-process, against a host apiserver. The tests play the scheduler: they set a workload
// binding's spec.clusters. The Clusters are objects only, and no execution controller runs,
// so Works are what the tests look at; a Work the binding controller deletes waits on the
// execution finalizer, which the tests take as gone.
var env *fleettest.Env

func TestDependencies(t *testing.T) {
	fleettest.RunSuite(t, "Dependencies controller suite", "a host cluster")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	env = fleettest.Start(ctx, fleettest.Options{Name: "dependencies"})
	env.CreateClusters(ctx, "member1", "member2")
	mgr := env.NewManager()
	interp := interpreter.Interpreter{}
	Expect(binding.SetupIndexes(context.Background(), mgr)).To(Succeed())
	Expect(dependencies.SetupIndexes(context.Background(), mgr)).To(Succeed())
	deps := dependencies.New(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder("dependencies-distributor"), interp)
	Expect(deps.SetupWithManager(mgr, 4)).To(Succeed())
	Expect((&detector.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorder("detector"), Interpreter: interp, Dependencies: deps,
	}).SetupWithManager(mgr, detector.Options{Workers: 4})).To(Succeed())
	for _, nb := range fleettest.BindingKinds() {
		Expect((&binding.Reconciler{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("binding-controller"),
			Interpreter: interp, NewBinding: nb,
		}).SetupWithManager(mgr, 4)).To(Succeed())
	}
	fleettest.StartManager(mgr)
}, NodeTimeout(3*time.Minute))
