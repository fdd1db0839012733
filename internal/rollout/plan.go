// Package rollout is the pure core of progressive rollouts (rollouts.flotilla.io): Plan
// decides, from a rollout policy, the operator's controls, the previous state and what each
// cluster's Work reports, which revision each cluster may run; Revision and Compose say what a
// revision is and how a cluster's template is made from it. Nothing here reads or writes the
// API: controllers/rollout does, and the binding controller renders Works from the result.
package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	rolloutsv1alpha1 "github.com/flotilla-io/flotilla/api/rollouts/v1alpha1"
)

// DefaultProgressDeadline is a stage's progress deadline when its policy sets no health gate.
const DefaultProgressDeadline = 10 * time.Minute

// Cluster is what Plan knows of one cluster of the placement.
type Cluster struct {
	Name   string
	Labels map[string]string
	// Replicas the cluster runs (its Work's), 0 for kinds without replicas.
	Replicas int32
	// WorkRevision is the revision label of its Work ("" without a Work).
	WorkRevision string
	// Applied: the Work's Applied condition is True for its current generation.
	Applied bool
	// Health of the member objects, as the Work reports it ("" when none is reported).
	Health string
	// Unavailable replicas its member objects report.
	Unavailable int32
	// ObservedGeneration is the highest status.observedGeneration its member objects
	// report (0 when their kinds report none).
	ObservedGeneration int64
}

// Input is everything Plan decides from.
type Input struct {
	Now time.Time
	// Spec is the policy in force.
	Spec rolloutsv1alpha1.RolloutPolicySpec
	// Control is the Rollout's spec (pause, approvals, undo).
	Control rolloutsv1alpha1.RolloutSpec
	// Revision is the template's current revision.
	Revision string
	// Prev is the Rollout's status as last written.
	Prev rolloutsv1alpha1.RolloutStatus
	// Clusters of the placement.
	Clusters []Cluster
	// TotalReplicas of the template across the fleet (the base of a percent maxUnavailable).
	TotalReplicas int32
}

// Event is something to tell on the template's Rollout.
type Event struct {
	Warning         bool
	Reason, Message string
}

// StageTime is a stage that completed: how long it took.
type StageTime struct {
	Stage    string
	Duration time.Duration
}

// Result is Plan's answer.
type Result struct {
	// Status to write (StableTemplate, Resource and Policy are the caller's).
	Status rolloutsv1alpha1.RolloutStatus
	// Promoted: Revision became the stable revision now (the caller stores its template).
	Promoted bool
	Events   []Event
	// Completed are the stages completed now.
	Completed []StageTime
	// Halted: a health gate failed now.
	Halted bool
	// RequeueAfter is when a deadline or a soak ends (0: nothing timed).
	RequeueAfter time.Duration
}

// Plan decides which revision each cluster may run.
func Plan(in Input) Result {
	// Times are stored with a resolution of a second: a time recorded now is rounded up, so
	// that a soak or a deadline measured from it is never shorter than asked.
	p := planner{in: in, now: metav1.NewTime(ceilSecond(in.Now))}
	return p.plan()
}

type planner struct {
	in  Input
	now metav1.Time
	out Result
}

