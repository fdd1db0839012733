package scheduler

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/event"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// A CRD of a group version the member already serves adds a kind, not a group version: the
// bindings waiting for that kind must be scheduled again all the same.
func TestClusterChangedByNewKindOfServedGroupVersion(t *testing.T) {
	served := func(kinds ...string) *clusterv1alpha1.Cluster {
		c := &clusterv1alpha1.Cluster{}
		e := clusterv1alpha1.APIEnablement{GroupVersion: "example.com/v1"}
		for _, k := range kinds {
			e.Resources = append(e.Resources, clusterv1alpha1.APIResource{Name: k + "s", Kind: k})
		}
		c.Status.APIEnablements = []clusterv1alpha1.APIEnablement{e}
		return c
	}
	p := clusterChanged()
	if !p.Update(event.UpdateEvent{ObjectOld: served("Widget"), ObjectNew: served("Widget", "Gadget")}) {
		t.Error("a new kind in a served group version does not wake the scheduler")
	}
	if p.Update(event.UpdateEvent{ObjectOld: served("Widget"), ObjectNew: served("Widget")}) {
		t.Error("unchanged APIs wake the scheduler")
	}
}
