package binding_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/flotilla-io/flotilla/controllers/binding"
	"github.com/flotilla-io/flotilla/internal/handoff"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// The suite runs the binding controllers (ResourceBinding and ClusterResourceBinding) alone,
// in-process, against a host apiserver. The tests play the detector and the scheduler: they
// write templates, and bindings with spec.clusters set. The Clusters are objects only (no
// member is connected) and no execution controller runs, so a Work the binding controller
// deletes waits on the execution finalizer, which shows how it was deleted.
var env *fleettest.Env

var clusterNames = []string{"member1", "member2"}

// templates is the hand-off the tests play the detector with, and templateReads counts the
// binding controllers' template reads from the host.
var (
	templates     = handoff.New(handoff.DefaultSize, handoff.DefaultTTL)
	templateReads = &fleettest.CountingReader{}
)

func TestBindingController(t *testing.T) {
	fleettest.RunSuite(t, "Binding controller suite", "a host cluster")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	env = fleettest.Start(ctx, fleettest.Options{Name: "binding"})
	env.CreateClusters(ctx, clusterNames...)
	mgr := env.NewManager()
	Expect(binding.SetupIndexes(context.Background(), mgr)).To(Succeed())
	templateReads.Reader = mgr.GetAPIReader()
	for _, nb := range fleettest.BindingKinds() {
		Expect((&binding.Reconciler{
			Client: mgr.GetClient(), APIReader: templateReads, Recorder: mgr.GetEventRecorder("binding-controller"),
			Interpreter: interpreter.Interpreter{}, NewBinding: nb, Templates: templates, SuccessEvents: true,
		}).SetupWithManager(mgr, 4)).To(Succeed())
	}
	fleettest.StartManager(mgr)
}, NodeTimeout(3*time.Minute))
