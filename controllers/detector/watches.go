package detector

import (
	"context"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/flotilla-io/flotilla/internal/cachetrim"
)

// informer is one running metadata-only watch of a kind: cluster-wide, and for a namespaced
// kind filtered to a fixed set of opted-in namespaces.
type informer struct {
	inf toolscache.SharedIndexInformer
	// namespaces are the namespaces a namespaced kind's informer holds; nil for a
	// cluster-scoped kind.
	namespaces map[string]bool
	// known maps the objects the informer it replaces held (store key → resourceVersion); its
	// initial list does not enqueue them again when unchanged. Cleared once it has taken over.
	known  atomic.Pointer[map[string]string]
	cancel context.CancelFunc
	done   chan struct{} // closed when stopped
}

func (i *informer) stop() { i.cancel() }

func (i *informer) stopped() bool {
	select {
	case <-i.done:
		return true
	default:
		return false
	}
}

// holds reports whether the informer holds the objects of a namespace ("": cluster-scoped).
func (i *informer) holds(namespace string) bool {
	return i.namespaces == nil || i.namespaces[namespace]
}

// keys returns the keys of the objects the informer holds in a namespace ("": all) for which
// match is true (nil: all).
func (i *informer) keys(gvk schema.GroupVersionKind, namespace string, match func(*metav1.PartialObjectMetadata) bool) []Key {
	var objs []any
	if namespace == "" {
		objs = i.inf.GetStore().List()
	} else {
		objs, _ = i.inf.GetIndexer().ByIndex(toolscache.NamespaceIndex, namespace)
	}
	var out []Key
	for _, o := range objs {
		m, ok := o.(*metav1.PartialObjectMetadata)
		if !ok || (match != nil && !match(m)) {
			continue
		}
		out = append(out, keyOf(gvk, m))
	}
	return out
}

// keysIn returns the keys of the objects the informer holds in a namespace.
func (i *informer) keysIn(gvk schema.GroupVersionKind, namespace string) []Key {
	if namespace == "" || i.namespaces == nil {
		return nil
	}
	return i.keys(gvk, namespace, nil)
}

// named returns the key of the object of a namespace ("" for a cluster-scoped kind) and name,
// when the informer holds it and match is true.
func (i *informer) named(gvk schema.GroupVersionKind, namespace, name string, match func(*metav1.PartialObjectMetadata) bool) []Key {
	o, ok, _ := i.inf.GetStore().GetByKey(storeKey(types.NamespacedName{Namespace: namespace, Name: name}))
	m, isMeta := o.(*metav1.PartialObjectMetadata)
	if !ok || !isMeta || (match != nil && !match(m)) {
		return nil
	}
	return []Key{keyOf(gvk, m)}
}

// versions maps the objects the informer holds: store key → resourceVersion.
func (i *informer) versions() map[string]string {
	out := map[string]string{}
	for _, o := range i.inf.GetStore().List() {
		if m, ok := o.(*metav1.PartialObjectMetadata); ok {
			out[storeKey(types.NamespacedName{Namespace: m.Namespace, Name: m.Name})] = m.ResourceVersion
		}
	}
	return out
}

// listPageSize is the page size of the filtered lists of namespaced kinds.
const listPageSize = 500

