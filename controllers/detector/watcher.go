package detector

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/bindings"
	"github.com/flotilla-io/flotilla/internal/handoff"
)

// watcher keeps the detector's metadata-only watches of templates, bounded so that the
// manager's memory grows with templates and not with everything else the host stores.
//
// Namespaced kinds. Every object of a template kind in an opted-in namespace (labelled
// flotilla.io/propagation=enabled, not a system namespace) is a template, whether or not a
// policy selects it yet (it then gets the ApplyPolicyFailed warning "No policy match for
// resource"), so every namespaced template kind that discovery finds is watched once some
// namespace is opted in. Each has one cluster-wide watch whose list and events are filtered to a set of opted-in namespaces
// before they reach the informer: objects of other namespaces are decoded and dropped, never
// cached, and the initial list is read in pages, so even it holds no more than a page of them.
// The filter is fixed for the life of an informer: when the opted-in set changes (debounced
// by rescopeDelay; the first opt-in starts the watches at once), a new informer for the new
// set replaces the old one once it has synced.
// Its initial list is the re-read of newly opted-in namespaces; its add events enqueue their
// objects, while objects the old informer held unchanged are not enqueued again. A namespace
// that opts out has the objects the watches hold enqueued first, so they are released.
//
// Cluster-scoped kinds. Only ClusterPropagationPolicies select them, and they get no warning,
// so a cluster-scoped kind is watched (cluster-wide, unfiltered) only once it is wanted: some
// policy names it in a resourceSelector, or some object of it carries a claim label. A kind
// stays wanted until it leaves discovery.
//
// Claims. Once per discovered kind, a label-selected LIST (the server filters; the answer
// holds claimed templates only) finds the objects that carry a claim label, anywhere, and
// enqueues them: so a policy deleted, or a namespace opted out, while the manager was down
// still releases its templates.
//
// Reads. The detector reads template metadata through get: from the kind's informer when it
// holds the template's namespace, once it has synced (an unsynced cache would report existing
// templates as deleted, and a deleted template deletes its member objects); otherwise straight
// from the host, one GET. It never reads templates through the manager's cache, whose
// informers are cluster-wide and unfiltered (see templateClient).
//
// Discovery runs at start, when a CRD changes, and every interval; kinds that leave it (their
// CRD was deleted, and with it their objects) stop being watched.
//
// Costs. Memory: the metadata of the objects in opted-in namespaces (of every template kind)
// and of the cluster-scoped kinds policies name, plus one informer per watched kind. CPU and
// network: the host sends every change of a namespaced template kind, which is decoded and,
// outside opted-in namespaces, dropped; opting a namespace in or out lists every namespaced
// template kind once more, in pages. One watch per kind and opted-in namespace would avoid
// both, but costs an informer (some 50 KiB) per pair: thousands with a hundred namespaces.
type watcher struct {
	cache cache.Cache // the manager's: CRDs, Namespaces and policies
	disco discovery.DiscoveryInterface
	meta  metadata.Interface
	dyn   dynamic.Interface
	live  client.Reader
	// seen holds the whole templates the feeds saw last (see feeds.go).
	seen     *handoff.Templates
	interval time.Duration
	trigger  chan struct{}
	rescope  chan struct{}

	queueOnce  sync.Once
	queueReady chan struct{}
	queue      workqueue.TypedRateLimitingInterface[Key]

	mu  sync.RWMutex
	ctx context.Context // the watcher's run; informers stop with it
	// discovered are the template kinds the host serves.
	discovered map[schema.GroupVersionKind]kindInfo
	// scanned are the discovered kinds whose claimed objects were looked for.
	scanned map[schema.GroupVersionKind]bool
	// wanted are the watched cluster-scoped kinds.
	wanted map[schema.GroupVersionKind]bool
	// optedIn are the namespaces whose templates may propagate.
	optedIn map[string]bool
	// informers are the watches, one per watched kind.
	informers map[schema.GroupVersionKind]*informer
	// pending are namespaced kinds' replacement informers for a new set of opted-in
	// namespaces, until they have synced.
	pending map[schema.GroupVersionKind]*informer
	// named are the namespaced kinds some policy's resourceSelectors name: their templates
	// are fed whole (feeds.go).
	named map[schema.GroupVersionKind]bool
	// feeds are the running feeds, by kind and namespace.
	feeds map[feedKey]context.CancelFunc

	// started is closed once the first discovery has started the watches (or the watcher
	// stopped before): until then a read of a template the watches will hold waits for them
	// rather than asking the host (see get).
	started     chan struct{}
	startedOnce sync.Once

	// initialMu guards held: the templates of initial lists delivered before the cache's
	// bindings synced (bindingsSynced), which enqueueInitial cannot sort yet.
	initialMu      sync.Mutex
	bindingsSynced bool
	held           []heldTemplate
	// unsorted: the bindings could not be waited for; every template is queued at the
	// default priority.
	unsorted bool
}

