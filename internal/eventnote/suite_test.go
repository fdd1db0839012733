package eventnote_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/internal/eventnote"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

var env *fleettest.Env

func TestEventNotes(t *testing.T) {
	fleettest.RunSuite(t, "Event note suite", "a host cluster")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	env = fleettest.Start(ctx, fleettest.Options{Name: "eventnote"})
}, NodeTimeout(3*time.Minute))

var _ = Describe("a manager wrapped by eventnote.Manager", func() {
	It("records an Event whose note is longer than the events API accepts, shortened", func(ctx context.Context) {
		mgr := env.NewManager() // fleettest wraps it as main.go does
		fleettest.StartManager(mgr)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "long-note"}}
		Expect(env.Host.Create(ctx, cm)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Host.Delete(ctx, cm))).To(Succeed()) })

		// A member's answer quoted whole: a /readyz report, a webhook's refusal.
		note := "member did not answer: " + strings.Repeat("[-]etcd failed: reason withheld ", 100)
		mgr.GetEventRecorder("eventnote-test").Eventf(cm, nil, corev1.EventTypeWarning, "Long", "Test", "%s 100%% of the time", note)

		var got eventsv1.Event
		Eventually(func(g Gomega) {
			evs := env.Events(ctx, g, cm)
			g.Expect(evs).To(HaveLen(1))
			got = evs[0]
		}).WithContext(ctx).Should(Succeed())
		Expect(got.Note).To(HaveLen(eventnote.MaxLength))
		Expect(got.Note).To(HavePrefix("member did not answer: [-]etcd failed"))
		Expect(got.Note).To(HaveSuffix(" …"))
		Expect(got.Reason).To(Equal("Long"))
	})
})
