package rollout

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	rv1 "github.com/flotilla-io/flotilla/api/rollouts/v1alpha1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) *metav1.Time { t := metav1.NewTime(t0.Add(d)); return &t }

// on is a cluster whose Work carries rev, applied, with the given health.
func on(name, rev, health string) Cluster {
	return Cluster{Name: name, WorkRevision: rev, Applied: true, Health: health, Replicas: 4}
}

func twoStages() rv1.RolloutPolicySpec {
	return rv1.RolloutPolicySpec{Stages: []rv1.Stage{
		{Name: "canary", Clusters: &rv1.StageClusters{Names: []string{"m1"}}, Soak: &metav1.Duration{Duration: time.Minute},
			HealthGate: &rv1.HealthGate{ProgressDeadline: &metav1.Duration{Duration: 5 * time.Minute}}},
		{Name: "rest"},
	}}
}

// progressing is the status of revision "new" over stable "old" as Plan left it.
func progressing(clusters ...rv1.ClusterStatus) rv1.RolloutStatus {
	return rv1.RolloutStatus{Revision: "new", StableRevision: "old", Clusters: clusters,
		Stages: []rv1.StageStatus{{Name: "canary", StartedAt: at(0)}}}
}

func targets(st rv1.RolloutStatus) map[string]string {
	out := map[string]string{}
	for _, c := range st.Clusters {
		out[c.Name] = c.Target
	}
	return out
}

func reasons(evs []Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Reason)
	}
	return out
}

