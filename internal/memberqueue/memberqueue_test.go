package memberqueue

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// A member whose work blocks must not hold back another member's work.
func TestSlowMemberDoesNotBlockOthers(t *testing.T) {
	release := make(chan struct{})
	done := make(chan string, 10)
	q := New("test", 2, func(ctx context.Context, cluster string, key string) (ctrl.Result, error) {
		if cluster == "slow" {
			<-release
		}
		done <- cluster + "/" + key
		return ctrl.Result{}, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Keys added before Start wait for it.
	for _, k := range []string{"a", "b", "c"} {
		q.Add("slow", k)
	}
	go func() { _ = q.Start(ctx) }()
	q.Add("fast", "x")
	select {
	case got := <-done:
		if got != "fast/x" {
			t.Fatalf("got %s first, want fast/x", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the fast member's key was not processed while the slow member's workers were busy")
	}
	close(release)
	for range 3 {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the slow member's keys were not processed once released")
		}
	}
}

// Errors retry with backoff, RequeueAfter comes back, panics become errors.
func TestRetries(t *testing.T) {
	var calls atomic.Int32
	var mu sync.Mutex
	seen := map[string]int{}
	q := New("test", 1, func(ctx context.Context, cluster string, key string) (ctrl.Result, error) {
		calls.Add(1)
		mu.Lock()
		seen[key]++
		n := seen[key]
		mu.Unlock()
		switch {
		case key == "err" && n < 3:
			return ctrl.Result{}, errors.New("boom")
		case key == "later" && n < 2:
			return ctrl.Result{RequeueAfter: 10 * time.Millisecond}, nil
		case key == "panic" && n < 2:
			panic("bad object")
		}
		return ctrl.Result{}, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = q.Start(ctx) }()
	for _, k := range []string{"err", "later", "panic"} {
		q.Add("m", k)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		ok := seen["err"] == 3 && seen["later"] == 2 && seen["panic"] == 2
		mu.Unlock()
		if ok {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Fatalf("calls per key = %v, want err:3 later:2 panic:2", seen)
}
