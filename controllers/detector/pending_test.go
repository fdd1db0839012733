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

	"github.com/flotilla-io/flotilla/api/wellknown"
)

// TestPolicyFindsTemplatesOfThePendingWatch: while the opted-in namespaces change, the
// templates of a namespace just opted in are held only by the kind's pending watch, whose
// initial list has enqueued them, so they may be claimed and bound already. A policy deleted
// or changed then must find them there, or nothing releases them (before, only the current
// watch was looked at).
func TestPolicyFindsTemplatesOfThePendingWatch(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	store := func(objs ...*metav1.PartialObjectMetadata) toolscache.SharedIndexInformer {
		inf := toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &metav1.PartialObjectMetadata{}, 0,
			toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc, claimIndex: claimIndexFunc})
		for _, o := range objs {
			if err := inf.GetIndexer().Add(o); err != nil {
				t.Fatal(err)
			}
		}
		return inf
	}
	claimed := func(ns, name string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{wellknown.PropagationPolicyPermanentIDLabel: "pp-id", "app": name}}}
	}
	w := newWatcher(nil, nil, nil, nil, time.Minute)
	w.informers[gvk] = &informer{inf: store(claimed("old", "api")), namespaces: map[string]bool{"old": true}}
	w.pending[gvk] = &informer{inf: store(claimed("old", "api"), claimed("new", "web")),
		namespaces: map[string]bool{"old": true, "new": true}}

	want := Key{GVK: gvk, NamespacedName: types.NamespacedName{Namespace: "new", Name: "web"}}
	ctx := context.Background()
	for name, got := range map[string][]Key{
		"claimed":  w.listClaimed(gvk, "", wellknown.PropagationPolicyPermanentIDLabel, "pp-id"),
		"selected": w.list(ctx, gvk, "new", nil),
		"named":    w.listNamed(ctx, gvk, "new", "web", nil),
	} {
		if !slices.Contains(got, want) {
			t.Errorf("%s: %v, want %v among them", name, got, want)
		}
	}
	// Held by both watches, a template is found once.
	if got := w.listClaimed(gvk, "old", wellknown.PropagationPolicyPermanentIDLabel, "pp-id"); len(got) != 1 {
		t.Errorf("a template both watches hold found %d times: %v", len(got), got)
	}
}