func TestPlan(t *testing.T) {
	fleet := []Cluster{on("m1", "old", "Healthy"), on("m2", "old", "Healthy"), on("m3", "old", "Healthy")}
	started := rv1.ClusterStatus{Name: "m1", Target: "new", StartedAt: at(0), ObservedGenerationBefore: 3}
	tests := []struct {
		name        string
		in          Input
		phase       rv1.Phase
		targets     map[string]string
		events      []string
		promoted    bool
		halted      bool
		requeue     time.Duration
		stagePhases []rv1.StagePhase
	}{{
		name:     "first revision seen is the stable one, everywhere",
		in:       Input{Spec: twoStages(), Revision: "old", Clusters: fleet},
		phase:    rv1.PhaseComplete,
		targets:  map[string]string{"m1": "old", "m2": "old", "m3": "old"},
		promoted: true,
	}, {
		name:        "a new revision opens the first stage only",
		in:          Input{Spec: twoStages(), Revision: "new", Prev: rv1.RolloutStatus{Revision: "old", StableRevision: "old"}, Clusters: fleet},
		phase:       rv1.PhaseProgressing,
		targets:     map[string]string{"m1": "new", "m2": "old", "m3": "old"},
		events:      []string{rv1.EventStageStarted},
		requeue:     5 * time.Minute,
		stagePhases: []rv1.StagePhase{rv1.StageProgressing, rv1.StagePending},
	}, {
		name: "health reported before the member saw the new spec does not count",
		in: Input{Spec: twoStages(), Revision: "new", Now: t0.Add(2 * time.Minute), Prev: progressing(started),
			Clusters: []Cluster{{Name: "m1", WorkRevision: "new", Applied: true, Health: "Healthy", ObservedGeneration: 3}, fleet[1], fleet[2]}},
		phase:       rv1.PhaseProgressing,
		targets:     map[string]string{"m1": "new", "m2": "old", "m3": "old"},
		requeue:     3 * time.Minute,
		stagePhases: []rv1.StagePhase{rv1.StageProgressing, rv1.StagePending},
	}, {
		name: "healthy canary soaks",
		in: Input{Spec: twoStages(), Revision: "new", Now: t0.Add(2 * time.Minute), Prev: progressing(started),
			Clusters: []Cluster{{Name: "m1", WorkRevision: "new", Applied: true, Health: "Healthy", ObservedGeneration: 4}, fleet[1], fleet[2]}},
		phase:       rv1.PhaseProgressing,
		targets:     map[string]string{"m1": "new", "m2": "old", "m3": "old"},
		requeue:     time.Minute,
		stagePhases: []rv1.StagePhase{rv1.StageProgressing, rv1.StagePending},
	}, {
		name: "soaked canary completes its stage and opens the next",
		in: Input{Spec: twoStages(), Revision: "new", Now: t0.Add(3 * time.Minute), Prev: progressing(rv1.ClusterStatus{Name: "m1", Target: "new", StartedAt: at(0), HealthySince: at(time.Minute)}),
			Clusters: []Cluster{on("m1", "new", "Healthy"), fleet[1], fleet[2]}},
		phase:       rv1.PhaseProgressing,
		targets:     map[string]string{"m1": "new", "m2": "new", "m3": "new"},
		events:      []string{rv1.EventStageCompleted, rv1.EventStageStarted},
		requeue:     10 * time.Minute,
		stagePhases: []rv1.StagePhase{rv1.StageComplete, rv1.StageProgressing},
	}, {
		name: "an approval gate holds the next stage",
		in: Input{Spec: withApproval(twoStages(), 1, rv1.ApprovalBefore), Revision: "new", Now: t0.Add(3 * time.Minute),
			Prev:     progressing(rv1.ClusterStatus{Name: "m1", Target: "new", StartedAt: at(0), HealthySince: at(time.Minute)}),
			Clusters: []Cluster{on("m1", "new", "Healthy"), fleet[1], fleet[2]}},
		phase:       rv1.PhaseWaitingForApproval,
		targets:     map[string]string{"m1": "new", "m2": "old", "m3": "old"},
		events:      []string{rv1.EventStageCompleted, rv1.EventWaitingApproval},
		stagePhases: []rv1.StagePhase{rv1.StageComplete, rv1.StageWaitingForApproval},
	}, {
		name: "an approval of another revision does not count; of this one it does",
		in: Input{Spec: withApproval(twoStages(), 1, rv1.ApprovalBefore), Revision: "new", Now: t0.Add(3 * time.Minute),
			Control:  rv1.RolloutSpec{Approvals: []rv1.Approval{{Stage: "rest", Gate: rv1.ApprovalBefore, Revision: "older"}, {Stage: "rest", Gate: rv1.ApprovalBefore, Revision: "new"}}},
			Prev:     progressing(rv1.ClusterStatus{Name: "m1", Target: "new", StartedAt: at(0), HealthySince: at(time.Minute)}),
			Clusters: []Cluster{on("m1", "new", "Healthy"), fleet[1], fleet[2]}},
		phase:       rv1.PhaseProgressing,
		targets:     map[string]string{"m1": "new", "m2": "new", "m3": "new"},
		events:      []string{rv1.EventStageCompleted, rv1.EventStageStarted},
		requeue:     10 * time.Minute,
		stagePhases: []rv1.StagePhase{rv1.StageComplete, rv1.StageProgressing},
	}, {
		name: "a missed deadline halts with the other clusters on the stable revision",
		in: Input{Spec: twoStages(), Revision: "new", Now: t0.Add(6 * time.Minute), Prev: progressing(started),
			Clusters: []Cluster{on("m1", "new", "Unhealthy"), fleet[1], fleet[2]}},
		phase:       rv1.PhaseHalted,
		targets:     map[string]string{"m1": "new", "m2": "old", "m3": "old"},
		events:      []string{rv1.EventHalted},
		halted:      true,
		stagePhases: []rv1.StagePhase{rv1.StageFailed, rv1.StagePending},
	}, {
		name: "onFailure Rollback returns the started clusters to the stable revision",
		in: Input{Spec: rollback(twoStages()), Revision: "new", Now: t0.Add(6 * time.Minute), Prev: progressing(started),
			Clusters: []Cluster{on("m1", "new", "Unhealthy"), fleet[1], fleet[2]}},
		phase:   rv1.PhaseRolledBack,
		targets: map[string]string{"m1": "old", "m2": "old", "m3": "old"},
		events:  []string{rv1.EventHalted, rv1.EventRolledBack},
		halted:  true,
	}, {
		name: "a halt is kept: nothing opens",
		in: Input{Spec: twoStages(), Revision: "new", Now: t0.Add(7 * time.Minute),
			Prev:     withHalt(progressing(started)),
			Clusters: []Cluster{on("m1", "new", "Healthy"), fleet[1], fleet[2]}},
		phase:       rv1.PhaseHalted,
		targets:     map[string]string{"m1": "new", "m2": "old", "m3": "old"},
		stagePhases: []rv1.StagePhase{rv1.StageFailed, rv1.StagePending},
	}, {
		name: "undo rolls the revision back",
		in: Input{Spec: twoStages(), Revision: "new", Control: rv1.RolloutSpec{Undo: "new"}, Prev: withHalt(progressing(started)),
			Clusters: []Cluster{on("m1", "new", "Unhealthy"), fleet[1], fleet[2]}},
		phase:   rv1.PhaseRolledBack,
		targets: map[string]string{"m1": "old", "m2": "old", "m3": "old"},
		events:  []string{rv1.EventRolledBack},
	}, {
		name: "a new edit supersedes: clusters on the superseded revision take it at once",
		in: Input{Spec: twoStages(), Revision: "newer", Prev: progressing(started),
			Clusters: []Cluster{fleet[0], on("m2", "new", "Healthy"), fleet[2]}},
		phase:       rv1.PhaseProgressing,
		targets:     map[string]string{"m1": "newer", "m2": "newer", "m3": "old"},
		events:      []string{rv1.EventSuperseded, rv1.EventStageStarted},
		requeue:     5 * time.Minute,
		stagePhases: []rv1.StagePhase{rv1.StageProgressing, rv1.StagePending},
	}, {
		name:        "paused opens nothing",
		in:          Input{Spec: twoStages(), Revision: "new", Control: rv1.RolloutSpec{Paused: true}, Prev: rv1.RolloutStatus{Revision: "old", StableRevision: "old"}, Clusters: fleet},
		phase:       rv1.PhasePaused,
		targets:     map[string]string{"m1": "old", "m2": "old", "m3": "old"},
		stagePhases: []rv1.StagePhase{rv1.StagePending, rv1.StagePending},
	}, {
		name: "a stage that picks no cluster is reported and passed",
		in: Input{Spec: rv1.RolloutPolicySpec{Stages: []rv1.Stage{{Name: "eu", Clusters: &rv1.StageClusters{Names: []string{"nope"}}}, {Name: "rest"}}},
			Revision: "new", Prev: rv1.RolloutStatus{Revision: "old", StableRevision: "old"}, Clusters: fleet},
		phase:       rv1.PhaseProgressing,
		targets:     map[string]string{"m1": "new", "m2": "new", "m3": "new"},
		events:      []string{rv1.EventStageEmpty, rv1.EventStageStarted},
		requeue:     DefaultProgressDeadline,
		stagePhases: []rv1.StagePhase{rv1.StageEmpty, rv1.StageProgressing},
	}, {
		name: "every stage done promotes the revision",
		in: Input{Spec: rv1.RolloutPolicySpec{Stages: []rv1.Stage{{Name: "all"}}}, Revision: "new", Now: t0.Add(time.Minute),
			Prev: rv1.RolloutStatus{Revision: "new", StableRevision: "old", Stages: []rv1.StageStatus{{Name: "all", StartedAt: at(0)}},
				Clusters: []rv1.ClusterStatus{{Name: "m1", Target: "new", StartedAt: at(0)}, {Name: "m2", Target: "new", StartedAt: at(0)}, {Name: "m3", Target: "new", StartedAt: at(0)}}},
			Clusters: []Cluster{on("m1", "new", "Healthy"), on("m2", "new", "Healthy"), on("m3", "new", "Healthy")}},
		phase:       rv1.PhaseComplete,
		targets:     map[string]string{"m1": "new", "m2": "new", "m3": "new"},
		events:      []string{rv1.EventStageCompleted, rv1.EventComplete},
		promoted:    true,
		stagePhases: []rv1.StagePhase{rv1.StageComplete},
	}, {
		name: "the fleet budget opens one cluster at a time, with the room left",
		in: Input{Spec: rv1.RolloutPolicySpec{MaxUnavailable: ptr.To(intstr.FromInt32(2)), Stages: []rv1.Stage{{Name: "all"}}},
			Revision: "new", TotalReplicas: 12, Prev: rv1.RolloutStatus{Revision: "old", StableRevision: "old"}, Clusters: fleet},
		phase:       rv1.PhaseProgressing,
		targets:     map[string]string{"m1": "new", "m2": "old", "m3": "old"},
		events:      []string{rv1.EventStageStarted},
		requeue:     DefaultProgressDeadline,
		stagePhases: []rv1.StagePhase{rv1.StageProgressing},
	}, {
		name: "unavailable replicas elsewhere leave the budget no room",
		in: Input{Spec: rv1.RolloutPolicySpec{MaxUnavailable: ptr.To(intstr.FromInt32(2)), Stages: []rv1.Stage{{Name: "all"}}},
			Revision: "new", TotalReplicas: 12, Prev: rv1.RolloutStatus{Revision: "old", StableRevision: "old"},
			Clusters: []Cluster{fleet[0], fleet[1], {Name: "m3", WorkRevision: "old", Applied: true, Health: "Unhealthy", Replicas: 4, Unavailable: 2}}},
		phase:       rv1.PhaseProgressing,
		targets:     map[string]string{"m1": "old", "m2": "old", "m3": "old"},
		events:      []string{rv1.EventStageStarted},
		stagePhases: []rv1.StagePhase{rv1.StageProgressing},
	}, {
		name: "under a budget, a cluster just healthy holds its share until it settled",
		in: Input{Spec: rv1.RolloutPolicySpec{MaxUnavailable: ptr.To(intstr.FromInt32(2)), Stages: []rv1.Stage{{Name: "all"}}},
			Revision: "new", TotalReplicas: 12, Now: t0.Add(time.Second),
			Prev: rv1.RolloutStatus{Revision: "new", StableRevision: "old", Stages: []rv1.StageStatus{{Name: "all", StartedAt: at(0)}},
				Clusters: []rv1.ClusterStatus{{Name: "m1", Target: "new", StartedAt: at(0), HealthySince: at(time.Second), MaxUnavailable: ptr.To[int32](2)}}},
			Clusters: []Cluster{on("m1", "new", "Healthy"), fleet[1], fleet[2]}},
		phase:       rv1.PhaseProgressing,
		targets:     map[string]string{"m1": "new", "m2": "old", "m3": "old"},
		requeue:     BudgetSettle,
		stagePhases: []rv1.StagePhase{rv1.StageProgressing},
	}, {
		name: "under a budget, a settled cluster gives its share to the next",
		in: Input{Spec: rv1.RolloutPolicySpec{MaxUnavailable: ptr.To(intstr.FromInt32(2)), Stages: []rv1.Stage{{Name: "all"}}},
			Revision: "new", TotalReplicas: 12, Now: t0.Add(3 * time.Second),
			Prev: rv1.RolloutStatus{Revision: "new", StableRevision: "old", Stages: []rv1.StageStatus{{Name: "all", StartedAt: at(0)}},
				Clusters: []rv1.ClusterStatus{{Name: "m1", Target: "new", StartedAt: at(0), HealthySince: at(time.Second), MaxUnavailable: ptr.To[int32](2)}}},
			Clusters: []Cluster{on("m1", "new", "Healthy"), fleet[1], fleet[2]}},
		phase:       rv1.PhaseProgressing,
		targets:     map[string]string{"m1": "new", "m2": "new", "m3": "old"},
		requeue:     DefaultProgressDeadline,
		stagePhases: []rv1.StagePhase{rv1.StageProgressing},
	}, {
		name: "maxConcurrency opens that many clusters of a stage",
		in: Input{Spec: rv1.RolloutPolicySpec{Stages: []rv1.Stage{{Name: "all", MaxConcurrency: ptr.To(intstr.FromString("50%"))}}},
			Revision: "new", Prev: rv1.RolloutStatus{Revision: "old", StableRevision: "old"}, Clusters: fleet},
		phase:       rv1.PhaseProgressing,
		targets:     map[string]string{"m1": "new", "m2": "new", "m3": "old"},
		events:      []string{rv1.EventStageStarted},
		requeue:     DefaultProgressDeadline,
		stagePhases: []rv1.StagePhase{rv1.StageProgressing},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.in.Now.IsZero() {
				tt.in.Now = t0
			}
			got := Plan(tt.in)
			if got.Status.Phase != tt.phase {
				t.Errorf("phase = %s, want %s", got.Status.Phase, tt.phase)
			}
			if d := cmp.Diff(tt.targets, targets(got.Status)); d != "" {
				t.Errorf("targets (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.events, reasons(got.Events)); d != "" {
				t.Errorf("events (-want +got):\n%s\n%v", d, got.Events)
			}
			if got.Promoted != tt.promoted || got.Halted != tt.halted {
				t.Errorf("promoted, halted = %v, %v; want %v, %v", got.Promoted, got.Halted, tt.promoted, tt.halted)
			}
			if got.RequeueAfter != tt.requeue {
				t.Errorf("requeue = %s, want %s", got.RequeueAfter, tt.requeue)
			}
			if tt.stagePhases != nil {
				var phases []rv1.StagePhase
				for _, s := range got.Status.Stages {
					phases = append(phases, s.Phase)
				}
				if d := cmp.Diff(tt.stagePhases, phases); d != "" {
					t.Errorf("stage phases (-want +got):\n%s", d)
				}
			}
		})
	}
}

