package handoff

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

func tmpl(uid, rv string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apps/v1")
	u.SetKind("Deployment")
	u.SetName("web")
	u.SetUID(types.UID(uid))
	u.SetResourceVersion(rv)
	return u
}

func TestTakeOnceAtThatVersion(t *testing.T) {
	h := New(8, time.Minute)
	h.Put(tmpl("a", "1"))
	if _, ok := h.Take("a", "2"); ok {
		t.Fatal("another resourceVersion was handed off")
	}
	if _, ok := h.Take("b", "1"); ok {
		t.Fatal("another UID was handed off")
	}
	got, ok := h.Take("a", "1")
	if !ok || got.GetResourceVersion() != "1" {
		t.Fatalf("Take(a, 1) = %v, %v", got, ok)
	}
	if _, ok := h.Take("a", "1"); ok {
		t.Fatal("a template was handed off twice")
	}
}

func TestBounded(t *testing.T) {
	h := New(2, time.Minute)
	h.Put(tmpl("a", "1"))
	h.Put(tmpl("b", "1"))
	h.Put(tmpl("c", "1"))
	if h.Len() != 2 {
		t.Fatalf("Len = %d, want 2", h.Len())
	}
	if _, ok := h.Take("a", "1"); ok {
		t.Fatal("the oldest template was kept beyond the size")
	}
}

func TestExpires(t *testing.T) {
	now := time.Unix(0, 0)
	h := New(8, time.Minute)
	h.now = func() time.Time { return now }
	h.Put(tmpl("a", "1"))
	now = now.Add(30 * time.Second)
	h.Put(tmpl("b", "1"))
	now = now.Add(31 * time.Second)
	// An idle hand-off lets go of what nobody took: a itself, not only on a lookup of it.
	h.Sweep()
	if len(h.entries) != 1 || h.order.Len() != 1 {
		t.Fatalf("after a sweep, %d entries are held, want 1 (b)", len(h.entries))
	}
	if _, ok := h.Take("a", "1"); ok {
		t.Fatal("an expired template was handed off")
	}
	if _, ok := h.Take("b", "1"); !ok {
		t.Fatal("a template was dropped before it expired")
	}
}

func TestPutAgainReplaces(t *testing.T) {
	h := New(2, time.Minute)
	h.Put(tmpl("a", "1"))
	h.Put(tmpl("a", "1"))
	h.Put(tmpl("b", "1"))
	if h.Len() != 2 {
		t.Fatalf("Len = %d, want 2: the same version offered twice is held once", h.Len())
	}
	if _, ok := h.Take("a", "1"); !ok {
		t.Fatal("a was evicted by its own second offer")
	}
}

func TestNilAndIncomplete(t *testing.T) {
	var h *Templates
	h.Put(tmpl("a", "1"))
	if _, ok := h.Take("a", "1"); ok {
		t.Fatal("a nil hand-off returned a template")
	}
	h = New(8, time.Minute)
	h.Put(tmpl("", "1"))
	h.Put(tmpl("a", ""))
	h.Put(nil)
	if h.Len() != 0 {
		t.Fatalf("templates without UID or resourceVersion were kept: %d", h.Len())
	}
}

func TestLatestHoldsOneVersionPerTemplate(t *testing.T) {
	h := NewLatest(2, time.Minute)
	h.Put(tmpl("a", "1"))
	h.Put(tmpl("b", "1"))
	// a's later versions replace its earlier one, and push nothing else out.
	h.Put(tmpl("a", "2"))
	h.Put(tmpl("a", "3"))
	if h.Len() != 2 {
		t.Fatalf("Len = %d, want 2 (one version of a, one of b)", h.Len())
	}
	if _, ok := h.Take("a", "2"); ok {
		t.Fatal("a replaced version was handed off")
	}
	if _, ok := h.Take("b", "1"); !ok {
		t.Fatal("another template's version was pushed out by a's")
	}
	if got, ok := h.Take("a", "3"); !ok || got.GetResourceVersion() != "3" {
		t.Fatalf("Take(a, 3) = %v, %v", got, ok)
	}
	if h.Len() != 0 {
		t.Fatalf("Len = %d after taking everything", h.Len())
	}
	// Bounded still, over templates.
	h.Put(tmpl("c", "1"))
	h.Put(tmpl("d", "1"))
	h.Put(tmpl("e", "1"))
	if _, ok := h.Take("c", "1"); ok {
		t.Fatal("the oldest template was kept beyond the size")
	}
}
