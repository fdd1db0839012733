package member

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/cachetrim"
	"github.com/flotilla-io/flotilla/internal/memberobject"
)

// ErrNotConnected is returned by Get for a member without a healthy connection.
var ErrNotConnected = errors.New("member cluster is not connected")

// ErrNotSynced is returned by NoWait's reads of a kind whose informer has not synced.
var ErrNotSynced = errors.New("member cache has not synced the kind")

// Secret keys of a member's credentials.
const (
	SecretKeyToken    = wellknown.SecretKeyToken
	SecretKeyCABundle = wellknown.SecretKeyCABundle
)

// Options tune connections.
type Options struct {
	// ProbeTimeout bounds one health probe.
	ProbeTimeout time.Duration
	// FailureThreshold is how many probes in a row must fail before a member is reported down.
	FailureThreshold int
	// QPS and Burst limit each member client.
	QPS   float32
	Burst int
	// ProbeInterval is how often each connected member is probed, by a goroutine of its own:
	// a member that does not answer holds only that goroutine.
	ProbeInterval time.Duration
	// Whole reports the kinds whose objects readers must see whole although the member
	// caches trim them (cachetrim.Trimmed: a customization interprets them and may read any
	// field): Cached reads those from the member apiserver. Nil: none.
	Whole func(schema.GroupVersionKind) bool
	// WrapTransport, when set, wraps the transport of every request to the member named
	// cluster (tests and benches count and shape member requests with it).
	WrapTransport func(cluster string, rt http.RoundTripper) http.RoundTripper
	// RequestTimeout bounds one request to a member, its answer read whole. The member
	// caches' lists and watches are not bounded by it: a watch lasts as long as the member
	// apiserver keeps it open (minutes), and a first list of a large kind over a slow link
	// may take longer.
	RequestTimeout time.Duration
}

// DefaultOptions are the options used when fields are zero.
var DefaultOptions = Options{ProbeTimeout: 5 * time.Second, FailureThreshold: 3, QPS: 100, Burst: 200, ProbeInterval: 5 * time.Second,
	RequestTimeout: 30 * time.Second}

// Member is a connection to one member cluster.
type Member struct {
	// Name of the Cluster.
	Name string
	// Client reads and writes the member directly (no cache).
	Client client.Client
	// Kube is a typed clientset, for discovery and the things controller-runtime's client
	// does not do (paged lists of pods, say).
	Kube kubernetes.Interface
	// Mapper maps kinds to resources in the member.
	Mapper meta.RESTMapper
	// Config is the member's REST config.
	Config *rest.Config

	cache       cache.Cache
	whole       func(schema.GroupVersionKind) bool
	ctx         context.Context
	cancel      context.CancelFunc
	fingerprint string

	mu      sync.Mutex
	watched map[schema.GroupVersionKind]bool
	// watchMu serializes starting a kind's watch (Watch) with starting it afresh (Rewatch),
	// so that no handler is added to an informer Rewatch is removing.
	watchMu sync.Mutex
	// autoscalers is the cache of the member's HorizontalPodAutoscalers, all of them (a
	// member's own HPA owns the replicas of the object it scales), made by the first
	// Autoscalers of the connection; nil until then.
	autoscalers cache.Cache
	scheme      *runtime.Scheme
	// cacheHTTP is the caches' HTTP client: the connection's transport, without the
	// request timeout (watchClient).
	cacheHTTP *http.Client
	healthy   bool
	failures  int
	probedAt  time.Time
	lastError error
}

// Cached returns the member's cache of managed objects. Call Watch first for the object's
// kind: reading a kind that is not watched starts an informer for it.
//
// The cache holds objects without managedFields and without the fields cachetrim drops (the
// pod templates of built-in workloads); for a trimmed kind that Options.Whole names, Cached
// reads the member apiserver instead.
func (m *Member) Cached() client.Reader {
	return cachedReader{cache: m.cache, live: m.Client, whole: m.whole, conn: m.ctx, name: m.Name}
}