// heldTemplate is a template of an initial list waiting for the cache's bindings.
type heldTemplate struct {
	key Key
	uid types.UID
}

// rescopeDelay lets a burst of namespace opt-ins and opt-outs settle before the watches of
// namespaced kinds are replaced. The first opt-in starts them at once.
const rescopeDelay = 250 * time.Millisecond

// kindInfo is what discovery says of a template kind.
type kindInfo struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}

func newWatcher(c cache.Cache, d discovery.DiscoveryInterface, m metadata.Interface, dyn dynamic.Interface, live client.Reader, interval time.Duration) *watcher {
	return &watcher{cache: c, disco: d, meta: m, dyn: dyn, live: live, interval: interval,
		seen: handoff.NewLatest(feedSize, feedTTL), named: map[schema.GroupVersionKind]bool{}, feeds: map[feedKey]context.CancelFunc{},
		trigger: make(chan struct{}, 1), rescope: make(chan struct{}, 1), queueReady: make(chan struct{}),
		discovered: map[schema.GroupVersionKind]kindInfo{}, scanned: map[schema.GroupVersionKind]bool{},
		wanted: map[schema.GroupVersionKind]bool{}, optedIn: map[string]bool{},
		informers: map[schema.GroupVersionKind]*informer{}, pending: map[schema.GroupVersionKind]*informer{},
		started: make(chan struct{})}
}

// watchesStarted closes started, once: the first discovery has started the watches.
func (w *watcher) watchesStarted() { w.startedOnce.Do(func() { close(w.started) }) }

// source is the detector controller's source of template events: the controller hands the
// watcher its queue, and the watches add to it.
func (w *watcher) source() source.TypedSource[Key] {
	return source.TypedFunc[Key](func(_ context.Context, q workqueue.TypedRateLimitingInterface[Key]) error {
		w.queueOnce.Do(func() {
			w.queue = q
			close(w.queueReady)
		})
		return nil
	})
}

func (w *watcher) enqueue(keys ...Key) {
	for _, k := range keys {
		w.queue.Add(k)
	}
}

// enqueueLow adds keys at controller-runtime's low priority: the templates a watch's initial
// list holds (at start, all of them, which are checked again and are usually bound already).
// A template created or changed meanwhile is added at the default priority and goes first
// (the manager's queues are priority queues, controller-runtime's default since v0.23).
func (w *watcher) enqueueLow(keys ...Key) {
	pq, ok := w.queue.(priorityqueue.PriorityQueue[Key])
	if !ok {
		w.enqueue(keys...)
		return
	}
	pq.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(handler.LowPriority)}, keys...)
}

// enqueueInitial queues a template of a watch's initial list: at low priority when the cache
// holds its binding, made for this very template (by UID), since its check most likely finds
// nothing to do; at the default priority otherwise, a template created while the manager was
// down or while it starts, which waits for its binding. After a restart with thousands of
// templates, a new one so goes ahead of the checks of all the others.
//
// The watches start while the cache's bindings are still being listed (both lists take
// seconds with tens of thousands of them): a template delivered before the bindings synced
// is held, and queued once they have (bindingsSynced).
func (w *watcher) enqueueInitial(k Key, uid types.UID) {
	w.initialMu.Lock()
	if !w.bindingsSynced {
		w.held = append(w.held, heldTemplate{k, uid})
		w.initialMu.Unlock()
		return
	}
	w.initialMu.Unlock()
	w.sortInitial(k, uid)
}

