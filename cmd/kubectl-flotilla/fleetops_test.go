package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers/detector"
	"github.com/flotilla-io/flotilla/controllers/rebalancer"
	"github.com/flotilla-io/flotilla/internal/localcluster"
	"github.com/flotilla-io/flotilla/internal/taintedit"
)

var (
	hostKubeconfig string
	hostC          client.Client
)

// TestFleetCommands starts one host for cordon, uncordon, taint and rebalance, with the
// WorkloadRebalancer controller in-process, and stops both when its subtests are done.
func TestFleetCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a host apiserver")
	}
	ctx, cancel := context.WithCancel(context.Background())
	fleet, err := localcluster.StartFleet(ctx, localcluster.FleetOptions{
		CRDDir: filepath.Join("..", "..", "config", "crd", "bases"),
		Host:   localcluster.Options{Name: "plugin-host"},
	})
	if err != nil {
		cancel()
		t.Fatalf("start the host: %v", err)
	}
	t.Cleanup(func() { _ = fleet.Stop() })
	hostKubeconfig = fleet.KubeconfigPath(fleet.Host.Name)
	scheme := flotillascheme.New()
	if hostC, err = client.NewWithWatch(fleet.Host.RESTConfig(), client.Options{Scheme: scheme}); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(fleet.Host.RESTConfig(), ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := (&rebalancer.Reconciler{}).SetupWithManager(mgr, 1); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() { // runs before fleet.Stop
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	t.Run("cordon and taint", testCordonAndTaint)
	t.Run("a concurrent change is kept", testTaintUpdateKeepsConcurrentChange)
	t.Run("rebalance", testRebalanceCommand)
	t.Run("interpret with the host's customizations", testInterpretFromHost)
}

// runHost runs the plugin against the shared host.
func runHost(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return run(t, append([]string{"--kubeconfig", hostKubeconfig}, args...)...)
}

func createTestCluster(t *testing.T, c client.Client, name string, taints ...corev1.Taint) {
	t.Helper()
	cl := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, Taints: taints}}
	if err := c.Create(context.Background(), cl); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), cl) })
}

func taintsOf(t *testing.T, c client.Client, name string) []string {
	t.Helper()
	cl := &clusterv1alpha1.Cluster{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, cl); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tn := range cl.Spec.Taints {
		s := tn.Key
		if tn.Value != "" {
			s += "=" + tn.Value
		}
		out = append(out, s+":"+string(tn.Effect))
	}
	slices.Sort(out)
	return out
}

func testCordonAndTaint(t *testing.T) {
	c := hostC
	notReady := corev1.Taint{Key: wellknown.TaintClusterNotReady, Effect: corev1.TaintEffectNoSchedule}
	createTestCluster(t, c, "taint-me", notReady)
	cordoned := wellknown.TaintClusterCordoned + ":NoSchedule"
	nr := wellknown.TaintClusterNotReady + ":NoSchedule"

	steps := []struct {
		args       []string
		wantOut    string
		wantErr    string
		wantTaints []string
	}{
		{[]string{"cordon", "taint-me"}, "cluster/taint-me cordoned", "", []string{nr, cordoned}},
		{[]string{"cordon", "cluster/taint-me"}, "cluster/taint-me already cordoned", "", []string{nr, cordoned}},
		{[]string{"taint", "taint-me", "dedicated=gpu:NoSchedule"}, "cluster/taint-me tainted", "", []string{nr, cordoned, "dedicated=gpu:NoSchedule"}},
		{[]string{"taint", "taint-me", "dedicated=cpu:NoSchedule"}, "", "--overwrite is false", []string{nr, cordoned, "dedicated=gpu:NoSchedule"}},
		{[]string{"taint", "taint-me", "dedicated=cpu:NoSchedule", "--overwrite"}, "cluster/taint-me tainted", "", []string{nr, cordoned, "dedicated=cpu:NoSchedule"}},
		{[]string{"taint", "taint-me", "dedicated-", "x=y:NoExecute"}, "cluster/taint-me modified", "", []string{nr, cordoned, "x=y:NoExecute"}},
		{[]string{"taint", "taint-me", "x:NoExecute-"}, "cluster/taint-me untainted", "", []string{nr, cordoned}},
		{[]string{"taint", "taint-me", "x-"}, "", `taint "x" not found`, []string{nr, cordoned}},
		{[]string{"taint", "taint-me", "dedicated=gpu"}, "", `invalid taint spec "dedicated=gpu"`, []string{nr, cordoned}},
		{[]string{"taint", "taint-me", "k:Sometimes"}, "", `invalid taint effect "Sometimes"`, []string{nr, cordoned}},
		{[]string{"taint", "taint-me"}, "", "requires at least 2 arg(s)", []string{nr, cordoned}},
		{[]string{"uncordon", "taint-me"}, "cluster/taint-me uncordoned", "", []string{nr}},
		{[]string{"uncordon", "taint-me"}, "cluster/taint-me already uncordoned", "", []string{nr}},
		{[]string{"cordon", "nosuch"}, "", `clusters.cluster.karmada.io "nosuch" not found`, []string{nr}},
		{[]string{"cordon", "node/taint-me"}, "", "is not a cluster", []string{nr}},
	}
	for _, s := range steps {
		out, err := runHost(t, s.args...)
		if s.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), s.wantErr) {
				t.Fatalf("%v: error %v, want one containing %q", s.args, err, s.wantErr)
			}
		} else if err != nil || strings.TrimSpace(out) != s.wantOut {
			t.Fatalf("%v: output %q, error %v; want %q", s.args, out, err, s.wantOut)
		}
		slices.Sort(s.wantTaints)
		if got := taintsOf(t, c, "taint-me"); !slices.Equal(got, s.wantTaints) {
			t.Fatalf("%v: taints %v, want %v", s.args, got, s.wantTaints)
		}
	}
}

