package detector

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
)

// TestPolicyFindsTemplatesOfThePendingWatch: while the opted-in namespaces change, the
// templates of a namespace just opted in are held only by the kind's pending watch, whose
// initial list has enqueued them, so they may be bound already. A policy changed then must
// find them there (before, only the current watch was looked at). The templates a policy
// claims are found by their bindings (claimedTemplates), whatever watch holds them.
func TestPolicyFindsTemplatesOfThePendingWatch(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	store := func(objs ...*metav1.PartialObjectMetadata) toolscache.SharedIndexInformer {
		inf := toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &metav1.PartialObjectMetadata{}, 0,
			toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
		for _, o := range objs {
			if err := inf.GetIndexer().Add(o); err != nil {
				t.Fatal(err)
			}
		}
		return inf
	}
	template := func(ns, name string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{"app": name}}}
	}
	w := newWatcher(nil, nil, nil, nil, nil, time.Minute)
	w.informers[gvk] = &informer{inf: store(template("old", "api")), namespaces: map[string]bool{"old": true}}
	w.pending[gvk] = &informer{inf: store(template("old", "api"), template("new", "web")),
		namespaces: map[string]bool{"old": true, "new": true}}

	want := Key{GVK: gvk, NamespacedName: types.NamespacedName{Namespace: "new", Name: "web"}}
	ctx := context.Background()
	for name, got := range map[string][]Key{
		"selected": w.list(ctx, gvk, "new", nil),
		"named":    w.listNamed(ctx, gvk, "new", "web", nil),
	} {
		if !slices.Contains(got, want) {
			t.Errorf("%s: %v, want %v among them", name, got, want)
		}
	}
	// Held by both watches, a template is found once.
	if got := w.list(ctx, gvk, "old", nil); len(got) != 1 {
		t.Errorf("a template both watches hold found %d times: %v", len(got), got)
	}
}