func (p *planner) event(warning bool, reason, format string, args ...any) {
	p.out.Events = append(p.out.Events, Event{Warning: warning, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

func (p *planner) plan() Result {
	in, prev := p.in, p.in.Prev
	clusters := slices.Clone(in.Clusters)
	slices.SortFunc(clusters, func(a, b Cluster) int { return strings.Compare(a.Name, b.Name) })
	st := rolloutsv1alpha1.RolloutStatus{
		Revision: in.Revision, StableRevision: prev.StableRevision, Conditions: slices.Clone(prev.Conditions),
	}
	if prev.RolledBack == in.Revision {
		st.RolledBack = prev.RolledBack
	}
	if st.StableRevision == "" {
		// The first revision seen: there is no earlier one to keep, it is the stable one.
		st.StableRevision = in.Revision
		p.out.Promoted = true
	}
	stable, rev := st.StableRevision, in.Revision
	var unavailable int32
	for _, c := range clusters {
		unavailable += c.Unavailable
	}
	st.Unavailable = unavailable
	switch {
	case rev == stable:
		st.Phase = rolloutsv1alpha1.PhaseComplete
		if prev.Revision == rev {
			st.Stages = prev.Stages
		}
		st.Clusters = p.settled(clusters, stable)
		p.setConditions(&st, metav1.ConditionFalse, rolloutsv1alpha1.ReasonRolloutComplete, fmt.Sprintf("Every cluster may run revision %s", rev), nil)
	case st.RolledBack == rev || in.Control.Undo == rev:
		p.rollBack(&st, clusters, "rollout undo")
	default:
		p.progress(&st, clusters)
	}
	p.out.Status = st
	return p.out
}

// settled gives every cluster the stable revision.
func (p *planner) settled(clusters []Cluster, stable string) []rolloutsv1alpha1.ClusterStatus {
	out := make([]rolloutsv1alpha1.ClusterStatus, 0, len(clusters))
	for _, c := range clusters {
		phase := rolloutsv1alpha1.ClusterDone
		if c.WorkRevision != stable {
			phase = rolloutsv1alpha1.ClusterProgressing
		}
		out = append(out, rolloutsv1alpha1.ClusterStatus{Name: c.Name, Revision: c.WorkRevision, Target: stable, Phase: phase,
			Health: c.Health, Unavailable: c.Unavailable, Stage: p.prevStage(c.Name)})
	}
	return out
}

func (p *planner) prevStage(name string) string {
	for _, c := range p.in.Prev.Clusters {
		if c.Name == name {
			return c.Stage
		}
	}
	return ""
}

func (p *planner) rollBack(st *rolloutsv1alpha1.RolloutStatus, clusters []Cluster, why string) {
	rev := p.in.Revision
	if p.in.Prev.RolledBack != rev {
		p.event(true, rolloutsv1alpha1.EventRolledBack, "Revision %s rolled back to %s (%s)", rev, st.StableRevision, why)
	}
	st.RolledBack = rev
	st.Phase = rolloutsv1alpha1.PhaseRolledBack
	if p.in.Prev.Revision == rev {
		st.Stages = p.in.Prev.Stages
		st.Halt = p.in.Prev.Halt
	}
	st.Clusters = p.settled(clusters, st.StableRevision)
	p.setConditions(st, metav1.ConditionFalse, rolloutsv1alpha1.ReasonRolledBack,
		fmt.Sprintf("Revision %s was rolled back (%s); every cluster returns to %s until the template changes", rev, why, st.StableRevision), st.Halt)
}

func (p *planner) setConditions(st *rolloutsv1alpha1.RolloutStatus, progressing metav1.ConditionStatus, reason, msg string, halt *rolloutsv1alpha1.Halt) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: rolloutsv1alpha1.ConditionProgressing, Status: progressing, Reason: reason, Message: msg})
	h := metav1.Condition{Type: rolloutsv1alpha1.ConditionHalted, Status: metav1.ConditionFalse, Reason: rolloutsv1alpha1.ReasonNotHalted, Message: "No health gate failed"}
	if halt != nil {
		h.Status, h.Reason = metav1.ConditionTrue, rolloutsv1alpha1.ReasonProgressDeadlineExceeded
		h.Message = fmt.Sprintf("Stage %s: cluster %s: %s", halt.Stage, halt.Cluster, halt.Reason)
	}
	meta.SetStatusCondition(&st.Conditions, h)
}

// stage is a stage and the clusters it picked.
type stage struct {
	spec     rolloutsv1alpha1.Stage
	clusters []string
}