// A change made between the read and the write (here, the cluster controller adding its
// not-ready taint) is not lost: the write conflicts and is made again on the new version.
func testTaintUpdateKeepsConcurrentChange(t *testing.T) {
	c := hostC
	createTestCluster(t, c, "racy")
	raced := false
	racing := interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if !raced {
				raced = true
				cur := &clusterv1alpha1.Cluster{}
				if err := cl.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
					return err
				}
				cur.Spec.Taints = append(cur.Spec.Taints, corev1.Taint{Key: wellknown.TaintClusterNotReady, Effect: corev1.TaintEffectNoSchedule})
				if err := cl.Update(ctx, cur); err != nil {
					return err
				}
			}
			return cl.Patch(ctx, obj, patch, opts...)
		},
	})
	changes, err := taintedit.Parse([]string{"dedicated=gpu:NoSchedule"})
	if err != nil {
		t.Fatal(err)
	}
	outcome, err := taintedit.Update(context.Background(), racing, "racy", changes, false, time.Now())
	if err != nil || outcome != taintedit.Tainted {
		t.Fatalf("Update = %s, %v", outcome, err)
	}
	want := []string{wellknown.TaintClusterNotReady + ":NoSchedule", "dedicated=gpu:NoSchedule"}
	slices.Sort(want)
	if got := taintsOf(t, c, "racy"); !slices.Equal(got, want) {
		t.Fatalf("taints %v, want %v (a concurrent change was lost)", got, want)
	}
}

func createBinding(t *testing.T, c client.Client, apiVersion, kind, namespace, name string) {
	t.Helper()
	spec := workv1alpha2.ResourceBindingSpec{Resource: workv1alpha2.ObjectReference{APIVersion: apiVersion, Kind: kind, Namespace: namespace, Name: name}}
	meta := metav1.ObjectMeta{Name: detector.BindingName(kind, name), Namespace: namespace}
	var b client.Object = &workv1alpha2.ResourceBinding{ObjectMeta: meta, Spec: spec}
	if namespace == "" {
		b = &workv1alpha2.ClusterResourceBinding{ObjectMeta: meta, Spec: spec}
	}
	if err := c.Create(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), b) })
}

func testRebalanceCommand(t *testing.T) {
	c := hostC
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	createBinding(t, c, "apps/v1", "Deployment", "shop", "web")
	createBinding(t, c, "rbac.authorization.k8s.io/v1", "ClusterRole", "", "reader")

	// A workload without a binding fails the command, after the table.
	out, err := runHost(t, "rebalance", "deploy/web", "deployments.apps/missing", "-n", "shop", "--wait", "--name", "two")
	if err == nil || !strings.Contains(err.Error(), "1 of 2 workload(s) could not be rebalanced") {
		t.Fatalf("rebalance with a missing workload: error %v, want one saying 1 of 2 failed", err)
	}
	want := []string{
		"workloadrebalancer.apps.karmada.io/two created",
		"WORKLOAD NAMESPACE RESULT REASON",
		"deployment/web shop Successful -",
		"deployment/missing shop Failed ReferencedBindingNotFound",
	}
	if got := rebalanceLines(out); !slices.Equal(got, want) {
		t.Fatalf("output:\n%s\nwant lines %q", out, want)
	}
	rb := &workv1alpha2.ResourceBinding{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: detector.BindingName("Deployment", "web")}, rb); err != nil {
		t.Fatal(err)
	}
	if rb.Spec.RescheduleTriggeredAt == nil {
		t.Fatal("the binding's reschedule was not triggered")
	}

	// A cluster-scoped workload, with a TTL of 0: the rebalancer is gone when the command
	// returns, and its result was still read.
	out, err = runHost(t, "rebalance", "clusterrole/reader", "--wait", "--ttl", "0", "--name", "gone")
	if err != nil || !slices.Contains(rebalanceLines(out), "clusterrole/reader <none> Successful -") {
		t.Fatalf("rebalance clusterrole/reader: output %q, error %v", out, err)
	}

	// Without --wait the command only creates it.
	out, err = runHost(t, "rebalance", "deploy/web", "-n", "shop", "--name", "nowait")
	if err != nil || strings.TrimSpace(out) != "workloadrebalancer.apps.karmada.io/nowait created" {
		t.Fatalf("rebalance without --wait: output %q, error %v", out, err)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"rebalance"}, "requires at least 1 arg(s)"},
		{[]string{"rebalance", "web"}, `"web": expected KIND/NAME`},
		{[]string{"rebalance", "deploy/"}, `"deploy/": expected KIND/NAME`},
		{[]string{"rebalance", "gizmos/x"}, `the server doesn't have a resource type "gizmos"`},
		{[]string{"rebalance", "deploy/web", "--ttl", "-5"}, "--ttl must be 0 or more seconds"},
		{[]string{"rebalance", "deploy/web", "-n", "shop", "--name", "nowait"}, "already exists"},
	} {
		if _, err := runHost(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}

func rebalanceLines(out string) []string {
	var ls []string
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		ls = append(ls, strings.Join(strings.Fields(l), " "))
	}
	return ls
}