// bindingsHaveSynced says that the cache's bindings have synced (synced false: they cannot,
// so nothing is sorted), and queues the templates held until then.
func (w *watcher) bindingsHaveSynced(synced bool) {
	w.initialMu.Lock()
	w.bindingsSynced, w.unsorted = true, !synced
	held := w.held
	w.held = nil
	w.initialMu.Unlock()
	for _, t := range held {
		w.sortInitial(t.key, t.uid)
	}
}

// sortInitial queues a template of an initial list by whether the cache holds its binding.
func (w *watcher) sortInitial(k Key, uid types.UID) {
	if !w.unsorted && w.bound(k, uid) {
		w.enqueueLow(k)
		return
	}
	w.enqueue(k)
}

// bound reports whether the manager's cache holds the binding of the template k whose UID is
// uid. The cache's bindings have synced.
func (w *watcher) bound(k Key, uid types.UID) bool {
	key := types.NamespacedName{Namespace: k.Namespace, Name: BindingName(k.GVK.Kind, k.Name)}
	var rb client.Object = &workv1alpha2.ResourceBinding{}
	if k.Namespace == "" {
		rb = &workv1alpha2.ClusterResourceBinding{}
	}
	// Read only, so not copied.
	if err := w.cache.Get(context.Background(), key, rb, client.UnsafeDisableDeepCopy); err != nil {
		return false
	}
	return bindings.Spec(rb).Resource.UID == uid
}

// NeedLeaderElection: only the leader's controller runs, so only it needs the watches.
func (w *watcher) NeedLeaderElection() bool { return true }

// Start follows namespaces and runs discovery until ctx ends, then stops the watches.
func (w *watcher) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("detector-discovery")
	ctx = ctrl.LoggerInto(ctx, log)
	// The watches feed the controller's queue, which it hands over when it starts.
	select {
	case <-ctx.Done():
		return nil
	case <-w.queueReady:
	}
	w.mu.Lock()
	w.ctx = ctx
	w.mu.Unlock()
	defer w.stopAll()
	defer w.watchesStarted()

	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	inf, err := w.cache.GetInformer(ctx, crd)
	if err != nil {
		return err
	}
	poke := func(any) { w.poke() }
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: poke, UpdateFunc: func(_, _ any) { w.poke() }, DeleteFunc: poke,
	}); err != nil {
		return err
	}
	nsInf, err := w.cache.GetInformer(ctx, &corev1.Namespace{})
	if err != nil {
		return err
	}
	nsReg, err := nsInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { w.namespaceChanged(ctx, o, false) },
		UpdateFunc: func(_, o any) { w.namespaceChanged(ctx, o, false) },
		DeleteFunc: func(o any) { w.namespaceChanged(ctx, o, true) },
	})
	if err != nil {
		return err
	}
	// The first watches hold every namespace opted in at start: wait until the handler has
	// seen them all.
	if !toolscache.WaitForCacheSync(ctx.Done(), nsReg.HasSynced) {
		return nil
	}
	// Their initial lists are queued by whether the bindings are there (enqueueInitial),
	// once the cache's bindings have synced; the watches start meanwhile.
	go func() {
		for _, obj := range []client.Object{&workv1alpha2.ResourceBinding{}, &workv1alpha2.ClusterResourceBinding{}} {
			if _, err := w.cache.GetInformer(ctx, obj, cache.BlockUntilSynced(true)); err != nil {
				if ctx.Err() == nil {
					log.Error(err, "Cannot wait for the cache's bindings; the templates of the watches' first lists are queued at the default priority")
					w.bindingsHaveSynced(false)
				}
				return
			}
		}
		w.bindingsHaveSynced(true)
	}()
	go w.rescopeLoop(ctx)

	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		if err := w.sync(ctx); err != nil {
			log.Error(err, "Discovery of template kinds was partial; retrying later")
		}
		w.watchesStarted()
		select {
		case <-ctx.Done():
			return nil
		case <-w.trigger:
			// CRDs come in bursts; let them settle and their APIs be served.
			time.Sleep(time.Second)
		case <-t.C:
		}
	}
}

