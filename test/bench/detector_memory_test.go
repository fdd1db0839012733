package bench

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers"
	"github.com/flotilla-io/flotilla/controllers/detector"
	"github.com/flotilla-io/flotilla/internal/hostclient"
	"github.com/flotilla-io/flotilla/internal/localcluster"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// BenchmarkDetectorMemory measures whether the manager's memory grows with objects on the host
// that are not templates. It starts an apiserver-only host and the manager in this process
// (controllers.Setup with main.go's cache options and client limits), with one opted-in
// namespace and a PropagationPolicy selecting its ConfigMaps, so that the ConfigMap kind is
// watched. It prints the live heap after a GC and the process RSS (after returning freed
// memory to the OS; the bench's own clients are in it too): idle, then after
// FLOTILLA_BENCH_OBJECTS (default 50,000) small ConfigMaps in 50 namespaces that are not opted
// in, then after the manager was restarted with them on the host (its initial lists rather
// than watch events). The live heap is the figure to compare.
//
// Measured with 50,000 ConfigMaps on the 2-core machine, live heap in MiB (RSS in MiB):
//
//	                          idle         +50,000       restarted
//	before (every kind, all)  6.8 (46.6)   31.2 (81.9)   44.7 (93.5)
//	bounded watches           5.9 (44.4)   6.0 (46.5)    5.6 (46.8)
//
//	go test -run '^$' -bench DetectorMemory -benchtime 1x -timeout 30m ./test/bench/
func BenchmarkDetectorMemory(b *testing.B) {
	objects := envInt(b, "FLOTILLA_BENCH_OBJECTS", 50000)
	const (
		unrelatedNamespaces = 50
		templateNamespace   = "mem-templates"
	)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	env, err := framework.StartFleetWith(ctx, localcluster.Options{}, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer env.Fleet.Stop()

	stop := startInProcessManager(ctx, b, env)
	defer func() { stop() }()

	if err := env.Host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: templateNamespace,
		Labels: map[string]string{wellknown.PropagationLabel: wellknown.PropagationEnabled}}}); err != nil {
		b.Fatal(err)
	}
	if err := env.Host.Create(ctx, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: templateNamespace, Name: "configmaps"},
		Spec: policyv1alpha1.PropagationSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap"}},
			Placement:         policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1"}}},
		}}); err != nil {
		b.Fatal(err)
	}
	kube := clientFor(b, env.Fleet.Host.RESTConfig())
	// sentinel creates a template in the opted-in namespace and waits for its binding: the
	// detector has caught up with the ConfigMaps created before it.
	sentinel := func(name string) {
		if _, err := kube.CoreV1().ConfigMaps(templateNamespace).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		key := types.NamespacedName{Namespace: templateNamespace, Name: detector.BindingName("ConfigMap", name)}
		waitFor(ctx, b, "the sentinel's binding", func() bool {
			return env.Host.Get(ctx, key, &workv1alpha2.ResourceBinding{}) == nil
		})
		time.Sleep(5 * time.Second) // let the queues drain
	}

	b.ResetTimer()
	sentinel("sentinel-idle")
	idle := measureMemory()

	start := time.Now()
	fast := bulkClient(b, env)
	for i := 0; i < unrelatedNamespaces; i++ {
		if _, err := fast.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("mem-unrelated-%d", i)}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	parallelDoN(32, objects, func(i int) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)},
			Data: map[string]string{"key": "value"}}
		if _, err := fast.CoreV1().ConfigMaps(fmt.Sprintf("mem-unrelated-%d", i%unrelatedNamespaces)).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			b.Error(err)
		}
	})
	created := time.Since(start)
	sentinel("sentinel-loaded")
	loaded := measureMemory()

	// A manager that starts with them on the host: its initial lists, not watch events.
	stop()
	stop = startInProcessManager(ctx, b, env)
	sentinel("sentinel-restarted")
	restarted := measureMemory()
	b.StopTimer()

	fmt.Printf("\ndetector memory (%d unrelated ConfigMaps created in %s)\n", objects, created.Round(time.Second))
	fmt.Printf("%-36s %12s %12s %12s\n", "", "heap (MiB)", "RSS (MiB)", "goroutines")
	for _, r := range []struct {
		name string
		m    memory
	}{{"idle", idle}, {fmt.Sprintf("+%d unrelated ConfigMaps", objects), loaded}, {"manager restarted with them", restarted}} {
		fmt.Printf("%-36s %12.1f %12.1f %12d\n", r.name, r.m.heapMiB, r.m.rssMiB, r.m.goroutines)
	}
	b.ReportMetric(idle.heapMiB, "MiB-heap-idle")
	b.ReportMetric(loaded.heapMiB, "MiB-heap-loaded")
	b.ReportMetric(loaded.rssMiB, "MiB-rss-loaded")
	b.ReportMetric(restarted.heapMiB, "MiB-heap-restarted")
}

// startInProcessManager runs the manager in this process as main.go does (controllers.Setup,
// its cache options and default host client limits), as its ServiceAccount, without leader
// election. stop stops it and waits.
// newBenchManager is a manager with the manager's cache options, no metrics or probe
// listeners and no logging (the figures are the output). Controller names may repeat: a
// benchmark may start a second manager in this process after stopping the first, and other
// benchmarks register controllers of the same names.
func newBenchManager(tb testing.TB, cfg *rest.Config) ctrl.Manager {
	ctrl.SetLogger(logr.Discard())
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 flotillascheme.New(),
		Cache:                  controllers.CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return mgr
}

func startInProcessManager(ctx context.Context, tb testing.TB, env *framework.Env) (stop func()) {
	cfg, err := env.ManagerConfig(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	hostclient.Configure(cfg, hostclient.DefaultQPS, hostclient.DefaultBurst) // main.go's defaults
	mgr := newBenchManager(tb, cfg)
	mctx, cancel := context.WithCancel(ctx)
	if _, err := controllers.Setup(mctx, mgr, controllers.Options{}); err != nil {
		cancel()
		tb.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	return func() { cancel(); <-done }
}

type memory struct {
	heapMiB, rssMiB float64
	goroutines      int
}

// measureMemory reads the live heap after a GC and the RSS after freed memory went back to the
// OS. The bench's own clients are in the figure too; they are small next to the caches.
func measureMemory() memory {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memory{heapMiB: float64(ms.HeapAlloc) / (1 << 20), rssMiB: float64(selfRSS()) / 1024, goroutines: runtime.NumGoroutine()}
}

// selfRSS is this process's resident memory, in KiB.
func selfRSS() int { return procStatus("/proc/self/status")["VmRSS"] }

// bulkClient is an admin client for filling the host, fast.
func bulkClient(b *testing.B, env *framework.Env) *kubernetes.Clientset {
	cfg := env.Fleet.Host.RESTConfig()
	cfg.QPS, cfg.Burst = 5000, 5000
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return c
}