// Assign gives each cluster (in name order) a stage: each stage picks among the clusters no
// earlier stage picked; the last stage takes those no stage picked.
func Assign(stages []rolloutsv1alpha1.Stage, clusters []Cluster) [][]string {
	names := make([]string, 0, len(clusters))
	byName := map[string]Cluster{}
	for _, c := range clusters {
		names = append(names, c.Name)
		byName[c.Name] = c
	}
	slices.Sort(names)
	taken := map[string]bool{}
	out := make([][]string, len(stages))
	for i, s := range stages {
		var picked []string
		var want int
		if s.Clusters != nil && s.Clusters.Percent != nil {
			want = int((int64(*s.Clusters.Percent)*int64(len(names)) + 99) / 100)
		}
		var sel labels.Selector
		if s.Clusters != nil && s.Clusters.LabelSelector != nil {
			var err error
			if sel, err = metav1.LabelSelectorAsSelector(s.Clusters.LabelSelector); err != nil {
				sel = labels.Nothing()
			}
		}
		for _, n := range names {
			if taken[n] {
				continue
			}
			ok := false
			switch {
			case s.Clusters == nil:
				ok = true
			case len(s.Clusters.Names) > 0:
				ok = slices.Contains(s.Clusters.Names, n)
			case sel != nil:
				ok = sel.Matches(labels.Set(byName[n].Labels))
			case s.Clusters.Percent != nil:
				ok = len(picked) < want
			}
			if ok {
				picked = append(picked, n)
				taken[n] = true
			}
		}
		out[i] = picked
	}
	if len(stages) > 0 {
		for _, n := range names {
			if !taken[n] {
				out[len(stages)-1] = append(out[len(stages)-1], n)
			}
		}
	}
	return out
}

func (p *planner) approved(stageName string, gate rolloutsv1alpha1.ApprovalGate) bool {
	return slices.ContainsFunc(p.in.Control.Approvals, func(a rolloutsv1alpha1.Approval) bool {
		return a.Stage == stageName && a.Gate == gate && a.Revision == p.in.Revision
	})
}

func (p *planner) since(t *metav1.Time) time.Duration {
	if t == nil {
		return 0
	}
	return p.in.Now.Sub(t.Time)
}

func (p *planner) requeue(d time.Duration) {
	if d <= 0 {
		d = time.Second
	}
	if p.out.RequeueAfter == 0 || d < p.out.RequeueAfter {
		p.out.RequeueAfter = d
	}
}

