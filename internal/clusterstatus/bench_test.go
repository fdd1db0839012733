package clusterstatus

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// generated is a member of n Nodes and m Pods whose pages are built on demand, the way a
// client decodes them, so that nothing but Summarize's own state outlives a page. Every
// tenth Pod waits for a Node; the rest are spread over the Nodes.
type generated struct {
	nodes, pods int
	// sample, if set, is called after every page.
	sample func()
}

func (g *generated) listers() Listers {
	offset := func(opts metav1.ListOptions) int {
		n, _ := strconv.Atoi(opts.Continue)
		return n
	}
	next := func(end, total int) string {
		if end >= total {
			return ""
		}
		return strconv.Itoa(end)
	}
	return Listers{
		Nodes: func(_ context.Context, opts metav1.ListOptions) (*corev1.NodeList, error) {
			start := offset(opts)
			end := min(start+int(opts.Limit), g.nodes)
			l := &corev1.NodeList{Items: make([]corev1.Node, 0, end-start)}
			for i := start; i < end; i++ {
				l.Items = append(l.Items, node("node-"+strconv.Itoa(i), true, list("cpu", "32", "memory", "128Gi", "pods", "110", "ephemeral-storage", "100Gi")))
			}
			l.Continue = next(end, g.nodes)
			if g.sample != nil {
				g.sample()
			}
			return l, nil
		},
		Pods: func(_ context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
			start := offset(opts)
			end := min(start+int(opts.Limit), g.pods)
			l := &corev1.PodList{Items: make([]corev1.Pod, 0, end-start)}
			for i := start; i < end; i++ {
				nodeName, phase := "node-"+strconv.Itoa(i%g.nodes), corev1.PodRunning
				if i%10 == 0 {
					nodeName, phase = "", corev1.PodPending
				}
				p := pod("pod-"+strconv.Itoa(i), nodeName, phase, list("cpu", "250m", "memory", "256Mi"), list("cpu", "50m", "memory", "64Mi"))
				p.Namespace = "ns-" + strconv.Itoa(i%100)
				p.Labels = map[string]string{"app": "app-" + strconv.Itoa(i%500), "pod-template-hash": "5d8f7c9b6"}
				l.Items = append(l.Items, p)
			}
			l.Continue = next(end, g.pods)
			if g.sample != nil {
				g.sample()
			}
			return l, nil
		},
	}
}

// prebuilt serves the pages of g built once, so that a benchmark measures Summarize alone.
func (g *generated) prebuilt() Listers {
	l := g.listers()
	nodes := map[string]*corev1.NodeList{}
	pods := map[string]*corev1.PodList{}
	for opts := (metav1.ListOptions{Limit: PageSize}); ; {
		page, _ := l.Nodes(context.Background(), opts)
		nodes[opts.Continue] = page
		if opts.Continue = page.Continue; opts.Continue == "" {
			break
		}
	}
	for opts := (metav1.ListOptions{Limit: PageSize}); ; {
		page, _ := l.Pods(context.Background(), opts)
		pods[opts.Continue] = page
		if opts.Continue = page.Continue; opts.Continue == "" {
			break
		}
	}
	return Listers{
		Nodes: func(_ context.Context, opts metav1.ListOptions) (*corev1.NodeList, error) {
			return nodes[opts.Continue], nil
		},
		Pods: func(_ context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
			return pods[opts.Continue], nil
		},
	}
}

// BenchmarkSummarize measures one status collection over a big member without the
// apiserver: effective requests, quantity sums and grading over pages that are already
// decoded. The "scale" spec of controllers/cluster measures it against a real apiserver.
//
//	go test ./internal/clusterstatus -run '^$' -bench Summarize -benchmem
func BenchmarkSummarize(b *testing.B) {
	for _, size := range []struct{ nodes, pods int }{{500, 5000}, {5000, 50000}} {
		for _, withModels := range []bool{false, true} {
			var m = models()
			if !withModels {
				m = nil
			}
			b.Run(fmt.Sprintf("nodes=%d/pods=%d/models=%v", size.nodes, size.pods, withModels), func(b *testing.B) {
				l := (&generated{nodes: size.nodes, pods: size.pods}).prebuilt()
				b.ReportAllocs()
				for b.Loop() {
					if _, _, err := Summarize(context.Background(), l, m); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(size.pods), "ns/pod")
			})
		}
	}
}

// TestSummarizeMemoryIsFlat checks the point of paging: the heap that is live during a
// collection does not grow with the number of Pods. It samples the live heap (after a GC)
// at every page and compares a member of 10,000 Pods with one of 100,000.
func TestSummarizeMemoryIsFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("forces many garbage collections")
	}
	peak := func(pods int) uint64 {
		var peak uint64
		var ms runtime.MemStats
		g := &generated{nodes: 1000, pods: pods}
		g.sample = func() {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
		runtime.GC()
		runtime.ReadMemStats(&ms)
		base := ms.HeapAlloc
		if _, _, err := Summarize(context.Background(), g.listers(), models()); err != nil {
			t.Fatal(err)
		}
		return peak - min(base, peak)
	}
	small, big := peak(10_000), peak(100_000)
	t.Logf("live heap during a collection (1,000 nodes, models on): 10,000 pods %d KiB, 100,000 pods %d KiB", small>>10, big>>10)
	// One page of 500 Pods is about 1 MiB; allow two pages of slack.
	if big > small+2<<20 {
		t.Errorf("live heap grows with the number of pods: %d KiB for 10x the pods of %d KiB", big>>10, small>>10)
	}
}