// newInformerLocked starts an informer of a kind: for a namespaced kind, holding the given
// namespaces only; for a cluster-scoped kind (namespaces nil), everything. w.mu is held.
func (w *watcher) newInformerLocked(gvk schema.GroupVersionKind, namespaces map[string]bool, known map[string]string) *informer {
	res := w.meta.Resource(w.discovered[gvk].gvr)
	list := func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return res.List(ctx, o) }
	watchFn := func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return res.Watch(ctx, o) }
	if namespaces != nil {
		list = func(ctx context.Context, _ metav1.ListOptions) (runtime.Object, error) {
			return listIn(ctx, res, namespaces)
		}
		watchFn = func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			wi, err := res.Watch(ctx, o)
			if err != nil {
				return nil, err
			}
			return watch.Filter(wi, func(e watch.Event) (watch.Event, bool) {
				if m, ok := e.Object.(*metav1.PartialObjectMetadata); ok && e.Type != watch.Bookmark && e.Type != watch.Error {
					return e, namespaces[m.Namespace]
				}
				return e, true
			}), nil
		}
	}
	lw := &toolscache.ListWatch{
		ListFunc:             func(o metav1.ListOptions) (runtime.Object, error) { return list(context.Background(), o) },
		WatchFunc:            func(o metav1.ListOptions) (watch.Interface, error) { return watchFn(context.Background(), o) },
		ListWithContextFunc:  list,
		WatchFuncWithContext: watchFn,
	}
	inf := toolscache.NewSharedIndexInformer(lw, &metav1.PartialObjectMetadata{}, 0,
		toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	_ = inf.SetTransform(trimTemplateMetadata)
	ctx, cancel := context.WithCancel(w.ctx)
	i := &informer{inf: inf, namespaces: namespaces, cancel: cancel, done: make(chan struct{})}
	if known != nil {
		i.known.Store(&known)
	}
	changed := templateChanged()
	_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(o any, initial bool) {
			m, ok := o.(*metav1.PartialObjectMetadata)
			if !ok || !changed.Create(event.TypedCreateEvent[*metav1.PartialObjectMetadata]{Object: m}) {
				return
			}
			if k := i.known.Load(); initial && k != nil {
				if rv, ok := (*k)[storeKey(types.NamespacedName{Namespace: m.Namespace, Name: m.Name})]; ok && rv == m.ResourceVersion {
					return
				}
			}
			if initial {
				w.enqueueInitial(keyOf(gvk, m), m.UID)
				return
			}
			w.enqueue(keyOf(gvk, m))
		},
		UpdateFunc: func(old, o any) {
			m, ok1 := o.(*metav1.PartialObjectMetadata)
			om, ok2 := old.(*metav1.PartialObjectMetadata)
			if ok1 && ok2 && changed.Update(event.TypedUpdateEvent[*metav1.PartialObjectMetadata]{ObjectOld: om, ObjectNew: m}) {
				w.enqueue(keyOf(gvk, m))
			}
		},
		DeleteFunc: func(o any) {
			if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			if m, ok := o.(*metav1.PartialObjectMetadata); ok && changed.Delete(event.TypedDeleteEvent[*metav1.PartialObjectMetadata]{Object: m}) {
				w.enqueue(keyOf(gvk, m))
			}
		},
	})
	go func() {
		defer close(i.done)
		inf.RunWithContext(ctx)
	}()
	return i
}

// listIn lists a namespaced kind, in pages of one consistent snapshot, and keeps the objects
// of the given namespaces only: the list of a kind with many objects elsewhere costs no more
// memory than a page.
func listIn(ctx context.Context, res metadata.ResourceInterface, namespaces map[string]bool) (*metav1.PartialObjectMetadataList, error) {
	out := &metav1.PartialObjectMetadataList{}
	opts := metav1.ListOptions{Limit: listPageSize}
	for {
		page, err := res.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range page.Items {
			if namespaces[page.Items[i].Namespace] {
				out.Items = append(out.Items, page.Items[i])
			}
		}
		if out.ResourceVersion == "" {
			out.ResourceVersion = page.ResourceVersion
		}
		if page.Continue == "" {
			return out, nil
		}
		opts.Continue = page.Continue
	}
}

// informerFor returns the kind's watch if it holds the namespace ("" for cluster-scoped).
func (w *watcher) informerFor(gvk schema.GroupVersionKind, namespace string) *informer {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if inf := w.informers[gvk]; inf != nil && inf.holds(namespace) {
		return inf
	}
	return nil
}

// get reads a template's metadata into out: from its watch once that has synced, or from the
// host when no watch holds it (its kind is not watched, its namespace is not opted in, or the
// watch stopped while waiting).
func (w *watcher) get(ctx context.Context, key types.NamespacedName, out *metav1.PartialObjectMetadata) error {
	gvk := out.GroupVersionKind()
	inf := w.informerFor(gvk, key.Namespace)
	if inf == nil && w.started != nil {
		// At a start, the checks the bindings' initial list queues come before the watches:
		// wait for them rather than ask the host for every template (a GET each, 10,000
		// after a restart with 10,000 templates, slowing the watches' own lists).
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-w.started:
		}
		inf = w.informerFor(gvk, key.Namespace)
	}
	if inf != nil {
		synced, err := waitSynced(ctx, inf)
		if err != nil {
			return err
		}
		if synced {
			item, exists, err := inf.inf.GetStore().GetByKey(storeKey(key))
			if err != nil {
				return err
			}
			if !exists {
				return apierrors.NewNotFound(w.groupResource(gvk), key.Name)
			}
			item.(*metav1.PartialObjectMetadata).DeepCopyInto(out)
			out.SetGroupVersionKind(gvk)
			return nil
		}
	}
	return w.live.Get(ctx, key, out)
}