// NoWait returns Cached's reader for the callers that must not wait on a member: the
// controllers' shared workers. Cached's reads of a kind whose informer has not synced wait
// until it has, which is brief after a (re)connect but is for ever while the member's list of
// the kind keeps failing (a custom resource whose conversion webhook is down): one such read
// per worker would hold every worker of the controller, and with them every member's work.
// NoWait's fail at once with ErrNotSynced instead; the informer's sync brings each of its
// objects back as an event.
func (m *Member) NoWait() client.Reader {
	r := m.Cached().(cachedReader)
	r.informers = m.cache
	return r
}

// Synced reports whether the member cache's watch of gvk has synced (its first list
// answered): from then on a change to any of the kind's objects is an event.
func (m *Member) Synced(ctx context.Context, gvk schema.GroupVersionKind) bool {
	obj := kindObject(gvk)
	inf, err := m.cache.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	return err == nil && inf.HasSynced()
}

// Holds reports whether the member cache holds the object of gvk with key: the watch's own
// view, whatever Cached reads the kind from.
func (m *Member) Holds(ctx context.Context, gvk schema.GroupVersionKind, key client.ObjectKey) bool {
	obj := kindObject(gvk)
	return m.cache.Get(ctx, key, obj, client.UnsafeDisableDeepCopy) == nil
}

// Watched returns a copy of the object of gvk with key as the member cache's watch holds it,
// whatever Cached reads the kind from: trimmed (see internal/cachetrim, whose OwnedFields
// it carries), and without managedFields. It reports false when the watch has not synced the
// kind or does not hold the object; it never waits.
func (m *Member) Watched(ctx context.Context, gvk schema.GroupVersionKind, key client.ObjectKey) (*unstructured.Unstructured, bool) {
	if !m.Synced(ctx, gvk) {
		return nil, false
	}
	obj := kindObject(gvk)
	if err := m.cache.Get(ctx, key, obj); err != nil {
		return nil, false
	}
	return obj, true
}

// WaitSynced waits until the member cache's watch of gvk has synced, ctx ends or the
// connection does. It follows the watch when Rewatch starts it afresh meanwhile.
func (m *Member) WaitSynced(ctx context.Context, gvk schema.GroupVersionKind) error {
	ctx, cancel := context.WithCancel(ctx)
	defer context.AfterFunc(m.ctx, cancel)()
	defer cancel()
	return wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		return m.Synced(ctx, gvk), nil
	})
}

// WhenSynced calls done, in a goroutine of its own, once the member cache's watch of gvk has
// synced (true), or once the connection ends first (false).
func (m *Member) WhenSynced(gvk schema.GroupVersionKind, done func(synced bool)) {
	go func() { done(m.WaitSynced(m.ctx, gvk) == nil) }()
}

// cachedReader reads the member cache, or the member itself for a trimmed kind whole names.
type cachedReader struct {
	cache client.Reader
	live  client.Client
	whole func(schema.GroupVersionKind) bool
	// conn ends when the connection is replaced or dropped, and with it the cache: a read
	// then fails with ErrNotConnected instead of waiting, with the caller's context, for an
	// informer that will never sync (a kind first read after the cache stopped).
	conn context.Context
	name string
	// informers, when set (NoWait), are asked whether a kind has synced before it is read.
	informers cache.Informers
}

// reader returns the reader for obj's kind: the cache, or the member apiserver (live) for a
// trimmed kind that whole names.
func (r cachedReader) reader(obj runtime.Object, list bool) (reader client.Reader, live bool) {
	if r.whole == nil {
		return r.cache, false
	}
	gvk, err := r.live.GroupVersionKindFor(obj)
	if err != nil {
		return r.cache, false
	}
	if list {
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	}
	if cachetrim.Trimmed(gvk.GroupKind()) && r.whole(gvk) {
		return r.live, true
	}
	return r.cache, false
}