// progress rolls the revision out stage by stage.
func (p *planner) progress(st *rolloutsv1alpha1.RolloutStatus, clusters []Cluster) {
	in, prev := p.in, p.in.Prev
	rev, stable := in.Revision, st.StableRevision
	same := prev.Revision == rev
	if !same && prev.Revision != "" && prev.Revision != prev.StableRevision && prev.RolledBack != prev.Revision {
		p.event(false, rolloutsv1alpha1.EventSuperseded, "Revision %s superseded by %s: the rollout starts again from the first stage", prev.Revision, rev)
	}
	prevC := map[string]rolloutsv1alpha1.ClusterStatus{}
	prevS := map[string]rolloutsv1alpha1.StageStatus{}
	var halt *rolloutsv1alpha1.Halt
	if same {
		for _, c := range prev.Clusters {
			prevC[c.Name] = c
		}
		for _, s := range prev.Stages {
			prevS[s.Name] = s
		}
		if prev.Halt != nil && prev.Halt.Revision == rev {
			halt = prev.Halt.DeepCopy()
		}
	}
	byName := map[string]Cluster{}
	for _, c := range clusters {
		byName[c.Name] = c
	}
	// Every cluster's record for this revision, as things stand.
	recs := map[string]*rolloutsv1alpha1.ClusterStatus{}
	healthy := map[string]bool{}
	var budget, used int32
	withBudget := in.Spec.MaxUnavailable != nil
	if withBudget {
		total := int(in.TotalReplicas)
		b, err := intstr.GetScaledValueFromIntOrPercent(in.Spec.MaxUnavailable, total, false)
		if err != nil || b < 1 {
			b = 1
		}
		budget = int32(b)
		st.MaxUnavailable = &budget
	}
	stages := Assign(in.Spec.Stages, clusters)
	stageOf := map[string]int{}
	for i, names := range stages {
		for _, n := range names {
			stageOf[n] = i
		}
	}
	for _, c := range clusters {
		pc := prevC[c.Name]
		r := &rolloutsv1alpha1.ClusterStatus{Name: c.Name, Revision: c.WorkRevision, Target: stable, Phase: rolloutsv1alpha1.ClusterWaiting,
			Health: c.Health, Unavailable: c.Unavailable}
		superseded := c.WorkRevision != "" && c.WorkRevision != stable && c.WorkRevision != rev
		if pc.Target == rev || superseded || c.WorkRevision == rev {
			// Started: a cluster on a superseded revision has left the stable one already
			// and takes the new revision at once.
			p.start(r, pc, c)
		}
		if r.Target == rev {
			if c.WorkRevision != rev || !c.Applied {
				// Until its Work carries the revision and is applied, what the cluster
				// reports is of the spec before (work status reflects applied Works only).
				r.ObservedGenerationBefore = max(r.ObservedGenerationBefore, c.ObservedGeneration)
			}
			h := c.WorkRevision == rev && c.Applied && c.Health == "Healthy" &&
				(c.ObservedGeneration == 0 || c.ObservedGeneration > r.ObservedGenerationBefore)
			healthy[c.Name] = h
			if h {
				r.HealthySince = pc.HealthySince
				if r.HealthySince == nil {
					r.HealthySince = &p.now
				}
			}
			if withBudget && !(h && p.since(r.HealthySince) >= p.soakOf(c.Name, stageOf)) {
				// A cluster holds its share of the budget until it is done: healthy, and
				// soaked (BudgetSettle at least), so that one stale healthy report does
				// not open the next cluster while it still rolls.
				used += max(c.Unavailable, ptrDeref(r.MaxUnavailable))
			} else {
				used += c.Unavailable
			}
		} else {
			used += c.Unavailable
		}
		recs[c.Name] = r
	}
	open := true // every stage before this one is complete
	var waiting, paused bool
	var failed *rolloutsv1alpha1.Halt
	for i, spec := range in.Spec.Stages {
		names := stages[i]
		ps := prevS[spec.Name]
		ss := rolloutsv1alpha1.StageStatus{Name: spec.Name, Phase: rolloutsv1alpha1.StagePending, Clusters: names,
			StartedAt: ps.StartedAt, CompletedAt: ps.CompletedAt}
		for _, n := range names {
			recs[n].Stage = spec.Name
		}
		deadline := DefaultProgressDeadline
		if spec.HealthGate != nil && spec.HealthGate.ProgressDeadline != nil {
			deadline = spec.HealthGate.ProgressDeadline.Duration
		}
		soak := p.soakOf(spec.Name, nil)
		// The stage's started clusters: soaked, failed, or still going.
		done := 0
		inflight := 0
		for _, n := range names {
			r := recs[n]
			if r.Target != rev {
				continue
			}
			switch {
			case healthy[n] && p.since(r.HealthySince) >= soak:
				r.Phase = rolloutsv1alpha1.ClusterDone
				done++
				continue
			case healthy[n]:
				r.Phase = rolloutsv1alpha1.ClusterSoaking
				p.requeue(soak - p.since(r.HealthySince))
			default:
				r.Phase = rolloutsv1alpha1.ClusterProgressing
			}
			inflight++
			if left := deadline - p.since(r.StartedAt); left < 0 {
				r.Phase = rolloutsv1alpha1.ClusterFailed
				if failed == nil && halt == nil {
					failed = &rolloutsv1alpha1.Halt{Revision: rev, Stage: spec.Name, Cluster: n, At: p.now,
						Reason: fmt.Sprintf("not healthy and soaked within the progress deadline %s (health %s)", deadline, healthOf(byName[n]))}
				}
			} else {
				p.requeue(left)
			}
		}
		if !open {
			st.Stages = append(st.Stages, ss)
			continue
		}
		if len(names) == 0 {
			ss.Phase = rolloutsv1alpha1.StageEmpty
			ss.Message = "The stage picks no cluster of the placement"
			if ps.Phase != rolloutsv1alpha1.StageEmpty {
				p.event(true, rolloutsv1alpha1.EventStageEmpty, "Stage %s of revision %s picks no cluster of the placement: passed", spec.Name, rev)
			}
			st.Stages = append(st.Stages, ss)
			continue
		}
		if ss.StartedAt == nil {
			switch {
			case spec.Approval.NeedsBefore() && !p.approved(spec.Name, rolloutsv1alpha1.ApprovalBefore):
				ss.Phase = rolloutsv1alpha1.StageWaitingForApproval
				ss.Message = "Waiting for approval before the stage opens"
				if ps.Phase != rolloutsv1alpha1.StageWaitingForApproval {
					p.event(false, rolloutsv1alpha1.EventWaitingApproval, "Stage %s of revision %s waits for approval before it opens: kubectl flotilla rollout approve", spec.Name, rev)
				}
				waiting, open = true, false
			case in.Control.Paused:
				paused, open = true, false
			case halt != nil:
				open = false
			default:
				ss.StartedAt = &p.now
				p.event(false, rolloutsv1alpha1.EventStageStarted, "Stage %s of revision %s started: %s", spec.Name, rev, strings.Join(names, ", "))
			}
			if !open {
				st.Stages = append(st.Stages, ss)
				continue
			}
		}
		// Open clusters while the stage's concurrency and the fleet's budget have room.
		conc := len(names)
		if spec.MaxConcurrency != nil {
			if v, err := intstr.GetScaledValueFromIntOrPercent(spec.MaxConcurrency, len(names), true); err == nil && v >= 1 {
				conc = v
			}
		}
		for _, n := range names {
			r := recs[n]
			if r.Target == rev {
				continue
			}
			if in.Control.Paused {
				paused = true
				break
			}
			if halt != nil || failed != nil || inflight >= conc {
				break
			}
			c := byName[n]
			if withBudget && c.Replicas > 0 {
				room := budget - used
				if room < 1 {
					break
				}
				share := min(room, c.Replicas)
				r.MaxUnavailable = &share
				used += share
			}
			p.start(r, rolloutsv1alpha1.ClusterStatus{}, c)
			r.Phase = rolloutsv1alpha1.ClusterProgressing
			inflight++
			p.requeue(deadline)
		}
		switch {
		case failed != nil && failed.Stage == spec.Name || halt != nil && halt.Stage == spec.Name:
			ss.Phase = rolloutsv1alpha1.StageFailed
			open = false
		case done == len(names):
			if ss.CompletedAt == nil {
				ss.CompletedAt = &p.now
				d := p.since(ss.StartedAt)
				p.out.Completed = append(p.out.Completed, StageTime{Stage: spec.Name, Duration: d})
				p.event(false, rolloutsv1alpha1.EventStageCompleted, "Stage %s of revision %s completed in %s", spec.Name, rev, d.Round(time.Second))
			}
			ss.Phase = rolloutsv1alpha1.StageComplete
			if spec.Approval.NeedsAfter() && !p.approved(spec.Name, rolloutsv1alpha1.ApprovalAfter) {
				ss.Phase = rolloutsv1alpha1.StageWaitingForApproval
				ss.Message = "Complete; waiting for approval before the next stage opens"
				if ps.Phase != rolloutsv1alpha1.StageWaitingForApproval {
					p.event(false, rolloutsv1alpha1.EventWaitingApproval, "Stage %s of revision %s is complete and waits for approval: kubectl flotilla rollout approve", spec.Name, rev)
				}
				waiting, open = true, false
			}
		default:
			ss.Phase = rolloutsv1alpha1.StageProgressing
			open = false
		}
		st.Stages = append(st.Stages, ss)
	}
	for _, c := range clusters {
		st.Clusters = append(st.Clusters, *recs[c.Name])
	}
	if failed != nil {
		halt = failed
		p.out.Halted = true
		p.event(true, rolloutsv1alpha1.EventHalted, "Revision %s halted at stage %s: cluster %s %s", rev, failed.Stage, failed.Cluster, failed.Reason)
		if in.Spec.OnFailure == rolloutsv1alpha1.FailureRollback {
			st.Halt = halt
			p.rollBack(st, clusters, fmt.Sprintf("health gate failed on cluster %s", failed.Cluster))
			st.Stages = p.markFailed(st.Stages, failed.Stage)
			return
		}
	}
	st.Halt = halt
	switch {
	case halt != nil:
		st.Phase = rolloutsv1alpha1.PhaseHalted
		p.out.RequeueAfter = 0
		p.setConditions(st, metav1.ConditionFalse, rolloutsv1alpha1.ReasonProgressDeadlineExceeded,
			fmt.Sprintf("Revision %s halted: undo it or change the template", rev), halt)
	case open:
		// Every stage is complete: the revision is the stable one.
		st.Phase = rolloutsv1alpha1.PhaseComplete
		st.StableRevision = rev
		p.out.Promoted = true
		for i := range st.Clusters {
			st.Clusters[i].Target = rev
		}
		p.event(false, rolloutsv1alpha1.EventComplete, "Revision %s rolled out to every cluster", rev)
		p.setConditions(st, metav1.ConditionFalse, rolloutsv1alpha1.ReasonRolloutComplete, fmt.Sprintf("Every cluster may run revision %s", rev), nil)
	case waiting:
		st.Phase = rolloutsv1alpha1.PhaseWaitingForApproval
		p.setConditions(st, metav1.ConditionTrue, rolloutsv1alpha1.ReasonWaitingForApproval, fmt.Sprintf("Revision %s waits for approval", rev), nil)
	case paused:
		st.Phase = rolloutsv1alpha1.PhasePaused
		p.setConditions(st, metav1.ConditionTrue, rolloutsv1alpha1.ReasonPaused, fmt.Sprintf("Revision %s is paused", rev), nil)
	default:
		st.Phase = rolloutsv1alpha1.PhaseProgressing
		p.setConditions(st, metav1.ConditionTrue, rolloutsv1alpha1.ReasonStagesOpening, fmt.Sprintf("Revision %s is rolling out", rev), nil)
	}
}

