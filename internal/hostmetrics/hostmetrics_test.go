package hostmetrics

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
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
