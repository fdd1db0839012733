package dashboard

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	rolloutsv1alpha1 "github.com/flotilla-io/flotilla/api/rollouts/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

//go:embed page.html
var pageHTML string

var templates = template.Must(template.New("dashboard").Parse(pageHTML))

// syncTimeout bounds the informers' first list.
const syncTimeout = 30 * time.Second

// keepAlive is how often an idle event stream gets a comment, so that proxies and browsers
// keep it open.
const keepAlive = 30 * time.Second

// Server serves the page and its event stream from informers on the host's Clusters,
// ResourceBindings and ClusterResourceBindings.
type Server struct {
	host  string
	cache cache.Cache
	// origins are the Host headers accepted (127.0.0.1:PORT and localhost:PORT), against
	// DNS rebinding; empty accepts any (tests that serve through httptest).
	origins []string
	now     func() time.Time
	// rolloutsOff says why rollouts are not shown; "" when they are.
	rolloutsOff string

	mu   sync.Mutex
	subs map[chan struct{}]struct{}
}

// New checks that the kubeconfig's user can list the three kinds in the host, then starts
// informers on them and waits for their first list. They run until ctx ends.
func New(ctx context.Context, cfg *rest.Config) (*Server, error) {
	scheme := flotillascheme.New()
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	kinds := []struct {
		name string
		obj  client.Object
		list client.ObjectList
	}{
		{"clusters.cluster.karmada.io", &clusterv1alpha1.Cluster{}, &clusterv1alpha1.ClusterList{}},
		{"resourcebindings.work.karmada.io", &workv1alpha2.ResourceBinding{}, &workv1alpha2.ResourceBindingList{}},
		{"clusterresourcebindings.work.karmada.io", &workv1alpha2.ClusterResourceBinding{}, &workv1alpha2.ClusterResourceBindingList{}},
	}
	for _, k := range kinds {
		if err := cl.List(ctx, k.list, client.Limit(1)); err != nil {
			return nil, fmt.Errorf("list %s in the host at %s (the dashboard reads clusters and bindings with your kubeconfig): %w", k.name, cfg.Host, err)
		}
	}
	c, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	s := &Server{host: cfg.Host, cache: c, now: time.Now, subs: map[chan struct{}]struct{}{}}
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.notify() },
		UpdateFunc: func(any, any) { s.notify() },
		DeleteFunc: func(any) { s.notify() },
	}
	for _, k := range kinds {
		inf, err := c.GetInformer(ctx, k.obj)
		if err != nil {
			return nil, err
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, err
		}
	}
	// Rollouts are shown when the host serves them and the user may list them; the page says
	// why not otherwise (an install older than progressive rollouts, or no right to read them).
	if err := cl.List(ctx, &rolloutsv1alpha1.RolloutList{}, client.Limit(1)); err != nil {
		s.rolloutsOff = fmt.Sprintf("rollouts are not shown: list rollouts.rollouts.flotilla.io: %v", err)
	} else {
		inf, err := c.GetInformer(ctx, &rolloutsv1alpha1.Rollout{})
		if err != nil {
			return nil, err
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, err
		}
	}
	go func() { _ = c.Start(ctx) }()
	sctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	if !c.WaitForCacheSync(sctx) {
		return nil, fmt.Errorf("the watches of clusters and bindings in the host at %s did not sync within %s", cfg.Host, syncTimeout)
	}
	return s, nil
}

// notify wakes every event stream; a stream already woken is not woken twice.
func (s *Server) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (s *Server) subscribe() (chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	s.subs[ch] = struct{}{}
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		delete(s.subs, ch)
		s.mu.Unlock()
	}
}

// View reads the view from the informers' caches.
func (s *Server) View(ctx context.Context) (View, error) {
	clusters := &clusterv1alpha1.ClusterList{}
	rbs := &workv1alpha2.ResourceBindingList{}
	crbs := &workv1alpha2.ClusterResourceBindingList{}
	for _, l := range []client.ObjectList{clusters, rbs, crbs} {
		if err := s.cache.List(ctx, l); err != nil {
			return View{}, err
		}
	}
	v := BuildView(clusters.Items, rbs.Items, crbs.Items, s.now())
	if v.RolloutsOff = s.rolloutsOff; v.RolloutsOff == "" {
		rollouts := &rolloutsv1alpha1.RolloutList{}
		if err := s.cache.List(ctx, rollouts); err != nil {
			return View{}, err
		}
		v.Rollouts = RolloutRows(rollouts.Items)
	}
	return v, nil
}

// RenderFleet writes the page's body: the clusters and templates tables.
func RenderFleet(w io.Writer, v View) error { return templates.ExecuteTemplate(w, "fleet", v) }

// RenderPage writes the whole page.
func RenderPage(w io.Writer, host string, v View) error {
	return templates.ExecuteTemplate(w, "page", struct {
		Host string
		View View
	}{host, v})
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if len(s.origins) > 0 && !containsString(s.origins, r.Host) {
		http.Error(w, "forbidden host "+strconv.Quote(r.Host)+": open the address the dashboard printed", http.StatusForbidden)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "read-only", http.StatusMethodNotAllowed)
		return
	}
	switch r.URL.Path {
	case "/":
		v, err := s.View(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		var buf bytes.Buffer
		if err := RenderPage(&buf, s.host, v); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'")
		_, _ = w.Write(buf.Bytes())
	case "/events":
		s.events(w, r)
	default:
		http.NotFound(w, r)
	}
}

// events streams the page body as Server-Sent Events ("fleet"), once on connect and again
// whenever a Cluster or binding changes.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	ch, unsubscribe := s.subscribe()
	defer unsubscribe()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	ping := time.NewTicker(keepAlive)
	defer ping.Stop()
	send := func() bool {
		v, err := s.View(r.Context())
		if err != nil {
			return false
		}
		var buf bytes.Buffer
		if err := RenderFleet(&buf, v); err != nil {
			return false
		}
		if _, err := io.WriteString(w, SSE("fleet", buf.String())); err != nil {
			return false
		}
		flusher.Flush()
		return true
	}
	if !send() {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-ch:
			if !send() {
				return
			}
		case <-ping.C:
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
				return
			}
			flusher.Flush()
		}
	}
}

// SSE frames data as one Server-Sent Event: each line of data becomes a data: line.
func SSE(event, data string) string {
	var b strings.Builder
	b.WriteString("event: " + event + "\n")
	for _, l := range strings.Split(strings.ReplaceAll(data, "\r\n", "\n"), "\n") {
		b.WriteString("data: " + strings.TrimSuffix(l, "\r") + "\n")
	}
	b.WriteString("\n")
	return b.String()
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Serve listens on 127.0.0.1:port (0: a port the OS chooses), calls ready with the page's
// URL, and serves until ctx ends.
func (s *Server) Serve(ctx context.Context, port int, ready func(url string)) error {
	if port < 0 || port > 65535 {
		return fmt.Errorf("invalid port %d: use 0 (any free port) to 65535", port)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	p := ln.Addr().(*net.TCPAddr).Port
	s.origins = []string{fmt.Sprintf("127.0.0.1:%d", p), fmt.Sprintf("localhost:%d", p)}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	ready(fmt.Sprintf("http://127.0.0.1:%d/", p))
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