// BudgetSettle is how long, at least, a cluster rolling under a fleet budget must be
// healthy before it is done (its soak when longer).
const BudgetSettle = 2 * time.Second

// soakOf is the soak of a stage (by name, or of a cluster's stage when stageOf is given).
func (p *planner) soakOf(name string, stageOf map[string]int) time.Duration {
	var st *rolloutsv1alpha1.Stage
	if stageOf != nil {
		if i, ok := stageOf[name]; ok {
			st = &p.in.Spec.Stages[i]
		}
	} else {
		for i := range p.in.Spec.Stages {
			if p.in.Spec.Stages[i].Name == name {
				st = &p.in.Spec.Stages[i]
			}
		}
	}
	var d time.Duration
	if st != nil && st.Soak != nil {
		d = st.Soak.Duration
	}
	if p.in.Spec.MaxUnavailable != nil {
		d = max(d, BudgetSettle)
	}
	return d
}

func (p *planner) markFailed(stages []rolloutsv1alpha1.StageStatus, name string) []rolloutsv1alpha1.StageStatus {
	for i := range stages {
		if stages[i].Name == name {
			stages[i].Phase = rolloutsv1alpha1.StageFailed
		}
	}
	return stages
}

// start gives a cluster the revision, keeping when it started and what its member objects
// reported before.
func (p *planner) start(r *rolloutsv1alpha1.ClusterStatus, pc rolloutsv1alpha1.ClusterStatus, c Cluster) {
	r.Target = p.in.Revision
	r.StartedAt, r.ObservedGenerationBefore = pc.StartedAt, pc.ObservedGenerationBefore
	if pc.MaxUnavailable != nil {
		r.MaxUnavailable = pc.MaxUnavailable
	}
	if r.StartedAt == nil {
		r.StartedAt = &p.now
		if c.WorkRevision != p.in.Revision {
			r.ObservedGenerationBefore = c.ObservedGeneration
		}
	}
}

func healthOf(c Cluster) string {
	switch {
	case c.WorkRevision != "" && !c.Applied:
		return "Unknown: the Work is not applied"
	case c.Health == "":
		return "Unknown"
	}
	return c.Health
}

func ptrDeref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

func ceilSecond(t time.Time) time.Time {
	if r := t.Truncate(time.Second); !r.Equal(t) {
		return r.Add(time.Second)
	}
	return t
}
