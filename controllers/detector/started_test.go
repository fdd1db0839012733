package detector

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// hostReader stands for the host's API: it counts the reads it answers.
type hostReader struct {
	client.Reader
	gets atomic.Int32
}

func (h *hostReader) Get(_ context.Context, _ client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	h.gets.Add(1)
	return nil
}

// TestGetWaitsForTheWatchesAtStart: at a start, the detector's workers take the checks the
// bindings' initial list queues before the first discovery has started the template
// watches. Such a read waits for the watches instead of asking the host: after a restart
// with 10,000 templates it asked the host for each, slowing the watches' own first lists
// (and with them a template created during the restart).
func TestGetWaitsForTheWatchesAtStart(t *testing.T) {
	host := &hostReader{}
	w := newWatcher(nil, nil, nil, nil, host, time.Minute)
	out := &metav1.PartialObjectMetadata{}
	out.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	done := make(chan error, 1)
	go func() { done <- w.get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "web"}, out) }()
	select {
	case err := <-done:
		t.Fatalf("read before the watches started (err %v, %d host reads)", err, host.gets.Load())
	case <-time.After(100 * time.Millisecond):
	}
	w.watchesStarted()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("still waiting once the watches started")
	}
	// No watch holds the template (its namespace is not opted in): the host is asked.
	if got := host.gets.Load(); got != 1 {
		t.Errorf("host reads = %d, want 1", got)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w2 := newWatcher(nil, nil, nil, nil, host, time.Minute)
	if err := w2.get(ctx, types.NamespacedName{Namespace: "ns", Name: "web"}, out); err == nil {
		t.Error("a read waiting for the watches must end with its context")
	}
}