// rescopeLoop replaces the watches of namespaced kinds after the opted-in namespaces change.
func (w *watcher) rescopeLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.rescope:
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(rescopeDelay):
		}
		w.mu.Lock()
		w.rescopeLocked()
		w.mu.Unlock()
	}
}

func (w *watcher) poke() {
	select {
	case w.trigger <- struct{}{}:
	default:
	}
}

// sync discovers the template kinds, looks for claimed objects of the new ones, forgets the
// kinds that are gone, and watches the kinds the policies name.
func (w *watcher) sync(ctx context.Context) error {
	lists, discErr := discovery.ServerPreferredResources(w.disco)
	found := map[schema.GroupVersionKind]kindInfo{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, res := range l.APIResources {
			if !templateResource(gv.WithResource(res.Name).GroupResource()) ||
				!hasVerbs(res.Verbs, "get", "list", "watch", "patch") {
				continue
			}
			found[gv.WithKind(res.Kind)] = kindInfo{gvr: gv.WithResource(res.Name), namespaced: res.Namespaced}
		}
	}
	var fresh []schema.GroupVersionKind
	w.mu.Lock()
	for gvk, k := range found {
		if _, ok := w.discovered[gvk]; !ok {
			w.discovered[gvk] = k
		}
		if !w.scanned[gvk] {
			fresh = append(fresh, gvk)
		}
	}
	if discErr == nil {
		// Only a complete discovery says a kind is gone.
		for gvk := range w.discovered {
			if _, ok := found[gvk]; !ok {
				w.forgetLocked(gvk)
				ctrl.LoggerFrom(ctx).V(1).Info("Template kind is no longer served", "kind", gvk)
			}
		}
	}
	// New namespaced kinds are watched in the opted-in namespaces.
	w.rescopeLocked()
	w.mu.Unlock()

	var scanErr error
	for _, gvk := range fresh {
		keys, err := w.claimed(ctx, gvk)
		if err != nil {
			scanErr = err
			continue
		}
		w.mu.Lock()
		w.scanned[gvk] = true
		w.mu.Unlock()
		if len(keys) > 0 {
			w.want(ctx, gvk) // cluster-scoped kinds; namespaced kinds are watched anyway
			w.enqueueLow(keys...)
		}
	}
	if err := w.wantNamedKinds(ctx); err != nil {
		return err
	}
	if discErr != nil {
		return discErr
	}
	return scanErr
}

// claimed lists the templates of a kind that some policy claims, anywhere on the host: those
// whose bindings carry a claim.
func (w *watcher) claimed(ctx context.Context, gvk schema.GroupVersionKind) ([]Key, error) {
	return claimedTemplates(ctx, w.cache, "", IndexClaimedBindingByKind, gvk.String())
}

// wantNamedKinds watches every cluster-scoped kind some policy's resourceSelectors name.
func (w *watcher) wantNamedKinds(ctx context.Context) error {
	pps := &policyv1alpha1.PropagationPolicyList{}
	if err := w.cache.List(ctx, pps); err != nil {
		return err
	}
	cpps := &policyv1alpha1.ClusterPropagationPolicyList{}
	if err := w.cache.List(ctx, cpps); err != nil {
		return err
	}
	for i := range pps.Items {
		w.wantSelected(ctx, &pps.Items[i].Spec)
	}
	for i := range cpps.Items {
		w.wantSelected(ctx, &cpps.Items[i].Spec)
	}
	return nil
}

