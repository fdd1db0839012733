package descheduler

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"

	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

func TestReadyByCluster(t *testing.T) {
	item := func(cluster, raw string) workv1alpha2.AggregatedStatusItem {
		it := workv1alpha2.AggregatedStatusItem{ClusterName: cluster}
		if raw != "" {
			it.Status = &runtime.RawExtension{Raw: []byte(raw)}
		}
		return it
	}
	status := &workv1alpha2.ResourceBindingStatus{AggregatedStatus: []workv1alpha2.AggregatedStatusItem{
		item("steady", `{"replicas":4,"updatedReplicas":4,"readyReplicas":3}`),
		item("rolling", `{"replicas":4,"updatedReplicas":2,"readyReplicas":4}`),
		item("none-ready", `{"replicas":2,"updatedReplicas":2}`),
		item("none-updated", `{"replicas":2,"readyReplicas":2}`), // a Deployment leaves 0 out
		item("unreported", ""),
		item("garbled", `{"readyReplicas":"three"}`),
	}}
	ready, rolling := readyByCluster(status, true)
	if diff := cmp.Diff(map[string]int32{"steady": 3, "rolling": 4, "none-ready": 0, "none-updated": 2}, ready); diff != "" {
		t.Errorf("ready (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]bool{"rolling": true, "none-updated": true}, rolling); diff != "" {
		t.Errorf("rolling (-want +got):\n%s", diff)
	}
	// A ReplicaSet has no updatedReplicas.
	if _, rolling := readyByCluster(status, false); rolling["none-updated"] {
		t.Error("a ReplicaSet's status without updatedReplicas taken for a rollout")
	}
}
