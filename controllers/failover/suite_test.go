package failover_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers/binding"
	"github.com/flotilla-io/flotilla/controllers/failover"
	schedulercontroller "github.com/flotilla-io/flotilla/controllers/scheduler"
	"github.com/flotilla-io/flotilla/internal/localcluster"
	"github.com/flotilla-io/flotilla/internal/scheduler"
)

var (
	host *localcluster.Cluster
	c    client.Client
	// reconciler is the suite's ResourceBinding failover controller, for what it keeps.
	reconciler *failover.Reconciler
)

// The grace period of the suite's failover controller: short, so that overdue tasks show, and
// longer than the steps a spec takes while a task must stay (about 3 s on a busy machine: a
// clean-clone CI run once saw a task end, overdue at 3 s, during them).
const gracePeriod = 6 * time.Second

func TestFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	RegisterFailHandler(Fail)
	EnforceDefaultTimeoutsWhenUsingContexts()
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Failover reconciler suite")
}

var _ = BeforeSuite(func(ctx context.Context) {
	var err error
	host, err = localcluster.Start(ctx, localcluster.Options{Name: "failover-host"})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(host.Stop)
	_, err = host.InstallCRDs(ctx, filepath.Join("..", "..", "config", "crd", "bases"))
	Expect(err).NotTo(HaveOccurred())
	c, err = client.New(host.RESTConfig(), client.Options{Scheme: flotillascheme.New()})
	Expect(err).NotTo(HaveOccurred())
	for i := 1; i <= 3; i++ {
		Expect(createCluster(ctx, fmt.Sprintf("m%d", i))).To(Succeed())
	}
	stop, err := startManager(host)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(stop)
}, NodeTimeout(3*time.Minute))

// startManager runs the scheduler and the failover controllers: the suite plays the binding
// and execution controllers' part by writing Works itself.
func startManager(h *localcluster.Cluster) (func(), error) {
	mgr, err := ctrl.NewManager(h.RESTConfig(), ctrl.Options{Scheme: flotillascheme.New(),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	fail := func(err error) (func(), error) { cancel(); return nil, err }
	if err := binding.SetupIndexes(ctx, mgr); err != nil {
		return fail(err)
	}
	if err := schedulercontroller.SetupIndexes(ctx, mgr); err != nil {
		return fail(err)
	}
	s, err := scheduler.New(scheduler.Options{})
	if err != nil {
		return fail(err)
	}
	for _, nb := range []func() client.Object{
		func() client.Object { return &workv1alpha2.ResourceBinding{} },
		func() client.Object { return &workv1alpha2.ClusterResourceBinding{} },
	} {
		if err := (&schedulercontroller.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("default-scheduler"),
			Scheduler: s, NewBinding: nb}).SetupWithManager(mgr, 4); err != nil {
			return fail(err)
		}
		opts := failover.DefaultOptions
		opts.GracePeriod, opts.Workers = gracePeriod, 4
		r := &failover.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("failover-controller"),
			NewBinding: nb, Options: opts}
		if err := r.SetupWithManager(mgr); err != nil {
			return fail(err)
		}
		if _, ok := nb().(*workv1alpha2.ResourceBinding); ok {
			reconciler = r
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mgr.Start(ctx)
	}()
	return func() { cancel(); <-done }, nil
}

// createCluster makes a Ready Cluster that serves Deployments.
func createCluster(ctx context.Context, name string) error {
	cl := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://127.0.0.1:1"}}
	if err := c.Create(ctx, cl); err != nil {
		return err
	}
	meta.SetStatusCondition(&cl.Status.Conditions, metav1.Condition{Type: wellknown.ClusterConditionReady,
		Status: metav1.ConditionTrue, Reason: wellknown.ClusterReasonReady, Message: "test"})
	cl.Status.APIEnablements = []clusterv1alpha1.APIEnablement{
		{GroupVersion: "apps/v1", Resources: []clusterv1alpha1.APIResource{{Name: "deployments", Kind: "Deployment"}}},
	}
	return c.Status().Update(ctx, cl)
}