func (r cachedReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	ctx, done := r.bound(ctx)
	defer done()
	reader, live := r.reader(obj, false)
	if err := r.synced(ctx, live, obj, false); err != nil {
		return err
	}
	return r.closed(reader.Get(ctx, key, obj, opts...))
}

func (r cachedReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	ctx, done := r.bound(ctx)
	defer done()
	reader, live := r.reader(list, true)
	if err := r.synced(ctx, live, list, true); err != nil {
		return err
	}
	return r.closed(reader.List(ctx, list, opts...))
}

// synced returns ErrNotSynced when r must not wait (NoWait) and the cache's informer of
// obj's kind has not synced; reads of the member apiserver itself never wait on one.
func (r cachedReader) synced(ctx context.Context, live bool, obj runtime.Object, list bool) error {
	if r.informers == nil || live {
		return nil
	}
	gvk := obj.GetObjectKind().GroupVersionKind() // an unstructured object's own
	if gvk.Empty() {
		var err error
		if gvk, err = r.live.GroupVersionKindFor(obj); err != nil {
			return err
		}
	}
	if list {
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	}
	// The informer the read would use: an unstructured object's is not the typed one.
	var inf cache.Informer
	var err error
	if _, ok := obj.(runtime.Unstructured); ok {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		inf, err = r.informers.GetInformer(ctx, u, cache.BlockUntilSynced(false))
	} else {
		inf, err = r.informers.GetInformerForKind(ctx, gvk, cache.BlockUntilSynced(false))
	}
	if err != nil {
		return r.closed(err)
	}
	if !inf.HasSynced() {
		return fmt.Errorf("%w: %s %s of %s (its first list has not answered yet, or keeps failing)", ErrNotSynced, gvk.Kind, gvk.GroupVersion(), r.name)
	}
	return nil
}

// bound returns ctx, ended also when the member's connection ends.
func (r cachedReader) bound(ctx context.Context) (context.Context, func()) {
	if r.conn == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(r.conn, cancel)
	return ctx, func() { stop(); cancel() }
}

// closed turns the error of a read cut short by the end of the connection into
// ErrNotConnected. A NotFound stays one: the stopped cache still answers from what it holds.
func (r cachedReader) closed(err error) error {
	if err != nil && !apierrors.IsNotFound(err) && r.conn != nil && r.conn.Err() != nil {
		return fmt.Errorf("%w: %s: its connection was closed (reconnected or dropped) during the read: %v", ErrNotConnected, r.name, err)
	}
	return err
}

// Healthy reports whether the last probes succeeded.
func (m *Member) Healthy() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.healthy
}

// Status is a member's connection state.
type Status struct {
	Connected bool
	Healthy   bool
	// Failures counts consecutive failed probes.
	Failures int
	// Down is true once Failures reached the failure threshold: the member should be reported
	// not ready.
	Down      bool
	LastError error
	ProbedAt  time.Time
}

// Manager holds one Member per connected Cluster. It is safe for concurrent use.
type Manager struct {
	scheme *runtime.Scheme
	opts   Options

	// connecting serializes Connect and ConnectConfig: two controllers of one replica (the
	// cluster controller and, sharded, the connector) may connect a member at once.
	connecting sync.Mutex
	mu         sync.RWMutex
	members    map[string]*Member

	// subMu guards the subscribers (events.go) and onRemove.
	subMu      sync.RWMutex
	subs       map[*subscriber]struct{}
	healthSubs map[*subscriber]struct{}
	onRemove   []func(name string)

	// newConfig builds a member's REST config; tests may replace it.
	newConfig func(c *clusterv1alpha1.Cluster, s *corev1.Secret) (*rest.Config, error)
}

