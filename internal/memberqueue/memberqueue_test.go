package memberqueue

import (
	"context"
	"errors"
	"runtime"
	"slices"
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

// A key whose processing waits on something that never comes (a member cache that never
// syncs) is cut short after the queue's Timeout and retried, so that the member's worker is
// free again and the key is not lost.
func TestTimeoutFreesTheWorkerAndRetries(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	var ctxErrs []error
	q := New("test", 1, func(ctx context.Context, cluster string, key string) (ctrl.Result, error) {
		mu.Lock()
		seen[key]++
		n := seen[key]
		mu.Unlock()
		if key == "stuck" && n == 1 {
			<-ctx.Done() // as a read of a cache that never syncs does
			mu.Lock()
			ctxErrs = append(ctxErrs, ctx.Err())
			mu.Unlock()
			return ctrl.Result{}, nil // even a caller that swallows the error is retried
		}
		return ctrl.Result{}, nil
	})
	q.Timeout = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = q.Start(ctx) }()
	q.Add("m", "stuck")
	q.Add("m", "next")
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		ok := seen["stuck"] == 2 && seen["next"] == 1
		mu.Unlock()
		if ok {
			mu.Lock()
			defer mu.Unlock()
			if len(ctxErrs) != 1 || !errors.Is(ctxErrs[0], context.DeadlineExceeded) {
				t.Fatalf("the stuck call's context ended with %v, want one DeadlineExceeded", ctxErrs)
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Fatalf("calls per key = %v, want stuck:2 (cut short, then retried) next:1 (on the one worker, after it)", seen)
}

// A removed member's workers exit; a member joined again under its name gets new ones.
func TestRemove(t *testing.T) {
	done := make(chan string, 10)
	q := New("test", 3, func(ctx context.Context, cluster string, key string) (ctrl.Result, error) {
		done <- cluster + "/" + key
		return ctrl.Result{}, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = q.Start(ctx) }()
	wait := func(want string) {
		t.Helper()
		select {
		case got := <-done:
			if got != want {
				t.Fatalf("processed %s, want %s", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s was not processed", want)
		}
	}
	q.Add("gone", "a")
	wait("gone/a")
	with := runtime.NumGoroutine()
	q.Remove("gone")
	if c := q.Clusters(); len(c) != 0 {
		t.Fatalf("queues after Remove: %v", c)
	}
	// The member's 3 workers exit (and the queue's own goroutines).
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > with-3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines 10 s after Remove, %d before it: the workers did not exit", runtime.NumGoroutine(), with)
		}
		time.Sleep(10 * time.Millisecond)
	}
	q.Remove("gone") // again: nothing to do
	q.Add("gone", "b")
	wait("gone/b")
}

// A key added low that fails is retried low: behind a low key that waited before it, not
// ahead of it as a new key would be.
func TestRetryKeepsLowPriority(t *testing.T) {
	for _, retry := range []struct {
		name   string
		result func() (ctrl.Result, error)
	}{
		{"error", func() (ctrl.Result, error) { return ctrl.Result{}, errors.New("member did not answer") }},
		{"RequeueAfter", func() (ctrl.Result, error) { return ctrl.Result{RequeueAfter: time.Millisecond}, nil }},
	} {
		t.Run(retry.name, func(t *testing.T) {
			release := make(chan struct{})
			order := make(chan string, 10)
			var failed atomic.Bool
			q := New("test", 1, func(ctx context.Context, cluster string, key string) (ctrl.Result, error) {
				order <- key
				switch key {
				case "a":
					<-release
					if !failed.Swap(true) {
						return retry.result()
					}
				case "new":
					// Long enough for a's retry to be ready when the next key is taken.
					time.Sleep(200 * time.Millisecond)
				}
				return ctrl.Result{}, nil
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() { _ = q.Start(ctx) }()
			q.AddLow("m", "a")
			if got := <-order; got != "a" {
				t.Fatalf("took %s first, want a", got)
			}
			// While a is being processed: new work, and another check that nothing changed.
			q.Add("m", "new")
			q.AddLow("m", "c")
			close(release)
			var got []string
			for range 3 {
				select {
				case k := <-order:
					got = append(got, k)
				case <-time.After(10 * time.Second):
					t.Fatalf("processed %v, then nothing", got)
				}
			}
			if want := []string{"new", "c", "a"}; !slices.Equal(got, want) {
				t.Fatalf("processed %v after a's first try, want %v (a's retry stays low, behind c)", got, want)
			}
		})
	}
}
