package detector_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/flotilla-io/flotilla/controllers/detector"
	"github.com/flotilla-io/flotilla/internal/handoff"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// The suite runs the detector alone, in-process, against a host apiserver: no scheduler, no
// binding controller, no kube-controller-manager. What the detector writes (bindings, claims,
// events) is therefore exactly what the tests see; a binding it deletes keeps its
// binding-controller finalizer, so the tests can see how it was deleted.
var env *fleettest.Env

// hostCache is the suite manager's cache, which the detector reads its bindings from.
var hostCache cache.Cache

// templates is the detector's hand-off to the binding controller (not running here), and
// templateReads counts the detector's whole-template reads from the host.
var (
	templates     = handoff.New(handoff.DefaultSize, handoff.DefaultTTL)
	templateReads = &fleettest.CountingReader{}
)

func TestDetector(t *testing.T) { fleettest.RunSuite(t, "Detector suite", "a host cluster") }

var _ = BeforeSuite(func(ctx SpecContext) {
	env = fleettest.Start(ctx, fleettest.Options{Name: "detector"})
	mgr := env.NewManager()
	hostCache = mgr.GetCache()
	templateReads.Reader = mgr.GetAPIReader()
	Expect((&detector.Reconciler{
		Client: mgr.GetClient(), APIReader: templateReads,
		Recorder: mgr.GetEventRecorder("detector"), Interpreter: interpreter.Interpreter{},
		Templates: templates,
	}).SetupWithManager(mgr, detector.Options{Workers: 4})).To(Succeed())
	fleettest.StartManager(mgr)
}, NodeTimeout(3*time.Minute))
