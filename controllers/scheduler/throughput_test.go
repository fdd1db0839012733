package scheduler_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

// BenchmarkReconcilerThroughput measures the scheduler reconciler end to end against a local
// host apiserver: 2,000 ResourceBindings (static weights over 100 Clusters) created at once,
// timed until every one has spec.clusters. It reports bindings per second, with the
// manager's default client rate towards the host (100 QPS; each binding takes two writes)
// and with the client unthrottled, which shows what the reconciler itself sustains.
func BenchmarkReconcilerThroughput(b *testing.B) {
	for _, qps := range []float32{100, 5000} {
		b.Run(fmt.Sprintf("qps=%.0f", qps), func(b *testing.B) { throughput(b, qps) })
	}
}

func throughput(b *testing.B, qps float32) {
	const clusters, bindingsN = 100, 2000
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	h, err := startHost(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Stop()
	cfg := h.RESTConfig()
	cfg.QPS, cfg.Burst = 1000, 2000
	cl, err := client.New(cfg, client.Options{Scheme: flotillascheme.New()})
	if err != nil {
		b.Fatal(err)
	}
	var names []string
	for i := 0; i < clusters; i++ {
		n := fmt.Sprintf("c%03d", i)
		names = append(names, n)
		if err := createCluster(ctx, cl, n, nil); err != nil {
			b.Fatal(err)
		}
	}
	if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tp"}}); err != nil {
		b.Fatal(err)
	}
	// Bindings exist before the scheduler starts, so the figure is the scheduler's alone.
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := 0; i < bindingsN; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			if err := cl.Create(ctx, newBinding("tp", fmt.Sprintf("b%04d", i), 6, weighted(names[i%clusters], names[(i+1)%clusters], names[(i+2)%clusters]))); err != nil {
				b.Error(err)
			}
		}(i)
	}
	wg.Wait()

	b.ResetTimer()
	start := time.Now()
	stop, err := startScheduler(h, 16, qps)
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	for {
		list := &workv1alpha2.ResourceBindingList{}
		if err := cl.List(ctx, list, client.InNamespace("tp")); err != nil {
			b.Fatal(err)
		}
		done := 0
		for _, rb := range list.Items {
			if len(rb.Spec.Clusters) > 0 {
				done++
			}
		}
		if done == bindingsN {
			break
		}
		if ctx.Err() != nil {
			b.Fatalf("only %d of %d bindings scheduled", done, bindingsN)
		}
		time.Sleep(50 * time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	fmt.Printf("\nclient %.0f QPS: scheduled %d bindings over %d clusters in %s: %.0f bindings/s\n", qps, bindingsN, clusters, elapsed.Round(time.Millisecond), bindingsN/elapsed.Seconds())
	b.ReportMetric(bindingsN/elapsed.Seconds(), "bindings/s")
}
