package main

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rv1 "github.com/flotilla-io/flotilla/api/rollouts/v1alpha1"
)

func TestPendingApproval(t *testing.T) {
	started := metav1.NewTime(time.Unix(100, 0))
	ro := func(stages ...rv1.StageStatus) *rv1.Rollout {
		return &rv1.Rollout{Status: rv1.RolloutStatus{Revision: "new", StableRevision: "old", Stages: stages}}
	}
	tests := []struct {
		name, stage string
		ro          *rv1.Rollout
		want        rv1.Approval
		err         string
	}{
		{"the stage waiting before it opens", "", ro(rv1.StageStatus{Name: "a", Phase: rv1.StageComplete, StartedAt: &started}, rv1.StageStatus{Name: "b", Phase: rv1.StageWaitingForApproval}),
			rv1.Approval{Stage: "b", Gate: rv1.ApprovalBefore, Revision: "new"}, ""},
		{"the stage waiting after it completed", "", ro(rv1.StageStatus{Name: "a", Phase: rv1.StageWaitingForApproval, StartedAt: &started}),
			rv1.Approval{Stage: "a", Gate: rv1.ApprovalAfter, Revision: "new"}, ""},
		{"a named stage, ahead of time", "b", ro(rv1.StageStatus{Name: "a", Phase: rv1.StageProgressing, StartedAt: &started}, rv1.StageStatus{Name: "b", Phase: rv1.StagePending}),
			rv1.Approval{Stage: "b", Gate: rv1.ApprovalBefore, Revision: "new"}, ""},
		{"nothing waits", "", ro(rv1.StageStatus{Name: "a", Phase: rv1.StageProgressing, StartedAt: &started}), rv1.Approval{}, "waits for no approval"},
		{"no such stage", "zz", ro(rv1.StageStatus{Name: "a"}), rv1.Approval{}, `no stage "zz"`},
		{"rolled out", "", &rv1.Rollout{Status: rv1.RolloutStatus{Revision: "x", StableRevision: "x"}}, rv1.Approval{}, "nothing to approve"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pendingApproval(tt.ro, tt.stage)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestRenderRollout(t *testing.T) {
	now := time.Unix(1000, 0)
	started, done := metav1.NewTime(now.Add(-time.Minute)), metav1.NewTime(now.Add(-30*time.Second))
	ro := &rv1.Rollout{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-deployment"}, Status: rv1.RolloutStatus{
		Resource: rv1.ResourceRef{Kind: "Deployment", Name: "web"}, Policy: "RolloutPolicy/web", Phase: rv1.PhaseHalted,
		Revision: "new", StableRevision: "old", MaxUnavailable: ptr.To[int32](2), Unavailable: 1,
		Halt:   &rv1.Halt{Stage: "canary", Cluster: "member1", Reason: "not healthy"},
		Stages: []rv1.StageStatus{{Name: "canary", Phase: rv1.StageFailed, Clusters: []string{"member1"}, StartedAt: &started, CompletedAt: &done}, {Name: "rest", Phase: rv1.StagePending}},
		Clusters: []rv1.ClusterStatus{{Name: "member1", Stage: "canary", Revision: "new", Target: "new", Phase: rv1.ClusterFailed, Health: "Unhealthy", Unavailable: 1},
			{Name: "member2", Stage: "rest", Revision: "old", Target: "old", Phase: rv1.ClusterWaiting, Health: "Healthy"}},
	}}
	out, err := renderRollout(ro, "", now)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Rollout:   shop/web-deployment (Deployment web), RolloutPolicy/web",
		"Phase:     Halted",
		"Revision:  new (stable old)",
		"Halted:    stage canary, cluster member1: not healthy",
		"Budget:    2 unavailable replicas at most across the fleet; 1 now",
		"canary  Failed   member1   60s ago  30s",
		"rest    Pending  (none)    -        -",
		"member1  canary  new       new      Failed   Unhealthy  1",
		"member2  rest    old       old      Waiting  Healthy    0",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}
