package clusterlocality

import (
	"testing"

	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
	"github.com/flotilla-io/flotilla/pkg/scheduler/framework"
)

func TestScore(t *testing.T) {
	spec := st.Deployment(2)
	if s, _ := New().NewScorer(st.State(spec)); s != nil {
		t.Errorf("NewScorer() for an unscheduled binding = non-nil, want nil")
	}
	spec.Clusters = []workv1alpha2.TargetCluster{{Name: "m1", Replicas: 2}}
	score, err := New().NewScorer(st.State(spec))
	if err != nil {
		t.Fatal(err)
	}
	if got := score(st.NewCluster("m1")); got != framework.MaxScore {
		t.Errorf("score(m1) = %d, want %d", got, framework.MaxScore)
	}
	if got := score(st.NewCluster("m2")); got != 0 {
		t.Errorf("score(m2) = %d, want 0", got)
	}
}
