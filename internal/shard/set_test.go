package shard

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// keyIn returns a key of shard k among n.
func keyIn(t testing.TB, k, n int) string {
	for i := range 10000 {
		key := "ns/key-" + string(rune('a'+i%26)) + time.Duration(i).String()
		if Of(key, n) == k {
			return key
		}
	}
	t.Fatalf("no key of shard %d", k)
	return ""
}

func TestNilSetHoldsEverything(t *testing.T) {
	var s *Set
	if !s.Holds("a/b") || !s.HoldsShard(0) || s.Shards() != 1 {
		t.Fatal("a nil Set must hold every key")
	}
	done, ok := s.Enter("a/b")
	if !ok {
		t.Fatal("a nil Set must let every key in")
	}
	done()
	if s.Source(nil) != nil {
		t.Fatal("a nil Set has no source")
	}
	called := false
	r := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		called = true
		return reconcile.Result{}, nil
	})
	_, _ = s.Gate(r).Reconcile(context.Background(), reconcile.Request{})
	if !called {
		t.Fatal("a nil Set's gate must pass every request")
	}
}

func TestGateDropsKeysOfShardsNotHeld(t *testing.T) {
	s := NewSet(4)
	key := keyIn(t, 2, 4)
	var calls atomic.Int32
	g := s.Gate(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		calls.Add(1)
		return reconcile.Result{}, nil
	}))
	ns, name := splitKey(key)
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
	if _, err := g.Reconcile(context.Background(), req); err != nil || calls.Load() != 0 {
		t.Fatalf("reconciled a key of a shard not held: calls=%d err=%v", calls.Load(), err)
	}
	s.open(2)
	if _, err := g.Reconcile(context.Background(), req); err != nil || calls.Load() != 1 {
		t.Fatalf("did not reconcile a key of a held shard: calls=%d err=%v", calls.Load(), err)
	}
	if s.HoldsShard(1) || !s.HoldsShard(2) || !s.Holds(key) {
		t.Fatal("Holds disagrees with the opened shard")
	}
}

func TestCloseWaitsForWorkInside(t *testing.T) {
	s := NewSet(2)
	key := keyIn(t, 1, 2)
	s.open(1)
	done, ok := s.Enter(key)
	if !ok {
		t.Fatal("cannot enter an open shard")
	}
	var lost atomic.Int32
	s.OnLost(func(k int) { lost.Store(int32(k) + 10) })
	closed := make(chan struct{})
	go func() { s.close(1); close(closed) }()
	select {
	case <-closed:
		t.Fatal("close returned while work was inside the shard")
	case <-time.After(100 * time.Millisecond):
	}
	// Work that comes while the shard closes waits for the close, then stays out.
	entered := make(chan bool, 1)
	go func() { _, ok := s.Enter(key); entered <- ok }()
	done()
	if <-entered {
		t.Fatal("entered a shard being closed")
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("close did not return once the work ended")
	}
	if lost.Load() != 11 {
		t.Fatalf("OnLost listener got %d, want shard 1", lost.Load()-10)
	}
}

func splitKey(key string) (string, string) {
	for i := range key {
		if key[i] == '/' {
			return key[:i], key[i+1:]
		}
	}
	return "", key
}
