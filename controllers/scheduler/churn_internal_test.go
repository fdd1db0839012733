package scheduler

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/testing/churn"
)

// BenchmarkChurn keeps, per binding, what an unschedulable binding leaves in the scheduler
// (a failed attempt in the backoff, the Scheduled=False memo), then deletes the binding and
// reconciles it: entries-left must be 0 and the heap flat.
//
//	go test -run '^$' -bench Churn -benchtime 3x ./controllers/scheduler/
func BenchmarkChurn(b *testing.B) {
	r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(flotillascheme.New()).Build(),
		NewBinding: func() client.Object { return &workv1alpha2.ResourceBinding{} }}
	ctx := context.Background()
	cond := metav1.Condition{Type: wellknown.ConditionScheduled, Status: metav1.ConditionFalse, Reason: wellknown.ReasonBindingUnschedulable}
	entries := func() int {
		return r.observed.Len() + r.failures.Len()
	}
	churn.Run(b, func(i int) {
		req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("rb-%d", i)}}
		rb := &workv1alpha2.ResourceBinding{}
		rb.Namespace, rb.Name, rb.UID, rb.Generation = req.Namespace, req.Name, types.UID(req.Name), 1
		// As a reconcile of the unschedulable binding would leave it.
		r.failedAttempt(req.NamespacedName)
		r.observed.Store(req.NamespacedName, observedMemo(rb, cond))
		// The binding is deleted; its delete event brings it back.
		if _, err := r.Reconcile(ctx, req); err != nil {
			b.Fatal(err)
		}
	}, entries)
}

func TestRetryDelay(t *testing.T) {
	for failures, want := range map[int]time.Duration{0: 5 * time.Second, 1: 10 * time.Second, 5: 160 * time.Second,
		6: retryMaxDelay, 7: retryMaxDelay, 1000: retryMaxDelay} {
		if got := retryDelay(failures); got != want {
			t.Errorf("retryDelay(%d) = %s, want %s", failures, got, want)
		}
	}
}