// waitSynced waits until the watch has its initial list. It reports false if the watch was
// stopped first.
func waitSynced(ctx context.Context, inf *informer) (bool, error) {
	for !inf.inf.HasSynced() {
		if inf.stopped() {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-inf.done:
			return false, nil
		case <-time.After(10 * time.Millisecond):
		}
	}
	return true, nil
}

func storeKey(key types.NamespacedName) string {
	if key.Namespace == "" {
		return key.Name
	}
	return key.Namespace + "/" + key.Name
}

func (w *watcher) groupResource(gvk schema.GroupVersionKind) schema.GroupResource {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if k, ok := w.discovered[gvk]; ok {
		return k.gvr.GroupResource()
	}
	return schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}
}

// kindInformers returns the kind's watch and, while the opted-in namespaces change, its
// pending replacement: until the replacement takes over, the templates of newly opted-in
// namespaces are only in it, and they may be bound already (its initial list enqueued them),
// so a policy's change must find them there too.
func (w *watcher) kindInformers(gvk schema.GroupVersionKind) []*informer {
	w.mu.RLock()
	defer w.mu.RUnlock()
	var out []*informer
	for _, inf := range []*informer{w.informers[gvk], w.pending[gvk]} {
		if inf != nil {
			out = append(out, inf)
		}
	}
	return out
}

// union returns the keys each informer gives, each key once.
func union(infs []*informer, keys func(*informer) []Key) []Key {
	if len(infs) == 1 {
		return keys(infs[0])
	}
	seen := map[Key]bool{}
	var out []Key
	for _, inf := range infs {
		for _, k := range keys(inf) {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	return out
}

// list returns the keys of the watched objects of one kind, in a namespace ("": every
// namespace the watch holds, or cluster-wide), for which match is true (nil: all). A watch that
// has not synced yet contributes what it holds; its add events enqueue the rest.
func (w *watcher) list(ctx context.Context, gvk schema.GroupVersionKind, namespace string, match func(*metav1.PartialObjectMetadata) bool) []Key {
	out := union(w.kindInformers(gvk), func(inf *informer) []Key { return inf.keys(gvk, namespace, match) })
	ctrl.LoggerFrom(ctx).V(2).Info("Listed watched templates", "kind", gvk, "namespace", namespace, "count", len(out))
	return out
}

// listNamed returns the key of the watched object of one kind with this name, in a namespace
// ("": every namespace the watch holds, or cluster-wide), if match is true for it.
func (w *watcher) listNamed(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string, match func(*metav1.PartialObjectMetadata) bool) []Key {
	infs := w.kindInformers(gvk)
	switch {
	case len(infs) == 0:
		return nil
	case infs[0].namespaces != nil && namespace == "":
		// A namespaced kind, any namespace (a ClusterPropagationPolicy's selector by name).
		return w.list(ctx, gvk, namespace, match)
	case infs[0].namespaces == nil && namespace != "":
		return nil // a cluster-scoped kind has nothing in a namespace
	}
	return union(infs, func(inf *informer) []Key { return inf.named(gvk, namespace, name, match) })
}

// templateClient is the detector's client: reads of template metadata
// (PartialObjectMetadata) go to the watcher, which serves them from its bounded watches or
// from the host, never from the manager's cache: a metadata read there would start a
// cluster-wide informer of the kind, holding every object of it on the host. Everything else
// (policies, namespaces, bindings, all writes) goes to the manager's client.
type templateClient struct {
	client.Client
	w *watcher
}

func (c *templateClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
		return c.w.get(ctx, key, m)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *templateClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*metav1.PartialObjectMetadataList); ok {
		return c.w.live.List(ctx, list, opts...)
	}
	return c.Client.List(ctx, list, opts...)
}

// trimTemplateMetadata is the template informers' transform. Templates are cached without
// managedFields, as in the manager's cache, and without kubectl's last-applied-configuration:
// a template applied with kubectl carries its whole manifest there, and nothing reads it (it
// never reaches the members, and metadataFingerprint leaves it out).
func trimTemplateMetadata(o any) (any, error) {
	if m, ok := o.(*metav1.PartialObjectMetadata); ok {
		m.ManagedFields = nil
		if _, ok := m.Annotations[corev1.LastAppliedConfigAnnotation]; ok {
			delete(m.Annotations, corev1.LastAppliedConfigAnnotation)
		}
		cachetrim.TemplateMetadata(m)
	}
	return o, nil
}
