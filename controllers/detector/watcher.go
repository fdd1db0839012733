package detector

import (
	"context"
	"slices"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// watcher keeps one metadata-only watch per template kind the host serves. It runs
// discovery at start, whenever a CRD changes, and every interval, and adds watches for new
// kinds to the running controller. Kinds that disappear keep their (idle) watch.
type watcher struct {
	cache    cache.Cache
	disco    discovery.DiscoveryInterface
	ctrl     controller.TypedController[Key]
	interval time.Duration
	trigger  chan struct{}

	mu         sync.RWMutex
	namespaced map[schema.GroupVersionKind]bool // watched kinds → namespaced?
}

func newWatcher(c cache.Cache, d discovery.DiscoveryInterface, interval time.Duration) *watcher {
	return &watcher{cache: c, disco: d, interval: interval, trigger: make(chan struct{}, 1),
		namespaced: map[schema.GroupVersionKind]bool{}}
}

// NeedLeaderElection: only the leader's controller runs, so only it needs the watches.
func (w *watcher) NeedLeaderElection() bool { return true }

// Start runs discovery until ctx ends.
func (w *watcher) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("detector-discovery")
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
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		if err := w.sync(ctx); err != nil {
			log.Error(err, "Discovery of template kinds was partial; retrying later")
		}
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

func (w *watcher) poke() {
	select {
	case w.trigger <- struct{}{}:
	default:
	}
}

// sync discovers the kinds and watches the new ones.
func (w *watcher) sync(ctx context.Context) error {
	lists, discErr := discovery.ServerPreferredResources(w.disco)
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
			gvk := gv.WithKind(res.Kind)
			w.mu.RLock()
			_, known := w.namespaced[gvk]
			w.mu.RUnlock()
			if known {
				continue
			}
			if err := w.watch(gvk); err != nil {
				return err
			}
			w.mu.Lock()
			w.namespaced[gvk] = res.Namespaced
			w.mu.Unlock()
			ctrl.LoggerFrom(ctx).V(1).Info("Watching template kind", "kind", gvk)
		}
	}
	return discErr
}

func hasVerbs(have metav1.Verbs, want ...string) bool {
	for _, v := range want {
		if !slices.Contains(have, v) {
			return false
		}
	}
	return true
}

func (w *watcher) watch(gvk schema.GroupVersionKind) error {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	toKey := handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, o *metav1.PartialObjectMetadata) []Key {
		return []Key{{GVK: gvk, NamespacedName: client.ObjectKeyFromObject(o)}}
	})
	return w.ctrl.Watch(source.TypedKind[*metav1.PartialObjectMetadata, Key](w.cache, obj, toKey, templateChanged()))
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

// kinds returns the watched kinds and whether each is namespaced.
func (w *watcher) kinds() map[schema.GroupVersionKind]bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	out := make(map[schema.GroupVersionKind]bool, len(w.namespaced))
	for k, v := range w.namespaced {
		out[k] = v
	}
	return out
}

// list returns the keys of the watched objects of one kind, in a namespace ("" = all), with
// optional label selection.
func (w *watcher) list(ctx context.Context, gvk schema.GroupVersionKind, namespace string, opts ...client.ListOption) []Key {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	if err := w.cache.List(ctx, l, opts...); err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("Cannot list templates from cache", "kind", gvk, "error", err.Error())
		return nil
	}
	keys := make([]Key, 0, len(l.Items))
	for i := range l.Items {
		keys = append(keys, Key{GVK: gvk, NamespacedName: client.ObjectKeyFromObject(&l.Items[i])})
	}
	return keys
}

var _ reconcile.TypedReconciler[Key] = &Reconciler{}
