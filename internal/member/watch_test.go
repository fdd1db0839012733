package member

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/localcluster"
)

// watchCounter counts the watch requests of each path to one member.
type watchCounter struct {
	next http.RoundTripper
	mu   sync.Mutex
	n    map[string]int
}

func (c *watchCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet && req.URL.Query().Get("watch") != "" {
		c.mu.Lock()
		c.n[req.URL.Path]++
		c.mu.Unlock()
	}
	return c.next.RoundTrip(req)
}

func (c *watchCounter) count(path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[path]
}

// The member caches' watches outlive the request timeout: with it, an http.Client ends every
// watch at the timeout (30 s by default), and the cache watched each kind afresh that often,
// and could never finish a first list streamed for longer. Ordinary requests keep it.
func TestMemberWatchesOutliveTheRequestTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a member apiserver")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Options{Name: "member-watch"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})

	const timeout = 2 * time.Second
	counter := &watchCounter{n: map[string]int{}}
	m := NewManager(scheme.New(), Options{RequestTimeout: timeout,
		WrapTransport: func(_ string, rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter }})
	if _, err := m.connect(ctx, "member1", c.RESTConfig(), "fp"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Disconnect("member1") })
	mem := m.members["member1"]
	if mem.Config.Timeout != timeout {
		t.Errorf("the member's requests are bounded by %s, want %s", mem.Config.Timeout, timeout)
	}

	gvk := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	if err := m.Watch(ctx, "member1", gvk); err != nil {
		t.Fatal(err)
	}
	if err := mem.WaitSynced(ctx, gvk); err != nil {
		t.Fatal(err)
	}
	// Three request timeouts later, the first watch is still the only one, and it still
	// delivers: a ConfigMap made now is in the cache.
	time.Sleep(3 * timeout)
	if n := counter.count("/api/v1/configmaps"); n != 1 {
		t.Errorf("%d watches of ConfigMaps in %s, want 1 (each ended by the request timeout)", n, 3*timeout)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "late",
		Labels: map[string]string{wellknown.ManagedLabel: wellknown.ManagedLabelValue}}}
	if err := mem.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		return mem.Holds(ctx, gvk, client.ObjectKeyFromObject(cm)), nil
	})
	if err != nil {
		t.Errorf("the ConfigMap made after %s is not in the member cache: %v", 3*timeout, err)
	}
}
