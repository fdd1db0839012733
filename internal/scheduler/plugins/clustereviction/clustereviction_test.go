package clustereviction

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

func TestFilter(t *testing.T) {
	spec := st.Deployment(1)
	spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{{FromCluster: "failed", Producer: "test"}}
	got, err := st.Reasons(New(), st.State(spec), st.NewCluster("failed"), st.NewCluster("healthy"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"failed": ReasonEvicting, "healthy": ""}, got); diff != "" {
		t.Errorf("reasons mismatch (-want +got):\n%s", diff)
	}
}
