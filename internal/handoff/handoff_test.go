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
	h := New(8, 10*time.Millisecond)
	h.Put(tmpl("a", "1"))
	time.Sleep(30 * time.Millisecond)
	if _, ok := h.Take("a", "1"); ok {
		t.Fatal("an expired template was handed off")
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
