package cluster_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clusterstatus"
	"github.com/flotilla-io/flotilla/internal/join"
	"github.com/flotilla-io/flotilla/internal/localcluster"
)

// scaleEnv turns on the scale measurement, which fills a member with thousands of objects
// (a few minutes on two cores):
//
//	FLOTILLA_SCALE=1 go test ./controllers/cluster/ -ginkgo.label-filter=scale -ginkgo.v
const scaleEnv = "FLOTILLA_SCALE"

const (
	scaleNodes       = 5000
	scalePodsPerNode = 4
	scaleWorkers     = 32
)

var _ = Describe("Status collection on a big member", Label("scale"), func() {
	BeforeEach(func() {
		if os.Getenv(scaleEnv) == "" {
			Skip("set " + scaleEnv + "=1 to measure status collection on a member with thousands of Nodes and Pods")
		}
	})

	It("lists Nodes and Pods page by page, in bounded memory", func(ctx SpecContext) {
		m, err := localcluster.Start(ctx, localcluster.Options{Name: "scale", Log: GinkgoWriter})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(m.Stop)
		cfg := m.RESTConfig()
		cfg.QPS, cfg.Burst = 5000, 10000
		cs, err := kubernetes.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())

		began := time.Now()
		fill(ctx, cs, scaleNodes, scalePodsPerNode)
		AddReportEntry("fill", fmt.Sprintf("%d Nodes and %d Pods created in %s", scaleNodes, scaleNodes*scalePodsPerNode, time.Since(began).Round(time.Second)))

		// Paged, as the controller does: measure time, allocations and the live heap at every page.
		var peak uint64
		sample := func() {
			var ms runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
		listers := clusterstatus.Listers{
			Nodes: func(ctx context.Context, o metav1.ListOptions) (*corev1.NodeList, error) {
				defer sample()
				return cs.CoreV1().Nodes().List(ctx, o)
			},
			Pods: func(ctx context.Context, o metav1.ListOptions) (*corev1.PodList, error) {
				defer sample()
				return cs.CoreV1().Pods("").List(ctx, o)
			},
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		began = time.Now()
		nodes, res, err := clusterstatus.Summarize(ctx, clusterstatus.Listers{
			Nodes: cs.CoreV1().Nodes().List, Pods: cs.CoreV1().Pods("").List,
		}, nil)
		took := time.Since(began)
		runtime.ReadMemStats(&after)
		Expect(err).NotTo(HaveOccurred())
		Expect(nodes.TotalNum).To(BeEquivalentTo(scaleNodes))
		Expect(res.Allocated).To(HaveKeyWithValue(corev1.ResourcePods, resource.MustParse(strconv.Itoa(scaleNodes*scalePodsPerNode))))
		AddReportEntry("paged collection", fmt.Sprintf("%s, %d MiB allocated in %d allocations",
			took.Round(time.Millisecond), (after.TotalAlloc-before.TotalAlloc)>>20, after.Mallocs-before.Mallocs))

		runtime.GC()
		runtime.ReadMemStats(&before)
		peak = before.HeapAlloc
		_, _, err = clusterstatus.Summarize(ctx, listers, nil)
		Expect(err).NotTo(HaveOccurred())
		pagedPeak := peak - before.HeapAlloc

		// Unpaged, for comparison: one LIST of every Pod, held while it is summed.
		runtime.GC()
		runtime.ReadMemStats(&before)
		all, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		runtime.GC()
		runtime.ReadMemStats(&after)
		unpaged := after.HeapAlloc - before.HeapAlloc
		Expect(all.Items).To(HaveLen(scaleNodes * scalePodsPerNode))
		AddReportEntry("live heap", fmt.Sprintf("paged walk peaks %d MiB above the baseline; one unpaged LIST of the Pods holds %d MiB",
			pagedPeak>>20, unpaged>>20))
		Expect(pagedPeak).To(BeNumerically("<", unpaged/4), "paging keeps memory flat")
		runtime.KeepAlive(all)

		// End to end: join the member and wait for the controller's first summary.
		began = time.Now()
		_, err = join.Join(ctx, join.Options{Name: m.Name, Host: fleet.Host.RESTConfig(), Member: m.RESTConfig()})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			c := getCluster(ctx, g, m.Name)
			g.Expect(c.Status.NodeSummary).To(Equal(&clusterv1alpha1.NodeSummary{TotalNum: scaleNodes, ReadyNum: scaleNodes}))
		}).Within(time.Minute).Should(Succeed())
		AddReportEntry("join → first summary in the Cluster status", time.Since(began).Round(time.Millisecond).String())
		_, err = join.Unjoin(ctx, join.UnjoinOptions{Name: m.Name, Host: fleet.Host.RESTConfig(), Member: m.RESTConfig()})
		Expect(err).NotTo(HaveOccurred())
	}, NodeTimeout(20*time.Minute))
})

// fill creates nodes Ready Nodes and podsPerNode bound Pods on each, with scaleWorkers
// clients at once.
func fill(ctx context.Context, cs kubernetes.Interface, nodes, podsPerNode int) {
	createNamespace(ctx, cs, "workloads")
	allocatable := resources("cpu", "32", "memory", "128Gi", "pods", "110")
	run := func(n int, create func(i int) error) {
		work := make(chan int)
		var wg sync.WaitGroup
		for range scaleWorkers {
			wg.Go(func() {
				defer GinkgoRecover()
				for i := range work {
					Expect(create(i)).To(Succeed())
				}
			})
		}
		for i := range n {
			work <- i
		}
		close(work)
		wg.Wait()
	}
	run(nodes, func(i int) error {
		// A kubelet registers its Node with its status; so can we.
		_, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "node-" + strconv.Itoa(i)},
			Status: corev1.NodeStatus{Capacity: allocatable, Allocatable: allocatable,
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
		}, metav1.CreateOptions{})
		return err
	})
	run(nodes*podsPerNode, func(i int) error {
		_, err := cs.CoreV1().Pods("workloads").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "pod-" + strconv.Itoa(i), Labels: map[string]string{"app": "app-" + strconv.Itoa(i%100)}},
			Spec: corev1.PodSpec{
				NodeName:                     "node-" + strconv.Itoa(i%nodes),
				AutomountServiceAccountToken: ptr.To(false),
				Containers: []corev1.Container{
					{Name: "app", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{Requests: resources("cpu", "250m", "memory", "256Mi")}},
					{Name: "sidecar", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{Requests: resources("cpu", "50m", "memory", "64Mi")}},
				},
			},
		}, metav1.CreateOptions{})
		return err
	})
}