// NewManager returns a Manager. Zero fields of opts take DefaultOptions.
func NewManager(scheme *runtime.Scheme, opts Options) *Manager {
	if opts.ProbeTimeout <= 0 {
		opts.ProbeTimeout = DefaultOptions.ProbeTimeout
	}
	if opts.FailureThreshold <= 0 {
		opts.FailureThreshold = DefaultOptions.FailureThreshold
	}
	if opts.QPS <= 0 {
		opts.QPS = DefaultOptions.QPS
	}
	if opts.Burst <= 0 {
		opts.Burst = DefaultOptions.Burst
	}
	if opts.ProbeInterval <= 0 {
		opts.ProbeInterval = DefaultOptions.ProbeInterval
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultOptions.RequestTimeout
	}
	return &Manager{scheme: scheme, opts: opts, members: map[string]*Member{}, newConfig: RESTConfig,
		subs: map[*subscriber]struct{}{}, healthSubs: map[*subscriber]struct{}{}}
}

// RESTConfig builds the REST config of a Push member from its Cluster and credentials Secret.
func RESTConfig(c *clusterv1alpha1.Cluster, s *corev1.Secret) (*rest.Config, error) {
	if c.Spec.APIEndpoint == "" {
		return nil, fmt.Errorf("cluster %s has no spec.apiEndpoint", c.Name)
	}
	if s == nil {
		return nil, fmt.Errorf("cluster %s has no spec.secretRef: set it to a Secret with a %q key", c.Name, SecretKeyToken)
	}
	token := string(s.Data[SecretKeyToken])
	if token == "" {
		return nil, fmt.Errorf("secret %s/%s of cluster %s has no %q key", s.Namespace, s.Name, c.Name, SecretKeyToken)
	}
	cfg := &rest.Config{
		Host:        c.Spec.APIEndpoint,
		BearerToken: token,
		UserAgent:   "flotilla",
	}
	if c.Spec.InsecureSkipTLSVerification {
		cfg.Insecure = true
	} else {
		cfg.CAData = s.Data[SecretKeyCABundle]
	}
	if c.Spec.ProxyURL != "" {
		u, err := url.Parse(c.Spec.ProxyURL)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: spec.proxyURL: %w", c.Name, err)
		}
		cfg.Proxy = http.ProxyURL(u)
	}
	return cfg, nil
}

func fingerprint(c *clusterv1alpha1.Cluster, s *corev1.Secret) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%v\x00%s\x00", c.Spec.APIEndpoint, c.Spec.InsecureSkipTLSVerification, c.Spec.ProxyURL)
	if s != nil {
		h.Write(s.Data[SecretKeyToken])
		h.Write([]byte{0})
		h.Write(s.Data[SecretKeyCABundle])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Connect makes sure the member has a connection built from the Cluster and Secret as they
// are now. It rebuilds the connection when the endpoint, TLS settings or credentials changed,
// and returns whether it did. It does not probe.
func (m *Manager) Connect(ctx context.Context, c *clusterv1alpha1.Cluster, s *corev1.Secret) (bool, error) {
	m.connecting.Lock()
	defer m.connecting.Unlock()
	fp := fingerprint(c, s)
	if m.current(c.Name, fp) {
		return false, nil
	}
	cfg, err := m.newConfig(c, s)
	if err != nil {
		return false, err
	}
	return m.connect(ctx, c.Name, cfg, fp)
}

// ConnectConfig connects to a member with a REST config of the caller's: the Pull agent's
// connection to the cluster it runs in. The config is copied; the connection is rebuilt only
// when the config's endpoint or credentials differ from the current connection's.
func (m *Manager) ConnectConfig(ctx context.Context, name string, cfg *rest.Config) (bool, error) {
	m.connecting.Lock()
	defer m.connecting.Unlock()
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%v\x00", cfg.Host, cfg.BearerToken, cfg.BearerTokenFile, cfg.Insecure)
	h.Write(cfg.CAData)
	h.Write(cfg.CertData)
	fmt.Fprintf(h, "\x00%s\x00%s", cfg.CAFile, cfg.CertFile)
	fp := hex.EncodeToString(h.Sum(nil))
	if m.current(name, fp) {
		return false, nil
	}
	return m.connect(ctx, name, rest.CopyConfig(cfg), fp)
}

// current reports whether the member's connection was built from fingerprint fp.
func (m *Manager) current(name, fp string) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	old := m.members[name]
	return old != nil && old.fingerprint == fp
}

