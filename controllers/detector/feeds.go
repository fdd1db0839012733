package detector

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flotilla-io/flotilla/internal/handoff"
)

// Feeds: whole templates as they change, so that the detector does not read them again.
//
// The watches of namespaced kinds are metadata only (see watcher), so a template whose
// binding must be written was read whole from the host, one GET per version. A feed is a
// plain watch (no list, no store) of the whole objects of one kind in one opted-in namespace,
// for the kinds some policy's resourceSelectors name; each object it sees is offered to a
// bounded hand-off (handoff.NewLatest: the last version of each template, at most
// feedSize templates for feedTTL), where the detector takes the version its metadata watch
// showed. Feeds are best effort: a version a feed missed (it was restarting, or the version
// was pushed out) is read from the host as before, so a feed never decides anything.
//
// Costs: one watch per named kind and opted-in namespace, carrying only that namespace's
// objects (templates: in a held namespace only users and Flotilla's status writes change
// them), and the hand-off's memory. A feed starts at the resourceVersion its kind's metadata
// watch has reached, so it sends no initial list.

const (
	// feedSize and feedTTL bound what the feeds hold: about a minute of templates created
	// at the bench's pace, for as long as the detector takes to come to them under load (a
	// few seconds on the bench), as the binding controller's hand-off.
	feedSize = handoff.DefaultSize
	feedTTL  = handoff.DefaultTTL
	// feedRetry is how long a feed whose watch ended in an error waits before it starts
	// again.
	feedRetry = time.Second
)

// feedKey names a feed: a kind in a namespace.
type feedKey struct {
	gvk       schema.GroupVersionKind
	namespace string
}

// updateFeedsLocked runs a feed for every namespaced kind a policy names in every opted-in
// namespace, and stops the others. w.mu is held.
func (w *watcher) updateFeedsLocked() {
	if w.ctx == nil || w.dyn == nil {
		return
	}
	want := map[feedKey]schema.GroupVersionResource{}
	for gvk := range w.named {
		k, ok := w.discovered[gvk]
		if !ok || !k.namespaced {
			continue
		}
		for ns := range w.optedIn {
			want[feedKey{gvk, ns}] = k.gvr
		}
	}
	for k, stop := range w.feeds {
		if _, ok := want[k]; !ok {
			stop()
			delete(w.feeds, k)
		}
	}
	for _, k := range sortedFeedKeys(want) {
		if _, ok := w.feeds[k]; ok {
			continue
		}
		ctx, cancel := context.WithCancel(w.ctx)
		w.feeds[k] = cancel
		go w.runFeed(ctx, k, want[k])
	}
}

func sortedFeedKeys(m map[feedKey]schema.GroupVersionResource) []feedKey {
	return slices.SortedFunc(maps.Keys(m), func(a, b feedKey) int {
		return cmp.Or(cmp.Compare(a.gvk.String(), b.gvk.String()), cmp.Compare(a.namespace, b.namespace))
	})
}

// stopFeedsLocked stops every feed. w.mu is held.
func (w *watcher) stopFeedsLocked() {
	for k, stop := range w.feeds {
		stop()
		delete(w.feeds, k)
	}
}

// runFeed watches one kind in one namespace until ctx ends, offering every whole object it
// sees, and starts again after an error (from where it was, or from where the kind's
// metadata watch is when that is too old).
func (w *watcher) runFeed(ctx context.Context, k feedKey, gvr schema.GroupVersionResource) {
	log := ctrl.LoggerFrom(ctx).WithValues("kind", k.gvk, "namespace", k.namespace)
	res := w.dyn.Resource(gvr).Namespace(k.namespace)
	rv := ""
	for ctx.Err() == nil {
		if rv == "" {
			rv = w.kindResourceVersion(k.gvk)
		}
		if rv != "" {
			wi, err := res.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
			switch {
			case err == nil:
				rv = w.consumeFeed(wi, rv)
			case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
				rv = ""
			default:
				log.V(1).Info("Template feed failed; its templates are read from the host meanwhile", "error", err.Error())
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(feedRetry):
		}
	}
}

// consumeFeed offers the objects of one watch until it ends, and returns the resourceVersion
// to start the next one from ("" when it is too old).
func (w *watcher) consumeFeed(wi watch.Interface, rv string) string {
	defer wi.Stop()
	for ev := range wi.ResultChan() {
		switch ev.Type {
		case watch.Added, watch.Modified:
			if u, ok := ev.Object.(*unstructured.Unstructured); ok {
				rv = u.GetResourceVersion()
				w.seen.Put(trimFed(u))
			}
		case watch.Bookmark:
			if m, err := meta.Accessor(ev.Object); err == nil && m.GetResourceVersion() != "" {
				rv = m.GetResourceVersion()
			}
		case watch.Error:
			if err := apierrors.FromObject(ev.Object); apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				return ""
			}
			return rv
		}
	}
	return rv
}

// kindResourceVersion is the resourceVersion the kind's metadata watch has reached, "" before
// it has synced.
func (w *watcher) kindResourceVersion(gvk schema.GroupVersionKind) string {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if inf := w.informers[gvk]; inf != nil && inf.inf.HasSynced() {
		return inf.inf.LastSyncResourceVersion()
	}
	return ""
}

// fed returns the whole template at the version of tmpl (its metadata, as the detector read
// it) if a feed saw it, taking it from the feeds' hand-off. A nil watcher feeds nothing.
func (w *watcher) fed(tmpl *metav1.PartialObjectMetadata) (*unstructured.Unstructured, bool) {
	if w == nil {
		return nil, false
	}
	u, ok := w.seen.Take(tmpl.UID, tmpl.ResourceVersion)
	if ok {
		u.SetGroupVersionKind(tmpl.GroupVersionKind())
	}
	return u, ok
}

// trimFed drops what no reader of a fed template uses, so that the feeds hold less: its
// managedFields and kubectl's last-applied-configuration (the binding controller prunes both
// from what it renders, and the detector's fingerprint of the metadata leaves the annotation
// out).
func trimFed(u *unstructured.Unstructured) *unstructured.Unstructured {
	u.SetManagedFields(nil)
	if ann := u.GetAnnotations(); ann != nil {
		if _, ok := ann[corev1.LastAppliedConfigAnnotation]; ok {
			delete(ann, corev1.LastAppliedConfigAnnotation)
			u.SetAnnotations(ann)
		}
	}
	return u
}