func TestPlanBudgetShare(t *testing.T) {
	got := Plan(Input{Spec: rv1.RolloutPolicySpec{MaxUnavailable: ptr.To(intstr.FromString("25%")), Stages: []rv1.Stage{{Name: "all"}}},
		Now: t0, Revision: "new", TotalReplicas: 12, Prev: rv1.RolloutStatus{Revision: "old", StableRevision: "old"},
		Clusters: []Cluster{on("m1", "old", "Healthy"), on("m2", "old", "Healthy"), on("m3", "old", "Healthy")}})
	if got.Status.MaxUnavailable == nil || *got.Status.MaxUnavailable != 3 {
		t.Fatalf("budget = %v, want 3", got.Status.MaxUnavailable)
	}
	// m1 takes 3 of the budget's 3; nothing is left for m2.
	if c := got.Status.Clusters[0]; c.Target != "new" || ptrDeref(c.MaxUnavailable) != 3 {
		t.Errorf("m1 = %+v", c)
	}
	if c := got.Status.Clusters[1]; c.Target != "old" {
		t.Errorf("m2 = %+v", c)
	}
}

func withApproval(s rv1.RolloutPolicySpec, i int, g rv1.ApprovalGate) rv1.RolloutPolicySpec {
	s.Stages[i].Approval = g
	return s
}