// connect builds the member's connection from cfg, replacing (and re-watching the kinds of)
// the connection it had, and starts probing it.
func (m *Manager) connect(ctx context.Context, name string, cfg *rest.Config, fp string) (bool, error) {
	m.mu.RLock()
	old := m.members[name]
	m.mu.RUnlock()
	cfg.QPS, cfg.Burst = m.opts.QPS, m.opts.Burst
	cfg.Timeout = m.opts.RequestTimeout
	if wrap := m.opts.WrapTransport; wrap != nil {
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return wrap(name, rt) })
	}
	mem, err := m.build(ctx, name, cfg, fp)
	if err != nil {
		return false, err
	}
	var rewatch []schema.GroupVersionKind
	if old != nil {
		old.mu.Lock()
		for gvk := range old.watched {
			rewatch = append(rewatch, gvk)
		}
		old.mu.Unlock()
	}
	m.mu.Lock()
	m.members[name] = mem
	m.mu.Unlock()
	if old != nil {
		old.cancel()
		logf.FromContext(ctx).Info("Reconnected member cluster: endpoint or credentials changed", "Cluster", name)
	}
	go m.probeLoop(logf.IntoContext(mem.ctx, logf.FromContext(ctx)), mem)
	for _, gvk := range rewatch {
		if err := m.Watch(ctx, name, gvk); err != nil {
			logf.FromContext(ctx).Error(err, "Cannot re-watch kind after reconnect", "Cluster", name, "kind", gvk)
		}
	}
	return true, nil
}

func (m *Manager) build(ctx context.Context, name string, cfg *rest.Config, fp string) (*Member, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", name, err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", name, err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: m.scheme, Mapper: mapper, HTTPClient: httpClient})
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", name, err)
	}
	kube, err := kubernetes.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", name, err)
	}
	managed := labels.SelectorFromSet(labels.Set{wellknown.ManagedLabel: wellknown.ManagedLabelValue})
	cacheHTTP := watchClient(httpClient)
	ca, err := cache.New(cfg, cache.Options{
		Scheme:                      m.scheme,
		Mapper:                      mapper,
		HTTPClient:                  cacheHTTP,
		DefaultLabelSelector:        managed,
		DefaultTransform:            cachetrim.MemberObject,
		ReaderFailOnMissingInformer: true,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", name, err)
	}
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		if err := ca.Start(cctx); err != nil {
			logf.FromContext(ctx).Error(err, "Member cache stopped", "Cluster", name)
		}
	}()
	return &Member{
		Name: name, Client: cl, Kube: kube, Mapper: mapper, Config: cfg, scheme: m.scheme, cacheHTTP: cacheHTTP,
		cache: ca, whole: m.opts.Whole, ctx: cctx, cancel: cancel, fingerprint: fp, watched: map[schema.GroupVersionKind]bool{},
	}, nil
}

// watchClient returns c without its overall timeout, over the same transport (and so the
// same connections to the member): an http.Client's Timeout ends a request whose answer is
// still being read, and a watch is an answer read for minutes. With the request timeout, every
// watch of the member caches was cut after 30 s and started again, and a first list streamed
// for longer than that (a large kind over a slow link) never completed. A connection that
// dies under a watch is still found: client-go's transport pings an idle HTTP/2 connection.
func watchClient(c *http.Client) *http.Client {
	return &http.Client{Transport: c.Transport, CheckRedirect: c.CheckRedirect, Jar: c.Jar}
}

// Disconnect drops the member's connection, stopping its cache.
func (m *Manager) Disconnect(name string) {
	m.mu.Lock()
	mem := m.members[name]
	delete(m.members, name)
	m.mu.Unlock()
	if mem != nil {
		mem.cancel()
		clusterDown(name)
	}
}