// wantSelected watches the kinds a policy's resourceSelectors name, and returns those that are
// watched.
func (w *watcher) wantSelected(ctx context.Context, spec *policyv1alpha1.PropagationSpec) []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for _, gvk := range selectedKinds(spec) {
		if w.want(ctx, gvk) {
			out = append(out, gvk)
		}
	}
	return out
}

// want watches a cluster-scoped kind, if the host serves it as a template kind. It reports
// whether the kind is watched: namespaced template kinds always are, in the opted-in
// namespaces.
func (w *watcher) want(ctx context.Context, gvk schema.GroupVersionKind) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	k, ok := w.discovered[gvk]
	if !ok || w.ctx == nil {
		// Not served (yet), or not started: the next discovery that finds it looks at the
		// policies again.
		return false
	}
	if k.namespaced {
		if !w.named[gvk] {
			w.named[gvk] = true
			w.updateFeedsLocked()
		}
		return true
	}
	if w.wanted[gvk] {
		return true
	}
	w.wanted[gvk] = true
	ctrl.LoggerFrom(ctx).V(1).Info("Watching cluster-scoped template kind", "kind", gvk)
	w.informers[gvk] = w.newInformerLocked(gvk, nil, nil)
	return true
}

// forgetLocked stops watching a kind the host no longer serves.
func (w *watcher) forgetLocked(gvk schema.GroupVersionKind) {
	for _, m := range []map[schema.GroupVersionKind]*informer{w.informers, w.pending} {
		if inf := m[gvk]; inf != nil {
			inf.stop()
			delete(m, gvk)
		}
	}
	delete(w.wanted, gvk)
	delete(w.scanned, gvk)
	delete(w.discovered, gvk)
	delete(w.named, gvk)
	w.updateFeedsLocked()
}

// rescopeLocked makes every namespaced kind's watch hold the opted-in namespaces: a kind
// watched for another set gets a pending replacement, which takes over once it has synced;
// with no namespace opted in, no namespaced kind is watched.
func (w *watcher) rescopeLocked() {
	if w.ctx == nil {
		return
	}
	defer w.updateFeedsLocked()
	for gvk, k := range w.discovered {
		if !k.namespaced {
			continue
		}
		cur, pend := w.informers[gvk], w.pending[gvk]
		if pend != nil {
			if maps.Equal(pend.namespaces, w.optedIn) {
				continue
			}
			pend.stop()
			delete(w.pending, gvk)
		}
		switch {
		case cur != nil && maps.Equal(cur.namespaces, w.optedIn):
		case len(w.optedIn) == 0:
			if cur != nil {
				cur.stop()
				delete(w.informers, gvk)
			}
		case cur == nil:
			w.informers[gvk] = w.newInformerLocked(gvk, maps.Clone(w.optedIn), nil)
		default:
			next := w.newInformerLocked(gvk, maps.Clone(w.optedIn), cur.versions())
			w.pending[gvk] = next
			go w.takeOver(w.ctx, gvk, next)
		}
	}
}

