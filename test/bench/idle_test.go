package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

// idleMembers is the number of members of BenchmarkIdleManager.
const idleMembers = 10

// idleSettle is how long the idle manager is left alone before its RSS is read: past the Go
// runtime's forced collection every 2 minutes, after which it returns what the burst grew.
const idleSettle = 3 * time.Minute

// idleManager measures the memory of an idle manager holding templates Deployments
// (FLOTILLA_BENCH_IDLE_TEMPLATES; the target is for 10,000) propagated to 10 apiserver-only
// members, on a fleet of its own: one PropagationPolicy per member selects the templates
// labelled for it, so each template has one binding, one Work and one member object. Once
// every binding is FullyApplied it adds to t the manager's RSS 30 s later and its peak, its
// RSS after idleSettle, and its live heap after a collection.
func idleManager(b *testing.B, templates int, t *targetTable) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	env, mgr, names := joinedFleet(ctx, b, idleMembers)
	if err := env.Host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace,
		Labels: map[string]string{wellknown.PropagationLabel: wellknown.PropagationEnabled}}}); err != nil {
		b.Fatal(err)
	}
	for _, m := range names {
		pp := &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: m},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment",
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"member": m}}}},
				Placement: policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{m}}}}}
		if err := env.Host.Create(ctx, pp); err != nil {
			b.Fatal(err)
		}
	}
	host := clientFor(b, env.Fleet.Host.RESTConfig())
	start := time.Now()
	parallelDo(templates, func(i int) {
		d := deployment(fmt.Sprintf("idle-%d", i))
		d.Labels["member"] = names[i%len(names)]
		if _, err := host.AppsV1().Deployments(namespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			b.Error(err)
		}
	})
	for {
		list := &workv1alpha2.ResourceBindingList{}
		if err := env.Host.List(ctx, list, client.InNamespace(namespace)); err != nil {
			b.Fatal(err)
		}
		n := 0
		for _, rb := range list.Items {
			if meta.IsStatusConditionTrue(rb.Status.Conditions, wellknown.ConditionFullyApplied) {
				n++
			}
		}
		if n >= templates {
			break
		}
		select {
		case <-ctx.Done():
			b.Fatalf("timed out: %d of %d bindings FullyApplied", n, templates)
		case <-time.After(5 * time.Second):
		}
	}
	took := time.Since(start)
	// Right after a burst the RSS is the heap the burst grew to: Go returns memory above its
	// heap goal only after a collection lowers the goal, and an idle process collects at
	// least every 2 minutes. So the RSS is read 30 s after the burst, and again once the
	// manager has been idle for 3 minutes, which is what it keeps while nothing happens.
	time.Sleep(30 * time.Second)
	rssBurst, peak := mgr.rss()
	time.Sleep(idleSettle - 30*time.Second)
	rss, _ := mgr.rss()
	scraped := mgr.scrape(b)
	heapLast, gogc := scraped.gauge("go_gc_heap_live_bytes"), scraped.gauge("go_gc_gogc_percent")
	// Where the RSS goes: the binary's pages, and of the rest the heap's spans in use (live
	// objects and the free room between them: the Go heap does not move objects, so a span
	// stays while any object in it lives), its free spans not yet returned, and stacks.
	rssFile := mgr.rssFile()
	spans, idleSpans := scraped.gauge("go_memstats_heap_inuse_bytes"), scraped.gauge("go_memstats_heap_idle_bytes")-scraped.gauge("go_memstats_heap_released_bytes")
	stacks := scraped.gauge("go_memstats_stack_inuse_bytes")
	heap := mgr.heapAfterGC(b)
	saveHeapProfile(b, mgr, "idle")
	limit := "no soft memory limit"
	if v := flagValue(strings.Fields(os.Getenv("FLOTILLA_BENCH_MANAGER_ARGS")), "memory-limit"); v != "" {
		limit = "--memory-limit=" + v
	}
	// GOGC as the idle manager has it: 100, or --idle-gc-percent once it has been idle a minute.
	limit += fmt.Sprintf(", GOGC %.0f", gogc)
	t.row(fmt.Sprintf("idle manager, %d templates on %d members, %s: RSS after %s idle", templates, idleMembers, limit, idleSettle),
		fmt.Sprintf("%d MiB", rss/1024), "< 300 MiB", rss/1024 < 300)
	t.row("  its RSS 30 s after the last binding became FullyApplied (its peak while they propagated)", fmt.Sprintf("%d MiB (%d MiB)", rssBurst/1024, peak/1024), "", true)
	t.row("  its heap after a GC the bench asks for (go_gc_heap_live_bytes; after its own last GC)", fmt.Sprintf("%.0f MiB (%.0f MiB)", heap/(1<<20), heapLast/(1<<20)), "", true)
	t.row("  of the RSS after idle: the binary's pages; heap spans in use; free heap spans kept; stacks", fmt.Sprintf("%d; %.0f; %.0f; %.0f MiB", rssFile/1024, spans/(1<<20), idleSpans/(1<<20), stacks/(1<<20)), "", true)
	t.row(fmt.Sprintf("  %d templates created → all bindings FullyApplied", templates), took.Round(time.Second).String(), "", true)
	b.ReportMetric(float64(rss)/1024, "MiB-idle-rss")
}

// saveHeapProfile writes the manager's heap profile (after a GC) to
// $TMPDIR/flotilla-bench-heap-NAME.pb.gz when FLOTILLA_BENCH_PPROF is set (to any value).
// Read it with `go tool pprof -top -sample_index=inuse_space FILE`.
func saveHeapProfile(b *testing.B, m *managerProcess, name string) {
	if os.Getenv("FLOTILLA_BENCH_PPROF") == "" {
		return
	}
	addr := m.pprofAddr
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap?gc=1")
	if err != nil {
		b.Logf("heap profile: %v", err)
		return
	}
	defer resp.Body.Close()
	path := filepath.Join(os.TempDir(), "flotilla-bench-heap-"+name+".pb.gz")
	f, err := os.Create(path)
	if err != nil {
		b.Logf("heap profile: %v", err)
		return
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		b.Logf("heap profile: %v", err)
		return
	}
	fmt.Printf("heap profile of the manager: %s\n", path)
}