// OnRemove registers f to be called with a member's name by Remove: state kept per member
// outside the Manager (the member queues' workers) goes with the Cluster.
func (m *Manager) OnRemove(f func(name string)) {
	m.subMu.Lock()
	defer m.subMu.Unlock()
	m.onRemove = append(m.onRemove, f)
}

// Remove disconnects a member whose Cluster is gone, or whose Works are all gone and whose
// Cluster is about to be, and calls the functions given to OnRemove. A member joined again
// under the same name starts afresh.
func (m *Manager) Remove(name string) {
	m.Disconnect(name)
	m.subMu.RLock()
	fs := m.onRemove
	m.subMu.RUnlock()
	for _, f := range fs {
		f(name)
	}
}

// Get returns the member's connection when it is healthy, or an error wrapping
// ErrNotConnected.
func (m *Manager) Get(name string) (*Member, error) {
	m.mu.RLock()
	mem := m.members[name]
	m.mu.RUnlock()
	if mem == nil {
		return nil, fmt.Errorf("%w: %s has no connection yet", ErrNotConnected, name)
	}
	mem.mu.Lock()
	defer mem.mu.Unlock()
	if !mem.healthy {
		if mem.lastError != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrNotConnected, name, mem.lastError)
		}
		return nil, fmt.Errorf("%w: %s has not answered a probe yet", ErrNotConnected, name)
	}
	return mem, nil
}

// Status returns the member's connection state.
func (m *Manager) Status(name string) Status {
	m.mu.RLock()
	mem := m.members[name]
	m.mu.RUnlock()
	if mem == nil {
		return Status{}
	}
	mem.mu.Lock()
	defer mem.mu.Unlock()
	return Status{Connected: true, Healthy: mem.healthy, Failures: mem.failures,
		Down: mem.failures >= m.opts.FailureThreshold, LastError: mem.lastError, ProbedAt: mem.probedAt}
}

