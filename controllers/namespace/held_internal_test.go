package namespace

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/flotilla-io/flotilla/api/wellknown"
)

// A system namespace's opt-in is refused once per transition: reconciles of the same state
// (a resync, another label changing) say nothing more, and nothing is labelled held.
func TestOptInRefusedOncePerTransition(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-foo",
		Labels: map[string]string{wellknown.PropagationLabel: wellknown.PropagationEnabled}}}
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(ns).Build()
	rec := events.NewFakeRecorder(10)
	r := &HeldReconciler{Client: c, Recorder: rec}
	reconcile := func() {
		t.Helper()
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(ns)}); err != nil {
			t.Fatal(err)
		}
	}
	relabel := func(labels map[string]string) {
		t.Helper()
		cur := &corev1.Namespace{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(ns), cur); err != nil {
			t.Fatal(err)
		}
		cur.Labels = labels
		if err := c.Update(ctx, cur); err != nil {
			t.Fatal(err)
		}
	}
	refusals := func() int {
		n := 0
		for {
			select {
			case e := <-rec.Events:
				if !strings.HasPrefix(e, corev1.EventTypeWarning+" "+EventReasonOptInRefused+" ") {
					t.Errorf("unexpected event %q", e)
				}
				n++
			default:
				return n
			}
		}
	}

	reconcile()
	reconcile()
	relabel(map[string]string{wellknown.PropagationLabel: wellknown.PropagationEnabled, "team": "a"})
	reconcile()
	if n := refusals(); n != 1 {
		t.Errorf("opted in, reconciled three times: %d OptInRefused events, want 1", n)
	}
	relabel(nil)
	reconcile()
	relabel(map[string]string{wellknown.PropagationLabel: wellknown.PropagationEnabled})
	reconcile()
	if n := refusals(); n != 1 {
		t.Errorf("opted out and in again: %d OptInRefused events, want 1", n)
	}
	cur := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(ns), cur); err != nil {
		t.Fatal(err)
	}
	if _, ok := cur.Labels[wellknown.HeldLabel]; ok {
		t.Errorf("a system namespace was labelled %s", wellknown.HeldLabel)
	}
}
