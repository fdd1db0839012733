package framework

import (
	"context"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// EventsFor lists the events whose regarding object is the named one.
func EventsFor(ctx context.Context, g Gomega, c client.Client, namespace, kind, name string) []eventsv1.Event {
	list := &eventsv1.EventList{}
	g.Expect(c.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Kind == kind && e.Regarding.Name == name {
			out = append(out, e)
		}
	}
	return out
}