// probeLoop probes mem at once and then every ProbeInterval until its connection is dropped
// or replaced.
func (m *Manager) probeLoop(ctx context.Context, mem *Member) {
	t := time.NewTicker(m.opts.ProbeInterval)
	defer t.Stop()
	for {
		m.probe(ctx, mem)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Probe checks the member's /readyz once and records the result, as the member's probe
// goroutine does every ProbeInterval. A member goes unhealthy for Get at once (so writes
// stop), but Status reports it Down only after FailureThreshold failures in a row.
// Health subscribers are told when health or Down flips.
func (m *Manager) Probe(ctx context.Context, name string) Status {
	m.mu.RLock()
	mem := m.members[name]
	m.mu.RUnlock()
	if mem == nil {
		return Status{}
	}
	m.probe(ctx, mem)
	return m.Status(name)
}

func (m *Manager) probe(ctx context.Context, mem *Member) {
	name := mem.Name
	start := time.Now()
	pctx, cancel := context.WithTimeout(ctx, m.opts.ProbeTimeout)
	defer cancel()
	_, err := mem.Kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(pctx)
	observeProbe(name, time.Since(start), err)

	if mem.ctx.Err() != nil {
		return // the connection was dropped or replaced while probing
	}
	mem.mu.Lock()
	was, wasDown := mem.healthy, mem.failures >= m.opts.FailureThreshold
	mem.probedAt = time.Now()
	if err != nil {
		mem.failures++
		mem.healthy = false
		mem.lastError = err
	} else {
		mem.failures = 0
		mem.healthy = true
		mem.lastError = nil
	}
	now, nowDown := mem.healthy, mem.failures >= m.opts.FailureThreshold
	mem.mu.Unlock()

	if now {
		clusterUp(name)
	} else {
		clusterDown(name)
	}
	if was != now {
		if now {
			logf.FromContext(ctx).Info("Member cluster connected", "Cluster", name)
		} else {
			logf.FromContext(ctx).Info("Member cluster probe failed", "Cluster", name, "error", err)
		}
		m.notify(clusterKey(name), clusterEvent(name))
	} else if wasDown != nowDown {
		m.notifyHealth(clusterKey(name), clusterEvent(name))
	}
}

// connected returns member name's connection, healthy or not.
func (m *Manager) connected(name string) (*Member, error) {
	m.mu.RLock()
	mem := m.members[name]
	m.mu.RUnlock()
	if mem == nil {
		return nil, fmt.Errorf("%w: %s", ErrNotConnected, name)
	}
	return mem, nil
}

// Watch makes the member's cache watch managed objects of one kind and route their events to
// the subscribers (Source). It is idempotent.
func (m *Manager) Watch(ctx context.Context, name string, gvk schema.GroupVersionKind) error {
	mem, err := m.connected(name)
	if err != nil {
		return err
	}
	mem.mu.Lock()
	done := mem.watched[gvk]
	mem.mu.Unlock()
	if done {
		return nil
	}
	mem.watchMu.Lock()
	defer mem.watchMu.Unlock()
	return m.watchLocked(ctx, mem, gvk)
}

// watchLocked is Watch, under mem.watchMu.
func (m *Manager) watchLocked(ctx context.Context, mem *Member, gvk schema.GroupVersionKind) error {
	name := mem.Name
	mem.mu.Lock()
	done := mem.watched[gvk]
	mem.mu.Unlock()
	if done {
		return nil
	}
	obj := kindObject(gvk)
	inf, err := mem.cache.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("cluster %s: watch %s: %w", name, gvk, err)
	}
	send := func(o any) {
		if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		if co, ok := o.(client.Object); ok {
			m.notify(eventKey{cluster: name, gvk: gvk, namespace: co.GetNamespace(), name: co.GetName()}, co)
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    send,
		UpdateFunc: func(_, n any) { send(n) },
		DeleteFunc: send,
	}); err != nil {
		return fmt.Errorf("cluster %s: watch %s: %w", name, gvk, err)
	}
	mem.mu.Lock()
	mem.watched[gvk] = true
	mem.mu.Unlock()
	return nil
}

// Rewatch starts member name's watch of gvk afresh when it has not synced: its lists were
// refused so far (the credential lacked the kind's group until it was just granted it), and
// the informer tries again only after a backoff that grows to a minute, while a change to the
// kind's objects, their deletion above all, goes unseen. A synced watch is left as it is.
func (m *Manager) Rewatch(ctx context.Context, name string, gvk schema.GroupVersionKind) error {
	mem, err := m.connected(name)
	if err != nil {
		return err
	}
	mem.watchMu.Lock()
	defer mem.watchMu.Unlock()
	if mem.Synced(ctx, gvk) {
		return nil
	}
	obj := kindObject(gvk)
	mem.mu.Lock()
	delete(mem.watched, gvk)
	mem.mu.Unlock()
	if err := mem.cache.RemoveInformer(ctx, obj); err != nil {
		return fmt.Errorf("cluster %s: watch %s again: %w", name, gvk, err)
	}
	return m.watchLocked(ctx, mem, gvk)
}

// AutoscalerGVK is the kind Autoscalers reads: autoscaling/v2, served by every supported
// Kubernetes version (1.23 and later).
var AutoscalerGVK = schema.GroupVersionKind{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"}

// kindObject is an empty object of gvk, the cache's key to that kind's informer.
func kindObject(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	return obj
}

func autoscalerObject() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(AutoscalerGVK)
	return u
}

// Autoscalers returns the HorizontalPodAutoscalers of namespace ns in member name, every one
// (not only managed ones), from the member's cache. The first call for a connection starts
// the cache's watch of them, and from then on each HPA's creation, change and removal is
// also delivered to the subscribers as an event of the object it scales (when that object is
// a managed one the cache holds), so that its Work is reconciled again: an HPA deleted in the
// member hands the object's replicas back to the template. Members that never need it (no
// object whose replicas differ from its template's) never watch their HPAs.
func (m *Manager) Autoscalers(ctx context.Context, name, ns string) ([]unstructured.Unstructured, error) {
	mem, err := m.connected(name)
	if err != nil {
		return nil, err
	}
	hpas, err := m.watchAutoscalers(ctx, mem)
	if err != nil {
		return nil, err
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(AutoscalerGVK.GroupVersion().WithKind(AutoscalerGVK.Kind + "List"))
	r := cachedReader{cache: hpas, conn: mem.ctx, name: mem.Name}
	if err := r.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("cluster %s: list HorizontalPodAutoscalers in %s: %w", name, ns, err)
	}
	return list.Items, nil
}

// watchAutoscalers makes, once per connection, the cache Autoscalers reads (a cache of its
// own: the member cache holds managed objects only, and a per-kind selector there would make
// building a connection read the member's discovery), and the handler that turns each HPA's
// events into events of the object it scales.
func (m *Manager) watchAutoscalers(ctx context.Context, mem *Member) (cache.Cache, error) {
	mem.mu.Lock()
	defer mem.mu.Unlock()
	if mem.autoscalers != nil {
		return mem.autoscalers, nil
	}
	ca, err := cache.New(mem.Config, cache.Options{Scheme: mem.scheme, Mapper: mem.Mapper, HTTPClient: mem.cacheHTTP,
		DefaultTransform: cachetrim.MemberObject, ReaderFailOnMissingInformer: true})
	if err != nil {
		return nil, fmt.Errorf("cluster %s: watch HorizontalPodAutoscalers: %w", mem.Name, err)
	}
	inf, err := ca.GetInformer(ctx, autoscalerObject(), cache.BlockUntilSynced(false))
	if err != nil {
		return nil, fmt.Errorf("cluster %s: watch HorizontalPodAutoscalers: %w", mem.Name, err)
	}
	send := func(o any) {
		if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		hpa, ok := o.(*unstructured.Unstructured)
		if !ok {
			return
		}
		if target := m.scaled(mem, hpa); target != nil {
			m.notify(eventKey{cluster: mem.Name, gvk: target.GroupVersionKind(), namespace: target.GetNamespace(), name: target.GetName()}, target)
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    send,
		UpdateFunc: func(_, n any) { send(n) },
		DeleteFunc: send,
	}); err != nil {
		return nil, fmt.Errorf("cluster %s: watch HorizontalPodAutoscalers: %w", mem.Name, err)
	}
	go func() {
		if err := ca.Start(mem.ctx); err != nil {
			logf.FromContext(ctx).Error(err, "Member HorizontalPodAutoscaler cache stopped", "Cluster", mem.Name)
		}
	}()
	mem.autoscalers = ca
	return ca, nil
}

// scaled returns the managed object hpa scales, from the member's cache, or nil: the target
// is not a watched kind, not managed, not synced yet, or gone. It never waits.
func (m *Manager) scaled(mem *Member, hpa *unstructured.Unstructured) *unstructured.Unstructured {
	gk, name, ok := memberobject.ScaleTarget(hpa)
	if !ok {
		return nil
	}
	mem.mu.Lock()
	var gvk schema.GroupVersionKind
	for w := range mem.watched {
		if w.GroupKind() == gk {
			gvk = w
		}
	}
	mem.mu.Unlock()
	if gvk.Empty() {
		return nil
	}
	target := &unstructured.Unstructured{}
	target.SetGroupVersionKind(gvk)
	if err := mem.NoWait().Get(mem.ctx, client.ObjectKey{Namespace: hpa.GetNamespace(), Name: name}, target); err != nil {
		return nil
	}
	return target
}

// Discovery returns a discovery client of the member.
func (mem *Member) Discovery() discovery.DiscoveryInterface { return mem.Kube.Discovery() }

// Names returns the names of the connected members.
func (m *Manager) Names() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Collect(maps.Keys(m.members))
}