// takeOver makes a pending informer the kind's watch once it has synced, and stops the one
// it replaces.
func (w *watcher) takeOver(ctx context.Context, gvk schema.GroupVersionKind, next *informer) {
	if synced, _ := waitSynced(ctx, next); !synced {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pending[gvk] != next {
		return
	}
	delete(w.pending, gvk)
	if old := w.informers[gvk]; old != nil {
		old.stop()
	}
	w.informers[gvk] = next
	next.known.Store(nil)
}

// namespaceChanged follows a namespace's opt-in. Opting in or out replaces the watches of
// namespaced kinds (see rescopeLocked); opting out, or deletion, first enqueues the objects of
// the namespace the watches hold, so they are released: their reconciles see the namespace
// out.
func (w *watcher) namespaceChanged(ctx context.Context, o any, deleted bool) {
	if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	ns, ok := o.(*corev1.Namespace)
	if !ok {
		return
	}
	in := !deleted && optedIn(ns)
	var release []Key
	later := false
	w.mu.Lock()
	switch was := w.optedIn[ns.Name]; {
	case in && !was:
		w.optedIn[ns.Name] = true
		ctrl.LoggerFrom(ctx).V(1).Info("Namespace opted in", "namespace", ns.Name)
		if len(w.optedIn) == 1 {
			// The first opted-in namespace: start the watches now; there is usually nothing
			// to replace, so nothing to wait for.
			w.rescopeLocked()
		} else {
			later = true
		}
	case !in && was:
		delete(w.optedIn, ns.Name)
		release = w.templatesInLocked(ns.Name)
		ctrl.LoggerFrom(ctx).V(1).Info("Namespace opted out", "namespace", ns.Name, "templates", len(release))
		later = true
	}
	w.mu.Unlock()
	if later {
		select {
		case w.rescope <- struct{}{}:
		default:
		}
	}
	w.enqueue(release...)
}

// templatesIn returns the keys of the objects of a namespace that the watches hold.
func (w *watcher) templatesIn(namespace string) []Key {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.templatesInLocked(namespace)
}

func (w *watcher) templatesInLocked(namespace string) []Key {
	var out []Key
	for _, m := range []map[schema.GroupVersionKind]*informer{w.informers, w.pending} {
		for gvk, inf := range m {
			out = append(out, inf.keysIn(gvk, namespace)...)
		}
	}
	return out
}

// optedIn reports whether a namespace's templates may propagate.
func optedIn(ns *corev1.Namespace) bool {
	return ns.Labels[wellknown.PropagationLabel] == wellknown.PropagationEnabled && !systemNamespace(ns.Name)
}

func (w *watcher) stopAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopFeedsLocked()
	for _, m := range []map[schema.GroupVersionKind]*informer{w.informers, w.pending} {
		for gvk, inf := range m {
			inf.stop()
			delete(m, gvk)
		}
	}
}

func hasVerbs(have metav1.Verbs, want ...string) bool {
	for _, v := range want {
		if !slices.Contains(have, v) {
			return false
		}
	}
	return true
}

// templateChanged passes the events that can change a binding: create and delete, and
// updates of generation, labels, annotations or deletion, or of anything for kinds without a
// generation. Status-only updates by host controllers are dropped.
func templateChanged() predicate.TypedPredicate[*metav1.PartialObjectMetadata] {
	return predicate.TypedFuncs[*metav1.PartialObjectMetadata]{
		CreateFunc: func(e event.TypedCreateEvent[*metav1.PartialObjectMetadata]) bool {
			return !systemNamespace(e.Object.Namespace) || e.Object.Namespace == ""
		},
		UpdateFunc: func(e event.TypedUpdateEvent[*metav1.PartialObjectMetadata]) bool {
			o, n := e.ObjectOld, e.ObjectNew
			if n.Namespace != "" && systemNamespace(n.Namespace) {
				return false
			}
			if n.Generation == 0 {
				return o.ResourceVersion != n.ResourceVersion
			}
			return o.Generation != n.Generation || !mapsEqual(o.Labels, n.Labels) ||
				!mapsEqual(o.Annotations, n.Annotations) || (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil)
		},
		DeleteFunc: func(e event.TypedDeleteEvent[*metav1.PartialObjectMetadata]) bool {
			return e.Object.Namespace == "" || !systemNamespace(e.Object.Namespace)
		},
		GenericFunc: func(event.TypedGenericEvent[*metav1.PartialObjectMetadata]) bool { return true },
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// watchedKinds returns the watched kinds and whether each is namespaced.
func (w *watcher) watchedKinds() map[schema.GroupVersionKind]bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	out := make(map[schema.GroupVersionKind]bool, len(w.informers))
	for gvk := range w.informers {
		out[gvk] = w.discovered[gvk].namespaced
	}
	return out
}

// keyOf is the key of a template object.
func keyOf(gvk schema.GroupVersionKind, o *metav1.PartialObjectMetadata) Key {
	return Key{GVK: gvk, NamespacedName: types.NamespacedName{Namespace: o.Namespace, Name: o.Name}}
}

var _ reconcile.TypedReconciler[Key] = &Reconciler{}
