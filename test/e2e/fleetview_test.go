package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-io/flotilla/internal/dashboard"
	"github.com/flotilla-io/flotilla/internal/dashboard/browsertest"
	"github.com/flotilla-io/flotilla/internal/fleetview"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// viewsApp is a Deployment duplicated to member1 and member2 (member3 has none).
const viewsApp = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: views
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: docker.io/library/nginx:1.27
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: web
  namespace: views
spec:
  resourceSelectors:
  - apiVersion: apps/v1
    kind: Deployment
    name: web
  placement:
    clusterAffinity:
      clusterNames: [member1, member2]
`

// fields joins each line's whitespace-separated fields with one space, so that checks do not
// depend on column widths.
func fields(out string) []string {
	var ls []string
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		ls = append(ls, strings.Join(strings.Fields(l), " "))
	}
	return ls
}

// The plugin's workload views (what `kubectl flotilla describe|events|logs deploy/web` print)
// on the local fleet: real Deployments, ReplicaSets, pods on kwok nodes and their events.
var _ = Describe("kubectl flotilla describe, events and logs on the local fleet", Ordered, func() {
	var host *fleetview.Host

	BeforeAll(func(ctx context.Context) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "views"}}
		Expect(env.Host.Create(ctx, ns)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(env.Host.Delete(ctx, ns)).To(Succeed()) })
		optIn(ctx, "views")
		path := filepath.Join(GinkgoT().TempDir(), "web.yaml")
		Expect(os.WriteFile(path, []byte(viewsApp), 0o644)).To(Succeed())
		Expect(framework.Apply(ctx, env.Host, path)).To(Succeed())
		Eventually(func(g Gomega) {
			got := env.DeploymentReplicas(ctx, "views", "web")
			g.Expect(got).To(HaveKeyWithValue("member1", framework.Replicas{Spec: 2, Ready: 2}))
			g.Expect(got).To(HaveKeyWithValue("member2", framework.Replicas{Spec: 2, Ready: 2}))
		}).WithContext(ctx).Should(Succeed(), func() string {
			return env.MemberReport(ctx, "member1", "views") + env.MemberReport(ctx, "member2", "views")
		})
		var err error
		host, err = fleetview.NewHost(env.Fleet.Host.RESTConfig())
		Expect(err).NotTo(HaveOccurred())
	})

	It("describes web in each member: replicas, two Running pods on kwok nodes, the ReplicaSet's and pods' events", func(ctx context.Context) {
		Eventually(func(g Gomega) {
			res, err := host.Workload(ctx, fleetview.WorkloadRequest{Kind: "deploy", Name: "web", Namespace: "views", Events: true})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Check()).To(Succeed())
			var out bytes.Buffer
			g.Expect(fleetview.PrintWorkloadDescription(&out, res, time.Now())).To(Succeed())
			ls := fields(out.String())
			g.Expect(ls[0]).To(Equal("Deployment views/web: in 2 of 3 member clusters"))
			g.Expect(ls).To(ContainElements("Cluster: member1", "Cluster: member2", "Cluster: member3", "(no Deployment web here)",
				"Replicas: 2 desired | 2 updated | 2 ready | 2 available", "Pods (2):"))
			pod := regexp.MustCompile(`^web-[a-z0-9]+-[a-z0-9]+ 1/1 Running 0 member[12]-node-[0-9]+ `)
			n := 0
			for _, l := range ls {
				if pod.MatchString(l) {
					n++
				}
			}
			g.Expect(n).To(Equal(4), "Running pods in:\n%s", out.String())
			g.Expect(out.String()).To(ContainSubstring("ScalingReplicaSet   deployment/web"))
			g.Expect(out.String()).To(MatchRegexp(`Scheduled +pod/web-`))
			GinkgoWriter.Printf("describe deploy/web:\n%s", out.String())
		}).WithContext(ctx).Should(Succeed())
	})

	It("lists the events of web, its ReplicaSets and pods from both members in one table", func(ctx context.Context) {
		res, err := host.Workload(ctx, fleetview.WorkloadRequest{Kind: "deployments.apps", Name: "web", Namespace: "views", Events: true})
		Expect(err).NotTo(HaveOccurred())
		var out bytes.Buffer
		Expect(fleetview.PrintEvents(&out, res, "", time.Now())).To(Succeed())
		GinkgoWriter.Printf("events deploy/web:\n%s", out.String())
		ls := fields(out.String())
		Expect(ls[0]).To(Equal("CLUSTER LAST SEEN TYPE REASON OBJECT MESSAGE"))
		for _, l := range ls[1:] {
			Expect(strings.Fields(l)[0]).To(BeElementOf("member1", "member2"), l)
		}
		for _, m := range []string{"member1", "member2"} {
			Expect(out.String()).To(MatchRegexp(m + ` +\S+ +Normal +ScalingReplicaSet +deployment/web `))
			Expect(out.String()).To(MatchRegexp(m + ` +\S+ +Normal +SuccessfulCreate +replicaset/web-`))
			Expect(out.String()).To(MatchRegexp(m + ` +\S+ +Normal +Scheduled +pod/web-`))
		}
	})

	It("draws web's tree from template to each cluster's Work (kubectl flotilla status deploy/web)", func(ctx context.Context) {
		Eventually(func(g Gomega) {
			tree, err := host.Status(ctx, fleetview.StatusRequest{Kind: "deploy", Namespace: "views", Name: "web"})
			g.Expect(err).NotTo(HaveOccurred())
			var out bytes.Buffer
			g.Expect(fleetview.PrintStatus(&out, tree, "")).To(Succeed())
			ls := fields(out.String())
			g.Expect(ls).To(Equal([]string{
				"Deployment views/web",
				"└── PropagationPolicy views/web",
				"└── ResourceBinding views/web-deployment Scheduled=True FullyApplied=True READY 2/2",
				"├── member1 Applied=True Healthy ready 2/2",
				"└── member2 Applied=True Healthy ready 2/2",
			}), out.String())
			GinkgoWriter.Printf("status deploy/web:\n%s", out.String())
		}).WithContext(ctx).Should(Succeed())
	})

	It("lists web side by side in the members that run it (kubectl flotilla get deploy --clusters ...)", func(ctx context.Context) {
		res, err := host.Get(ctx, fleetview.GetRequest{Resource: "deploy", Namespace: "views", Clusters: []string{"member1", "member2", "member3"}})
		Expect(err).NotTo(HaveOccurred())
		var out bytes.Buffer
		Expect(fleetview.PrintGet(&out, res, "")).To(Succeed())
		GinkgoWriter.Printf("get deploy --clusters member1,member2,member3:\n%s", out.String())
		ls := fields(out.String())
		Expect(ls).To(HaveLen(3), out.String())
		Expect(ls[0]).To(Equal("CLUSTER NAME READY UP-TO-DATE AVAILABLE AGE"))
		Expect(ls[1]).To(MatchRegexp(`^member1 web 2/2 2 2 \S+$`))
		Expect(ls[2]).To(MatchRegexp(`^member2 web 2/2 2 2 \S+$`))
		Expect(res.Failed()).To(BeZero())
	})

	It("shows the fleet in the dashboard, in a headless browser: three Ready members and web placed on two", func(ctx context.Context) {
		browsertest.Chromium(GinkgoT())
		// Its own context, cancelled after the browser's cleanup (which may take a screenshot).
		dctx, cancel := context.WithCancel(context.Background())
		DeferCleanup(cancel)
		s, err := dashboard.New(dctx, env.Fleet.Host.RESTConfig())
		Expect(err).NotTo(HaveOccurred())
		urls, served := make(chan string, 1), make(chan error, 1)
		go func() { served <- s.Serve(dctx, 0, func(u string) { urls <- u }) }()
		var url string
		Eventually(urls).Should(Receive(&url))
		DeferCleanup(func() { cancel(); Expect(<-served).To(Succeed()) })
		b := browsertest.Start(GinkgoT(), dctx)
		b.Navigate(url)
		row := `#templates tr[data-template="Deployment/views/web"]`
		b.WaitVisible("the fleet and web", `#clusters tr[data-cluster="member3"]`, row+` td.fully-applied.True`, `#live.connected`)
		for _, m := range []string{"member1", "member2", "member3"} {
			Expect(b.Text(`#clusters tr[data-cluster="`+m+`"] td.ready`)).To(Equal("True"), m)
			Expect(b.Text(`#clusters tr[data-cluster="`+m+`"]`)).To(MatchRegexp(`v1\.\d+\.\d+`), m)
		}
		Expect(b.Text(row + ` td.clusters-ready`)).To(Equal("2/2"))
		for _, m := range []string{"member1", "member2"} {
			Expect(b.Text(row+` .placement[data-cluster="`+m+`"]`)).To(Equal(m+": 2 · applied True · Healthy · ready 2/2"), "Duplicated: each member runs all 2")
		}
		GinkgoWriter.Printf("dashboard clusters:\n%s\ntemplates:\n%s\n", b.Text("#clusters tbody"), b.Text("#templates tbody"))
	})

	It("reads no container log from kwok's nodes, says so per container, and fails", func(ctx context.Context) {
		res, err := host.Workload(ctx, fleetview.WorkloadRequest{Kind: "deploy", Name: "web", Namespace: "views",
			Logs: &fleetview.LogOptions{TailLines: 10}})
		Expect(err).NotTo(HaveOccurred())
		var out, errOut bytes.Buffer
		Expect(fleetview.PrintLogs(&out, &errOut, res)).To(Succeed())
		GinkgoWriter.Printf("logs deploy/web, stderr:\n%s", errOut.String())
		Expect(out.String()).To(BeEmpty())
		Expect(fields(errOut.String())).To(HaveLen(4))
		Expect(errOut.String()).To(MatchRegexp(`error: \[member1/web-[a-z0-9-]+/web\] `))
		Expect(res.Check()).To(MatchError("none of the 4 containers' logs could be read"))
	})
})