func rollback(s rv1.RolloutPolicySpec) rv1.RolloutPolicySpec {
	s.OnFailure = rv1.FailureRollback
	return s
}

func withHalt(st rv1.RolloutStatus) rv1.RolloutStatus {
	st.Halt = &rv1.Halt{Revision: "new", Stage: "canary", Cluster: "m1", Reason: "x", At: *at(5 * time.Minute)}
	return st
}

func TestAssign(t *testing.T) {
	cl := []Cluster{{Name: "d"}, {Name: "a", Labels: map[string]string{"env": "canary"}}, {Name: "c"}, {Name: "b"}, {Name: "e", Labels: map[string]string{"env": "canary"}}}
	tests := []struct {
		name   string
		stages []rv1.Stage
		want   [][]string
	}{
		{"by label, then the rest", []rv1.Stage{{Name: "x", Clusters: &rv1.StageClusters{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "canary"}}}}, {Name: "y"}},
			[][]string{{"a", "e"}, {"b", "c", "d"}}},
		{"percent of the placement, rounded up, in name order", []rv1.Stage{{Name: "x", Clusters: &rv1.StageClusters{Percent: ptr.To[int32](30)}}, {Name: "y", Clusters: &rv1.StageClusters{Percent: ptr.To[int32](30)}}, {Name: "z"}},
			[][]string{{"a", "b"}, {"c", "d"}, {"e"}}},
		{"names; clusters no stage picks join the last", []rv1.Stage{{Name: "x", Clusters: &rv1.StageClusters{Names: []string{"c", "zz"}}}, {Name: "y", Clusters: &rv1.StageClusters{Names: []string{"a"}}}},
			[][]string{{"c"}, {"a", "b", "d", "e"}}},
		{"a stage after one that took everything is empty", []rv1.Stage{{Name: "x"}, {Name: "y"}}, [][]string{{"a", "b", "c", "d", "e"}, nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, Assign(tt.stages, cl)); d != "" {
				t.Error(d)
			}
		})
	}
}
