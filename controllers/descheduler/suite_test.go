package descheduler_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers/descheduler"
	schedulercontroller "github.com/flotilla-io/flotilla/controllers/scheduler"
	"github.com/flotilla-io/flotilla/internal/localcluster"
	"github.com/flotilla-io/flotilla/internal/scheduler"
)

var (
	host *localcluster.Cluster
	c    client.Client
)

func TestDescheduler(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	RegisterFailHandler(Fail)
	EnforceDefaultTimeoutsWhenUsingContexts()
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Descheduler reconciler suite")
}

var _ = BeforeSuite(func(ctx context.Context) {
	var err error
	host, err = localcluster.Start(ctx, localcluster.Options{Name: "descheduler-host"})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(host.Stop)
	_, err = host.InstallCRDs(ctx, filepath.Join("..", "..", "config", "crd", "bases"))
	Expect(err).NotTo(HaveOccurred())
	c, err = client.New(host.RESTConfig(), client.Options{Scheme: flotillascheme.New()})
	Expect(err).NotTo(HaveOccurred())
	stop, err := startManager(host)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(stop)
}, NodeTimeout(3*time.Minute))

// startManager runs the scheduler and the descheduler for ResourceBindings: the suite plays
// the members' part by writing the Clusters' status and the bindings' aggregated status.
func startManager(h *localcluster.Cluster) (func(), error) {
	mgr, err := ctrl.NewManager(h.RESTConfig(), ctrl.Options{Scheme: flotillascheme.New(),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	fail := func(err error) (func(), error) { cancel(); return nil, err }
	if err := schedulercontroller.SetupIndexes(ctx, mgr); err != nil {
		return fail(err)
	}
	s, err := scheduler.New(scheduler.Options{})
	if err != nil {
		return fail(err)
	}
	sched := &schedulercontroller.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("default-scheduler"),
		Scheduler: s, NewBinding: func() client.Object { return &workv1alpha2.ResourceBinding{} }}
	if err := sched.SetupWithManager(mgr, 2); err != nil {
		return fail(err)
	}
	if err := (&descheduler.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("karmada-descheduler"),
		Mover: sched}).SetupWithManager(mgr, 2); err != nil {
		return fail(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mgr.Start(ctx)
	}()
	return func() { cancel(); <-done }, nil
}

// createCluster makes a Ready Cluster that serves Deployments, with one node group of
// freeCPUs free CPUs.
func createCluster(ctx context.Context, name string, freeCPUs int64) {
	cl := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://127.0.0.1:1"}}
	Expect(c.Create(ctx, cl)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(c.Delete(ctx, cl))).To(Succeed()) })
	meta.SetStatusCondition(&cl.Status.Conditions, metav1.Condition{Type: wellknown.ClusterConditionReady,
		Status: metav1.ConditionTrue, Reason: wellknown.ClusterReasonReady, Message: "test"})
	cl.Status.APIEnablements = []clusterv1alpha1.APIEnablement{
		{GroupVersion: "apps/v1", Resources: []clusterv1alpha1.APIResource{{Name: "deployments", Kind: "Deployment"}}},
	}
	free := corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(freeCPUs, resource.DecimalSI),
		corev1.ResourcePods: resource.MustParse("110")}
	cl.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{Allocatable: free,
		NodeGroups: []clusterv1alpha1.NodeGroup{{Count: 1, Free: free}}}
	Expect(c.Status().Update(ctx, cl)).To(Succeed())
}

// report makes a cluster report the workload's replicas unschedulable since an hour ago
// (past the default threshold); 0 clears the report.
func report(ctx context.Context, cluster, ns, kind, name string, replicas int32) {
	Eventually(func(g Gomega) {
		cl := &clusterv1alpha1.Cluster{}
		g.Expect(c.Get(ctx, client.ObjectKey{Name: cluster}, cl)).To(Succeed())
		cl.Status.ResourceSummary.UnschedulableWorkloads = nil
		if replicas > 0 {
			cl.Status.ResourceSummary.UnschedulableWorkloads = []clusterv1alpha1.UnschedulableWorkload{{APIVersion: "apps/v1",
				Kind: kind, Namespace: ns, Name: name, Replicas: replicas, Since: metav1.NewTime(time.Now().Add(-time.Hour))}}
		}
		g.Expect(c.Status().Update(ctx, cl)).To(Succeed())
	}).WithContext(ctx).Should(Succeed())
}

// binding makes a scheduled ResourceBinding of a 1-CPU workload over the clusters and waits
// for its placement.
func binding(ctx context.Context, ns, kind, name string, replicas int32, rs *policyReplicaScheduling, clusters ...string) *workv1alpha2.ResourceBinding {
	rb := &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%s", name, lower(kind))},
		Spec: workv1alpha2.ResourceBindingSpec{
			Resource: workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: kind, Namespace: ns, Name: name, UID: types.UID("uid-" + name)},
			Replicas: replicas,
			ReplicaRequirements: &workv1alpha2.ReplicaRequirements{ResourceRequest: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("1")}},
			Placement: placement(rs, clusters...),
		}}
	Expect(c.Create(ctx, rb)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(c.Delete(ctx, rb))).To(Succeed()) })
	Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(rb), rb)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(rb.Status.Conditions, wellknown.ConditionScheduled)).To(BeTrue())
		g.Expect(rb.Status.SchedulerObservedGeneration).To(Equal(rb.Generation))
	}).WithContext(ctx).Should(Succeed())
	return rb
}

// ready makes the binding's aggregated status say how many replicas are ready per cluster.
func ready(ctx context.Context, rb *workv1alpha2.ResourceBinding, readyOn map[string]int32) {
	Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(rb), rb)).To(Succeed())
		rb.Status.AggregatedStatus = nil
		for _, tc := range rb.Spec.Clusters {
			raw := fmt.Sprintf(`{"replicas":%d,"updatedReplicas":%d,"readyReplicas":%d}`, tc.Replicas, tc.Replicas, readyOn[tc.Name])
			rb.Status.AggregatedStatus = append(rb.Status.AggregatedStatus, workv1alpha2.AggregatedStatusItem{ClusterName: tc.Name,
				Applied: true, Status: rawExtension(raw)})
		}
		g.Expect(c.Status().Update(ctx, rb)).To(Succeed())
	}).WithContext(ctx).Should(Succeed())
}

func placed(ctx context.Context, g Gomega, rb *workv1alpha2.ResourceBinding) map[string]int32 {
	got := &workv1alpha2.ResourceBinding{}
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(rb), got)).To(Succeed())
	out := map[string]int32{}
	for _, tc := range got.Spec.Clusters {
		out[tc.Name] = tc.Replicas
	}
	return out
}
