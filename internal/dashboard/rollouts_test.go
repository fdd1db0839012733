package dashboard_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rolloutsv1alpha1 "github.com/flotilla-io/flotilla/api/rollouts/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/dashboard"
)

func TestRolloutRows(t *testing.T) {
	halted := rolloutsv1alpha1.Rollout{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-deployment"}}
	halted.Status = rolloutsv1alpha1.RolloutStatus{
		Resource: rolloutsv1alpha1.ResourceRef{Kind: "Deployment", Namespace: "shop", Name: "web"},
		Phase:    rolloutsv1alpha1.PhaseHalted, Revision: "5d8f7c6b9a41e2", StableRevision: "77aa01",
		Halt:           &rolloutsv1alpha1.Halt{Stage: "canary", Cluster: "member1", Reason: "not healthy within 8s"},
		MaxUnavailable: ptr.To[int32](2), Unavailable: 1,
		Stages: []rolloutsv1alpha1.StageStatus{
			{Name: "canary", Phase: rolloutsv1alpha1.StageFailed, Clusters: []string{"member1"}},
			{Name: "rest", Clusters: []string{"member2", "member3"}},
		},
		Clusters: []rolloutsv1alpha1.ClusterStatus{
			{Name: "member1", Stage: "canary", Revision: "5d8f7c6b9a41e2", Phase: rolloutsv1alpha1.ClusterFailed, Health: "Unhealthy"},
			{Name: "member2", Stage: "rest", Revision: "77aa01", Phase: rolloutsv1alpha1.ClusterWaiting, Health: "Healthy"},
			{Name: "member3", Stage: "rest"},
		},
	}
	fresh := rolloutsv1alpha1.Rollout{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "api"}}
	rows := dashboard.RolloutRows([]rolloutsv1alpha1.Rollout{halted, fresh})
	want := []dashboard.RolloutRow{
		{Namespace: "app", Name: "api", Template: "? api", Phase: "Unknown", Revision: "-", Stable: "-"},
		{
			Namespace: "shop", Name: "web-deployment", Template: "Deployment web", Phase: "Halted",
			Revision: "5d8f7c6b9a", Stable: "77aa01", Halt: "stage canary, cluster member1: not healthy within 8s", Budget: "1/2",
			Stages: []dashboard.RolloutStage{{Name: "canary", Phase: "Failed", Clusters: 1}, {Name: "rest", Phase: "Pending", Clusters: 2}},
			Clusters: []dashboard.RolloutCluster{
				{Name: "member1", Stage: "canary", Revision: "5d8f7c6b9a", Phase: "Failed", Health: "Unhealthy", Current: true},
				{Name: "member2", Stage: "rest", Revision: "77aa01", Phase: "Waiting", Health: "Healthy"},
				{Name: "member3", Stage: "rest", Revision: "-", Phase: "Waiting", Health: "-"},
			},
		},
	}
	if d := cmp.Diff(want, rows); d != "" {
		t.Fatalf("RolloutRows (-want +got):\n%s", d)
	}
	if got := []string{rows[1].Clusters[0].State(), rows[1].Clusters[1].State()}; got[0] != "bad" || got[1] != "pending" {
		t.Errorf("states %v, want bad, pending", got)
	}

	var out bytes.Buffer
	if err := dashboard.RenderFleet(&out, dashboard.View{Rollouts: rows, Updated: now}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`data-rollout="shop/web-deployment"`, "Halted: stage canary, cluster member1: not healthy within 8s",
		`data-stage="canary"`, "member1 [canary]: 5d8f7c6b9a (new) · Failed · Unhealthy", "1/2"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("the page lacks %q:\n%s", s, out.String())
		}
	}

	out.Reset()
	if err := dashboard.RenderFleet(&out, dashboard.View{RolloutsOff: "rollouts are not shown: forbidden", Updated: now}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "rollouts are not shown: forbidden") {
		t.Errorf("the page does not say why rollouts are missing:\n%s", out.String())
	}
}
