package hostmetrics

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		method, path, watch string
		verb, resource      string
	}{
		{"GET", "/api/v1/namespaces/ns/pods/p", "", "get", "pods"},
		{"GET", "/api/v1/namespaces/ns/pods", "", "list", "pods"},
		{"GET", "/api/v1/pods", "true", "watch", "pods"},
		{"POST", "/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-m1/works", "", "create", "works.work.karmada.io"},
		{"PATCH", "/apis/work.karmada.io/v1alpha2/namespaces/ns/resourcebindings/rb/status", "", "patch", "resourcebindings.work.karmada.io/status"},
		{"PUT", "/api/v1/namespaces/ns", "", "update", "namespaces"},
		{"PATCH", "/apis/apps/v1/namespaces/ns/deployments/web/status", "", "patch", "deployments.apps/status"},
		{"DELETE", "/apis/work.karmada.io/v1alpha1/namespaces/x/works/w", "", "delete", "works.work.karmada.io"},
		{"DELETE", "/apis/work.karmada.io/v1alpha1/namespaces/x/works", "", "deletecollection", "works.work.karmada.io"},
		{"GET", "/apis/cluster.karmada.io/v1alpha1/clusters/m1", "", "get", "clusters.cluster.karmada.io"},
		{"GET", "/apis/apps/v1", "", "get", "discovery"},
		{"GET", "/healthz", "", "get", "nonresource"},
	} {
		verb, resource := Classify(c.method, c.path, c.watch)
		if verb != c.verb || resource != c.resource {
			t.Errorf("%s %s: got %s %s, want %s %s", c.method, c.path, verb, resource, c.verb, c.resource)
		}
	}
}

func TestControllerFrom(t *testing.T) {
	ctx := context.Background()
	if got := ControllerFrom(ctx); got != "-" {
		t.Errorf("empty context: %q", got)
	}
	// As controller-runtime builds a reconcile's logger: the manager's logger with the
	// controller's name, then the request's values.
	log := Logger(funcr.New(func(string, string) {}, funcr.Options{})).WithName("x").
		WithValues("controller", "scheduler").WithValues("namespace", "ns", "name", "n")
	if got := ControllerFrom(logr.NewContext(ctx, log)); got != "scheduler" {
		t.Errorf("reconcile logger: %q", got)
	}
	if got := ControllerFrom(logr.NewContext(ctx, funcr.New(func(string, string) {}, funcr.Options{}).WithValues("controller", "x"))); got != "-" {
		t.Errorf("a logger not wrapped: %q", got)
	}
	if got := ControllerFrom(WithController(logr.NewContext(ctx, log), "execution/member")); got != "execution/member" {
		t.Errorf("WithController: %q", got)
	}
}

func TestLoggerStillLogs(t *testing.T) {
	var out bytes.Buffer
	log := Logger(funcr.New(func(prefix, args string) { out.WriteString(prefix + " " + args + "\n") }, funcr.Options{}))
	log.WithName("a").WithValues("controller", "c").Info("hello", "k", "v")
	if !bytes.Contains(out.Bytes(), []byte(`"msg"="hello"`)) || !bytes.Contains(out.Bytes(), []byte(`"controller"="c"`)) {
		t.Errorf("logged %q", out.String())
	}
}

func TestTransportCounts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	defer srv.Close()
	type key struct{ controller, verb, resource string }
	got := map[key]int{}
	c := &http.Client{Transport: WrappedTransport(http.DefaultTransport, func(controller, verb, resource string) {
		got[key{controller, verb, resource}]++
	})}
	log := Logger(funcr.New(func(string, string) {}, funcr.Options{})).WithValues("controller", "detector")
	req, _ := http.NewRequestWithContext(logr.NewContext(context.Background(), log), http.MethodPost,
		srv.URL+"/apis/work.karmada.io/v1alpha2/namespaces/ns/resourcebindings", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	body := []byte(`{"kind":"Event","reportingController":"binding-controller"}`)
	req, _ = http.NewRequest(http.MethodPost, srv.URL+"/apis/events.k8s.io/v1/namespaces/ns/events", bytes.NewReader(body))
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := map[key]int{
		{"detector", "create", "resourcebindings.work.karmada.io"}:      1,
		{"events:binding-controller", "create", "events.events.k8s.io"}: 1,
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%v: got %d, want %d (all: %v)", k, got[k], n, got)
		}
	}
}

// countingSink counts the WithValues calls it gets.
type countingSink struct {
	logr.LogSink
	withValues *int
}

func (s countingSink) WithValues(kv ...any) logr.LogSink {
	*s.withValues++
	return countingSink{s.LogSink.WithValues(kv...), s.withValues}
}

func (s countingSink) WithName(name string) logr.LogSink {
	return countingSink{s.LogSink.WithName(name), s.withValues}
}

// A reconcile's logger gets its values at every reconcile; they are handed to the wrapped
// sink (which encodes them) only when something is logged, and each logger logs its own.
func TestLoggerValuesOnlyWhenLogging(t *testing.T) {
	var out bytes.Buffer
	calls := 0
	base := funcr.New(func(prefix, args string) { out.WriteString(prefix + " " + args + "\n") }, funcr.Options{})
	log := Logger(logr.New(countingSink{base.GetSink(), &calls})).WithName("a").WithValues("controller", "c")
	r1 := log.WithValues("name", "one")
	r2 := log.WithValues("name", "two").WithName("b")
	if calls != 0 {
		t.Errorf("the wrapped sink got %d WithValues before anything was logged", calls)
	}
	r1.Info("first")
	r2.Info("second", "k", "v")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 ||
		!strings.Contains(lines[0], `"controller"="c" "name"="one"`) || strings.Contains(lines[0], "two") ||
		!strings.Contains(lines[1], `a/b`) || !strings.Contains(lines[1], `"controller"="c" "name"="two" "k"="v"`) {
		t.Errorf("logged:\n%s", out.String())
	}
	if got := ControllerFrom(logr.NewContext(context.Background(), r2)); got != "c" {
		t.Errorf("ControllerFrom: %q", got)
	}
}
