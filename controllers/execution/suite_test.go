package execution_test

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/execution"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// The suite runs the execution controller, in-process, against a host apiserver and two
// apiserver-only members, with the cluster controller beside it to connect the members (the
// two share the member connection manager). The tests write Works directly, as the binding
// controller would, with the execution finalizer it sets on create.
var env *fleettest.Env

// members is the suite's member connection manager (the cluster controller's).
var members *member.Manager

// reconciler is the suite's execution controller, for what it keeps in memory.
var reconciler *execution.Reconciler

func TestExecutionController(t *testing.T) {
	fleettest.RunSuite(t, "Execution controller suite", "a host and two member clusters")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	env = fleettest.Start(ctx, fleettest.Options{Name: "execution", Members: 2})
	mgr := env.NewManager()
	members = env.SetupClusterController(mgr)
	stale.Client = mgr.GetClient()
	reconciler = &execution.Reconciler{
		Client: stale, Members: members, Recorder: mgr.GetEventRecorder("execution-controller"),
		Interpreter: interpreter.Interpreter{},
	}
	Expect(reconciler.SetupWithManager(mgr, 4)).To(Succeed())
	fleettest.StartManager(mgr)
	env.JoinAndWait(ctx)
}, NodeTimeout(3*time.Minute))

// stale is the execution controller's client: it reads the manager's cache, except for the
// Works a test pins, which it reads as the copy pinned, standing in for a cache that has not
// caught up with the controller's own last write.
var stale = &staleWorks{}

type staleWorks struct {
	client.Client
	mu     sync.Mutex
	pinned map[client.ObjectKey]*workv1alpha1.Work
}

func (s *staleWorks) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	s.mu.Lock()
	w, ok := s.pinned[key]
	s.mu.Unlock()
	if into, isWork := obj.(*workv1alpha1.Work); ok && isWork {
		w.DeepCopyInto(into)
		return nil
	}
	return s.Client.Get(ctx, key, obj, opts...)
}

// pin makes Get return w, as it is now, for w's key; unpin undoes it.
func (s *staleWorks) pin(w *workv1alpha1.Work) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pinned == nil {
		s.pinned = map[client.ObjectKey]*workv1alpha1.Work{}
	}
	s.pinned[client.ObjectKeyFromObject(w)] = w.DeepCopy()
}

func (s *staleWorks) unpin(w *workv1alpha1.Work) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pinned, client.ObjectKeyFromObject(w))
}
