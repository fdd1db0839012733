package dashboard_test

import (
	"bytes"
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

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
	"github.com/flotilla-io/flotilla/internal/dashboard/browsertest"
	"github.com/flotilla-io/flotilla/internal/localcluster"
)

// TestDashboardInBrowser starts a host apiserver with the CRDs, creates two Clusters and a
// binding, loads the page in headless chromium, checks the DOM, then changes a Cluster's and
// the binding's status and checks that the page follows without a reload.
func TestDashboardInBrowser(t *testing.T) {
	browsertest.Chromium(t)
	if testing.Short() {
		t.Skip("starts an apiserver and a browser")
	}
	// Cancelled by the last cleanup, so that the screenshot of a failure can still be taken.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)

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

	b := browsertest.Start(t, ctx)

	// The first load: the server-rendered tables, then the live stream.
	start = time.Now()
	b.Navigate(url)
	b.WaitVisible("the page and its stream", `#clusters tr[data-cluster="member2"]`, `#live.connected`)
	// A mark that a reload would wipe.
	browsertest.Eval[bool](b, `window.flotillaMark = "no reload"; true`)
	t.Logf("page loaded and stream connected in %s", time.Since(start).Round(time.Millisecond))
	clusters, templates := b.Text(`#clusters tbody`), b.Text(`#templates tbody`)
	t.Logf("clusters:\n%s\ntemplates:\n%s", clusters, templates)
	for _, want := range []string{"member1", "member2", "kwok/r-member1"} {
		if !strings.Contains(clusters, want) {
			t.Errorf("clusters table lacks %q", want)
		}
	}
	if r, taints := b.Text(`#clusters tr[data-cluster="member1"] td.ready`), b.Text(`#clusters tr[data-cluster="member1"] td.taints`); r != "True" || taints != "dedicated=batch:NoSchedule" {
		t.Errorf("member1: ready %q, taints %q", r, taints)
	}
	if !strings.Contains(templates, "Deployment shop/web") || !strings.Contains(templates, "1/2") ||
		!strings.Contains(templates, "member1: 2 · applied True · Healthy · ready 2/2") {
		t.Errorf("templates table:\n%s", templates)
	}
	member2 := `#templates tr[data-template="Deployment/shop/web"] .placement[data-cluster="member2"]`
	if p := b.Text(member2); p != "member2: 1 · applied False · Unknown · ready -" {
		t.Errorf("member2's placement: %q", p)
	}

	// member2 becomes unreachable: its row turns False without a reload.
	changed := time.Now()
	setClusterReady(ctx, t, cl, "member2", metav1.ConditionFalse, "ClusterNotReachable")
	b.WaitVisible("member2 to show False", `#clusters tr[data-cluster="member2"] td.ready.False`)
	t.Logf("Cluster status change shown %s after the update", time.Since(changed).Round(time.Millisecond))
	if r := b.Text(`#clusters tr[data-cluster="member2"] td.ready`); r != "False (ClusterNotReachable)" {
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
	b.WaitVisible("the binding to show FullyApplied", `#templates tr[data-template="Deployment/shop/web"] td.fully-applied.True`)
	t.Logf("binding status change shown %s after the update", time.Since(changed).Round(time.Millisecond))
	if r, p := b.Text(`#templates tr[data-template="Deployment/shop/web"] td.clusters-ready`), b.Text(member2); r != "2/2" ||
		p != "member2: 1 · applied True · Healthy · ready 1/1" {
		t.Errorf("after the update: ready clusters %q, member2 %q", r, p)
	}
	if mark := browsertest.Eval[string](b, `window.flotillaMark || "reloaded"`); mark != "no reload" {
		t.Errorf("the page was reloaded (mark %q): updates must come over the event stream", mark)
	}

	// A deleted Cluster leaves the table.
	must(t, cl.Delete(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}}))
	b.Until("member1 to leave", `document.querySelectorAll('#clusters tr[data-cluster="member1"]').length === 0`)
	if n := browsertest.Eval[int](b, `document.querySelectorAll('#clusters tbody tr').length`); n != 1 {
		t.Errorf("%d cluster rows after deleting member1, want 1", n)
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
