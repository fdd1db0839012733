package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/bindings"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// pathTrace records when the host first shows each step of one template's way to its
// members: its binding, each Work, each Work Applied, the binding FullyApplied. It watches
// from the collections' current resourceVersions, so it lists nothing and costs the host no
// more than two watches of the new events.
type pathTrace struct {
	binding string
	mu      sync.Mutex
	at      map[string]time.Time
}

var (
	bindingsGVR = schema.GroupVersionResource{Group: "work.karmada.io", Version: "v1alpha2", Resource: "resourcebindings"}
	worksGVR    = schema.GroupVersionResource{Group: "work.karmada.io", Version: "v1alpha1", Resource: "works"}
)

// tracePath starts a pathTrace of the binding named binding in the bench namespace.
func tracePath(ctx context.Context, b *testing.B, env *framework.Env, binding string) *pathTrace {
	dyn, err := dynamic.NewForConfig(env.Fleet.Host.RESTConfig())
	if err != nil {
		b.Fatal(err)
	}
	t := &pathTrace{binding: binding, at: map[string]time.Time{}}
	t.watch(ctx, b, dyn.Resource(bindingsGVR).Namespace(namespace), t.bindingEvent)
	t.watch(ctx, b, dyn.Resource(worksGVR), t.workEvent)
	return t
}

// watch watches res from its current resourceVersion, handing each object to record.
func (t *pathTrace) watch(ctx context.Context, b *testing.B, res dynamic.ResourceInterface, record func(*unstructured.Unstructured)) {
	list, err := res.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		b.Fatal(err)
	}
	w, err := res.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		defer w.Stop()
		for e := range w.ResultChan() {
			if u, ok := e.Object.(*unstructured.Unstructured); ok && (e.Type == watch.Added || e.Type == watch.Modified) {
				record(u)
			}
		}
	}()
}

func (t *pathTrace) mark(step string) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.at[step]; !ok {
		t.at[step] = now
	}
}

func (t *pathTrace) bindingEvent(u *unstructured.Unstructured) {
	if u.GetName() != t.binding {
		return
	}
	t.mark("binding")
	if conditionTrue(u, wellknown.ConditionFullyApplied) {
		t.mark("FullyApplied")
	}
}

func (t *pathTrace) workEvent(u *unstructured.Unstructured) {
	key, cluster, ok := bindings.FromWork(u)
	if !ok || cluster || key.Namespace != namespace || key.Name != t.binding {
		return
	}
	member, _ := bindings.ClusterOfWork(u.GetNamespace())
	t.mark("Work " + member)
	if conditionTrue(u, wellknown.WorkConditionApplied) {
		t.mark("Applied " + member)
	}
}

func conditionTrue(u *unstructured.Unstructured, condition string) bool {
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var conds []metav1.Condition
	for _, c := range raw {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		t, _ := m["type"].(string)
		s, _ := m["status"].(string)
		conds = append(conds, metav1.Condition{Type: t, Status: metav1.ConditionStatus(s)})
	}
	return meta.IsStatusConditionTrue(conds, condition)
}

// since lists the steps seen, in order, each as its time after start ("binding +12ms"),
// with the member objects' times (by member) from the bench's member watch.
func (t *pathTrace) since(start time.Time, onMembers map[string]time.Time) string {
	t.mu.Lock()
	steps := map[string]time.Time{}
	for k, v := range t.at {
		steps[k] = v
	}
	t.mu.Unlock()
	for m, at := range onMembers {
		steps["on "+m] = at
	}
	names := make([]string, 0, len(steps))
	for k := range steps {
		names = append(names, k)
	}
	slices.SortFunc(names, func(a, b string) int { return steps[a].Compare(steps[b]) })
	out := make([]string, 0, len(names))
	for _, k := range names {
		out = append(out, fmt.Sprintf("%s +%v", k, steps[k].Sub(start).Round(time.Millisecond)))
	}
	return strings.Join(out, ", ")
}
