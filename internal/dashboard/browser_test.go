package dashboard_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/dashboard"
	"github.com/flotilla-io/flotilla/internal/localcluster"
)

// waitBound bounds each wait for the page to show something.
const waitBound = 30 * time.Second

// requireBrowserEnv makes a missing chromium a failure instead of a skip (CI sets it).
const requireBrowserEnv = "FLOTILLA_REQUIRE_BROWSER"

// chromium finds the browser: /usr/bin/chromium, else chromium on $PATH.
func chromium(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/chromium", "chromium", "chromium-browser"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	msg := "chromium not found (/usr/bin/chromium or on $PATH): install it with `apt-get install -y chromium`"
	if os.Getenv(requireBrowserEnv) != "" {
		t.Fatalf("%s; %s is set, so the browser test may not be skipped", msg, requireBrowserEnv)
	}
	t.Skipf("%s, or set %s=1 to make its absence a failure", msg, requireBrowserEnv)
	return ""
}

// TestDashboardInBrowser starts a host apiserver with the CRDs, creates two Clusters and a
// binding, loads the page in headless chromium, checks the DOM, then changes a Cluster's and
// the binding's status and checks that the page follows without a reload.
func TestDashboardInBrowser(t *testing.T) {
	browser := chromium(t)
	if testing.Short() {
		t.Skip("starts an apiserver and a browser")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	start := time.Now()
	hostLog := &logBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("host log:\n%s", hostLog.String())
		}
	})
	host, err := localcluster.Start(ctx, localcluster.Options{Name: "dashboard-host", Log: hostLog})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := host.Stop(); err != nil {
			t.Errorf("stop the host: %v", err)
		}
	})
	crds := filepath.Join("..", "..", "config", "crd", "bases")
	if _, err := host.InstallCRDs(ctx, crds); err != nil {
		t.Fatal(err)
	}
	t.Logf("host with CRDs in %s", time.Since(start).Round(time.Millisecond))
	cl, err := client.New(host.RESTConfig(), client.Options{Scheme: flotillascheme.New()})
	if err != nil {
		t.Fatal(err)
	}

	for _, name := range []string{"member1", "member2"} {
		c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1alpha1.ClusterSpec{
			SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://127.0.0.1:1", Provider: "kwok", Region: "r-" + name}}
		if name == "member1" {
			c.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}}
		}
		must(t, cl.Create(ctx, c))
		setClusterReady(ctx, t, cl, name, metav1.ConditionTrue, wellknown.ClusterReasonReady)
	}
	must(t, cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}))
	rb := &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-deployment"},
		Spec: workv1alpha2.ResourceBindingSpec{
			Resource: workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"},
			Clusters: []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 2}, {Name: "member2", Replicas: 1}},
		}}
	must(t, cl.Create(ctx, rb))
	rb.Status.ClustersReady = "1/2"
	rb.Status.Conditions = []metav1.Condition{
		{Type: wellknown.ConditionScheduled, Status: metav1.ConditionTrue, Reason: wellknown.ReasonBindingScheduled, LastTransitionTime: metav1.Now()},
		{Type: wellknown.ConditionFullyApplied, Status: metav1.ConditionFalse, Reason: wellknown.ReasonNotFullyApplied, LastTransitionTime: metav1.Now()},
	}
	rb.Status.AggregatedStatus = []workv1alpha2.AggregatedStatusItem{
		{ClusterName: "member1", Applied: true, Health: workv1alpha1.ResourceHealthy, Status: &runtime.RawExtension{Raw: []byte(`{"replicas":2,"readyReplicas":2}`)}},
		{ClusterName: "member2", Applied: false, AppliedMessage: "exceeded quota"},
	}
	must(t, cl.Status().Update(ctx, rb))

	// The dashboard, as `kubectl flotilla dashboard` runs it.
	sctx, stopServer := context.WithCancel(ctx)
	s, err := dashboard.New(sctx, host.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	urls := make(chan string, 1)
	served := make(chan error, 1)
	go func() { served <- s.Serve(sctx, 0, func(u string) { urls <- u }) }()
	var url string
	select {
	case url = <-urls:
	case err := <-served:
		t.Fatalf("serve: %v", err)
	}
	t.Cleanup(func() {
		stopServer()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	t.Logf("dashboard at %s", url)

	// The browser: a fresh profile, killed (and waited for) by the allocator's cancel.
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(browser), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1400, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer cancelBrowser()
	defer func() {
		if t.Failed() {
			screenshot(t, bctx)
		}
	}()

	// The first load: the server-rendered tables, then the live stream.
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return v
	}
	wait := func(what string, sels ...string) {
		t.Helper()
		for _, sel := range sels {
			// A bound, not an assertion on time: a failure leaves the browser alive for the screenshot.
			wctx, cancel := context.WithTimeout(bctx, waitBound)
			err := chromedp.Do(wctx, chromedp.WaitVisible(chromedp.CSS(sel)))
			cancel()
			if err != nil {
				t.Fatalf("wait for %s (%s): %v", what, sel, err)
			}
		}
	}
	start = time.Now()
	if err := chromedp.Do(bctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("load %s: %v", url, err)
	}
	wait("the page and its stream", `#clusters tr[data-cluster="member2"]`, `#live.connected`)
	// A mark that a reload would wipe.
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`window.flotillaMark = "no reload"; true`)); err != nil {
		t.Fatal(err)
	}
	t.Logf("page loaded and stream connected in %s", time.Since(start).Round(time.Millisecond))
	clusters, templates := text(`#clusters tbody`), text(`#templates tbody`)
	t.Logf("clusters:\n%s\ntemplates:\n%s", clusters, templates)
	for _, want := range []string{"member1", "member2", "kwok/r-member1"} {
		if !strings.Contains(clusters, want) {
			t.Errorf("clusters table lacks %q", want)
		}
	}
	if r, taints := text(`#clusters tr[data-cluster="member1"] td.ready`), text(`#clusters tr[data-cluster="member1"] td.taints`); r != "True" || taints != "dedicated=batch:NoSchedule" {
		t.Errorf("member1: ready %q, taints %q", r, taints)
	}
	if !strings.Contains(templates, "Deployment shop/web") || !strings.Contains(templates, "1/2") ||
		!strings.Contains(templates, "member1: 2 · applied True · Healthy · ready 2/2") {
		t.Errorf("templates table:\n%s", templates)
	}
	member2 := `#templates tr[data-template="Deployment/shop/web"] .placement[data-cluster="member2"]`
	if p := text(member2); p != "member2: 1 · applied False · Unknown · ready -" {
		t.Errorf("member2's placement: %q", p)
	}

	// member2 becomes unreachable: its row turns False without a reload.
	changed := time.Now()
	setClusterReady(ctx, t, cl, "member2", metav1.ConditionFalse, "ClusterNotReachable")
	wait("member2 to show False", `#clusters tr[data-cluster="member2"] td.ready.False`)
	t.Logf("Cluster status change shown %s after the update", time.Since(changed).Round(time.Millisecond))
	if r := text(`#clusters tr[data-cluster="member2"] td.ready`); r != "False (ClusterNotReachable)" {
		t.Errorf("member2 ready cell: %q", r)
	}

	// The binding becomes fully applied on both: the template's row follows.
	changed = time.Now()
	must(t, cl.Get(ctx, client.ObjectKeyFromObject(rb), rb))
	rb.Status.ClustersReady = "2/2"
	meta.SetStatusCondition(&rb.Status.Conditions, metav1.Condition{Type: wellknown.ConditionFullyApplied, Status: metav1.ConditionTrue,
		Reason: wellknown.ReasonFullyApplied})
	rb.Status.AggregatedStatus[1] = workv1alpha2.AggregatedStatusItem{ClusterName: "member2", Applied: true, Health: workv1alpha1.ResourceHealthy,
		Status: &runtime.RawExtension{Raw: []byte(`{"replicas":1,"readyReplicas":1}`)}}
	must(t, cl.Status().Update(ctx, rb))
	wait("the binding to show FullyApplied", `#templates tr[data-template="Deployment/shop/web"] td.fully-applied.True`)
	t.Logf("binding status change shown %s after the update", time.Since(changed).Round(time.Millisecond))
	if r, p := text(`#templates tr[data-template="Deployment/shop/web"] td.clusters-ready`), text(member2); r != "2/2" ||
		p != "member2: 1 · applied True · Healthy · ready 1/1" {
		t.Errorf("after the update: ready clusters %q, member2 %q", r, p)
	}
	mark, err := chromedp.Run(bctx, chromedp.Evaluate[string](`window.flotillaMark || "reloaded"`))
	if err != nil || mark != "no reload" {
		t.Errorf("the page was reloaded (mark %q, %v): updates must come over the event stream", mark, err)
	}

	// A deleted Cluster leaves the table.
	must(t, cl.Delete(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}}))
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool](`document.querySelectorAll('#clusters tr[data-cluster="member1"]').length === 0`)); err != nil {
		t.Fatalf("wait for member1 to leave: %v", err)
	}
	if n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll('#clusters tbody tr').length`)); err != nil || n != 1 {
		t.Errorf("%d cluster rows after deleting member1 (%v), want 1", n, err)
	}

	// Only GET and HEAD, only the printed address.
	if code := status(t, "POST", url, ""); code != 405 {
		t.Errorf("POST: %d, want 405", code)
	}
	if code := status(t, "GET", url, "evil.example:80"); code != 403 {
		t.Errorf("another Host header: %d, want 403", code)
	}
}

func setClusterReady(ctx context.Context, t *testing.T, cl client.Client, name string, st metav1.ConditionStatus, reason string) {
	t.Helper()
	c := &clusterv1alpha1.Cluster{}
	must(t, cl.Get(ctx, client.ObjectKey{Name: name}, c))
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: wellknown.ClusterConditionReady, Status: st, Reason: reason,
		Message: "set by the test"})
	must(t, cl.Status().Update(ctx, c))
}

// screenshot keeps the page as it is, in a directory that outlives the test.
func screenshot(t *testing.T, ctx context.Context) {
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(sctx, chromedp.FullScreenshot(100)) // 100: PNG
	if err != nil {
		t.Logf("no screenshot: %v", err)
		return
	}
	dir, err := os.MkdirTemp("", "flotilla-dashboard-")
	if err != nil {
		t.Logf("no screenshot: %v", err)
		return
	}
	path := filepath.Join(dir, "dashboard.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Logf("no screenshot: %v", err)
		return
	}
	t.Logf("screenshot of the failing page: %s", path)
}

func status(t *testing.T, method, url, hostHeader string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if hostHeader != "" {
		req.Host = hostHeader
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// logBuffer keeps the host's start and stop lines, printed only when the test fails.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
