// Package cronfhpa is the pure core of CronFederatedHPAs: it parses a rule's schedule in its
// time zone, says which rules are due at a given time and when each fires next (Plan),
// records executions in the status as Karmada does (Record), and chooses which
// CronFederatedHPA's replicas a template's binding takes (Select).
//
// Nothing here reads a clock: every function takes the time.
package cronfhpa

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	// The manager's image may have no zoneinfo; timeZone must work anyway.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	autoscalingv1alpha1 "github.com/flotilla-io/flotilla/api/autoscaling/v1alpha1"
)

// parser reads five-field schedules (minute hour day-of-month month day-of-week) and
// descriptors (@daily, @every 1h), as a CronJob's.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Schedule is a rule's parsed schedule in its time zone.
type Schedule struct {
	s   cron.Schedule
	loc *time.Location
}

// Parse parses a schedule in a time zone (UTC when empty). Errors name the field.
func Parse(schedule, timeZone string) (Schedule, error) {
	loc := time.UTC
	if timeZone != "" {
		l, err := time.LoadLocation(timeZone)
		if err != nil || strings.HasPrefix(timeZone, "/") || strings.Contains(timeZone, "..") {
			return Schedule{}, fmt.Errorf("timeZone %q is not a time zone of the tz database (Asia/Shanghai, America/New_York, UTC)", timeZone)
		}
		loc = l
	}
	trimmed := strings.TrimSpace(schedule)
	if strings.HasPrefix(trimmed, "TZ=") || strings.HasPrefix(trimmed, "CRON_TZ=") {
		return Schedule{}, fmt.Errorf("schedule %q: set the time zone with timeZone, not in the schedule", schedule)
	}
	s, err := parser.Parse(trimmed)
	if err != nil {
		return Schedule{}, fmt.Errorf("schedule %q is not a cron expression of five fields (minute hour day-of-month month day-of-week) or a descriptor: %v", schedule, err)
	}
	return Schedule{s: s, loc: loc}, nil
}

// Next is the first fire time after t; the zero time when there is none.
func (s Schedule) Next(t time.Time) time.Time {
	n := s.s.Next(t.In(s.loc))
	if n.IsZero() {
		return n
	}
	return n.UTC()
}

// fires reports whether t is one of the schedule's fire times (a recorded next execution of
// this schedule, not of an older one). Interval schedules (@every) accept any time.
func (s Schedule) fires(t time.Time) bool {
	if _, ok := s.s.(cron.ConstantDelaySchedule); ok {
		return true
	}
	return s.Next(t.Add(-time.Second)).Equal(t)
}

// latest is the last fire time at or before now, starting from a fire time first <= now.
func (s Schedule) latest(first, now time.Time) time.Time {
	t := first
	for i := 0; i < 100000; i++ {
		n := s.Next(t)
		if n.IsZero() || n.After(now) {
			return t
		}
		t = n
	}
	return t
}

// Due is a rule to execute now.
type Due struct {
	Rule autoscalingv1alpha1.CronFederatedHPARule
	// ScheduleTime is the fire time it executes for: the latest that has passed (earlier
	// ones missed while the manager was down are skipped, as a CronJob skips them).
	ScheduleTime time.Time
}

// Plan is what to do at a given time.
type Plan struct {
	// Due are the rules to execute now, in the spec's order.
	Due []Due
	// Next is each valid rule's next fire time after the executions (nil: suspended).
	Next map[string]*time.Time
	// Invalid are the rules whose schedule or time zone does not parse, by name.
	Invalid map[string]error
	// RequeueAfter is the time until the earliest next fire; 0 when nothing fires.
	RequeueAfter time.Duration
}

// PlanAt says which rules are due at now and when each fires next. A rule is due when the
// next execution time its history records has come, and is still a fire time of its schedule
// (not of a schedule edited since). A new rule, a rule resumed after suspend and a rule
// whose schedule changed start from now: they fire at their next fire time, not at once.
func PlanAt(c *autoscalingv1alpha1.CronFederatedHPA, now time.Time) Plan {
	now = now.UTC()
	p := Plan{Next: map[string]*time.Time{}, Invalid: map[string]error{}}
	recorded := map[string]*metav1.Time{}
	for _, h := range c.Status.ExecutionHistories {
		recorded[h.RuleName] = h.NextExecutionTime
	}
	var earliest time.Time
	for _, rule := range c.Spec.Rules {
		s, err := Parse(rule.Schedule, deref(rule.TimeZone))
		if err != nil {
			p.Invalid[rule.Name] = err
			continue
		}
		if rule.Suspend != nil && *rule.Suspend {
			p.Next[rule.Name] = nil
			continue
		}
		var next time.Time
		prev := recorded[rule.Name]
		switch {
		case prev != nil && s.fires(prev.Time.UTC()) && !prev.Time.After(now):
			p.Due = append(p.Due, Due{Rule: rule, ScheduleTime: s.latest(prev.Time.UTC(), now)})
			next = s.Next(now)
		case prev != nil && s.fires(prev.Time.UTC()):
			next = prev.Time.UTC()
		default:
			next = s.Next(now)
		}
		if next.IsZero() {
			p.Next[rule.Name] = nil
			continue
		}
		p.Next[rule.Name] = &next
		if earliest.IsZero() || next.Before(earliest) {
			earliest = next
		}
	}
	if !earliest.IsZero() {
		p.RequeueAfter = max(earliest.Sub(now), time.Second)
	}
	return p
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Result is the outcome of one rule's execution: Err nil for a success.
type Result struct {
	Due
	At  time.Time
	Err error
}

// Record writes the plan's next times and the executions into the status's histories, as
// Karmada keeps them: one history per rule of the spec (others dropped), newest execution
// first, at most each rule's limits (3 by default). It returns the new histories.
func Record(c *autoscalingv1alpha1.CronFederatedHPA, p Plan, results []Result) []autoscalingv1alpha1.ExecutionHistory {
	old := map[string]autoscalingv1alpha1.ExecutionHistory{}
	for _, h := range c.Status.ExecutionHistories {
		old[h.RuleName] = *h.DeepCopy()
	}
	var out []autoscalingv1alpha1.ExecutionHistory
	for _, rule := range c.Spec.Rules {
		h := old[rule.Name]
		h.RuleName = rule.Name
		if next, ok := p.Next[rule.Name]; ok {
			h.NextExecutionTime = nil
			if next != nil {
				h.NextExecutionTime = &metav1.Time{Time: *next}
			}
		} else if _, bad := p.Invalid[rule.Name]; bad {
			h.NextExecutionTime = nil
		}
		for _, r := range results {
			if r.Rule.Name != rule.Name {
				continue
			}
			sched, at := &metav1.Time{Time: r.ScheduleTime}, &metav1.Time{Time: r.At.UTC()}
			if r.Err != nil {
				h.FailedExecutions = slices.Insert(h.FailedExecutions, 0, autoscalingv1alpha1.FailedExecution{
					ScheduleTime: sched, ExecutionTime: at, Message: r.Err.Error()})
			} else {
				h.SuccessfulExecutions = slices.Insert(h.SuccessfulExecutions, 0, autoscalingv1alpha1.SuccessfulExecution{
					ScheduleTime: sched, ExecutionTime: at, AppliedReplicas: rule.TargetReplicas,
					AppliedMinReplicas: rule.TargetMinReplicas, AppliedMaxReplicas: rule.TargetMaxReplicas})
			}
		}
		h.SuccessfulExecutions = trim(h.SuccessfulExecutions, limit(rule.SuccessfulHistoryLimit))
		h.FailedExecutions = trim(h.FailedExecutions, limit(rule.FailedHistoryLimit))
		out = append(out, h)
	}
	return out
}

func limit(l *int32) int {
	if l == nil {
		return 3
	}
	return int(*l)
}

func trim[T any](s []T, n int) []T {
	if len(s) > n {
		s = s[:n]
	}
	if len(s) == 0 {
		return nil
	}
	return s
}

// FederatedHPA is the kind a CronFederatedHPA may target besides workloads.
var FederatedHPA = schema.GroupKind{Group: autoscalingv1alpha1.GroupVersion.Group, Kind: "FederatedHPA"}

// Target is the group and kind a CronFederatedHPA targets.
func Target(c *autoscalingv1alpha1.CronFederatedHPA) (schema.GroupVersionKind, error) {
	gv, err := schema.ParseGroupVersion(c.Spec.ScaleTargetRef.APIVersion)
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("spec.scaleTargetRef.apiVersion: %w", err)
	}
	if c.Spec.ScaleTargetRef.Kind == "" || c.Spec.ScaleTargetRef.Name == "" {
		return schema.GroupVersionKind{}, errors.New("spec.scaleTargetRef needs a kind and a name")
	}
	return gv.WithKind(c.Spec.ScaleTargetRef.Kind), nil
}

// Active is the CronFederatedHPA whose replicas a template's binding takes.
type Active struct {
	Name             string
	Rule             string
	FleetReplicas    int32
	TemplateReplicas int32
	At               time.Time
}

// Select returns, of the CronFederatedHPAs of a namespace, the one that scaled the template
// (gk, name) last, nil when none has: a CronFederatedHPA with no successful execution, or
// targeting another object, has no say. Ties go to the first by name.
func Select(items []autoscalingv1alpha1.CronFederatedHPA, gk schema.GroupKind, name string) *Active {
	var best *Active
	for i := range items {
		c := &items[i]
		t, err := Target(c)
		if err != nil || t.GroupKind() != gk || c.Spec.ScaleTargetRef.Name != name || c.DeletionTimestamp != nil {
			continue
		}
		s := c.Status
		if s.FleetReplicas == nil || s.TemplateReplicas == nil || s.LastScaleTime == nil {
			continue
		}
		a := &Active{Name: c.Name, Rule: s.LastRule, FleetReplicas: *s.FleetReplicas, TemplateReplicas: *s.TemplateReplicas, At: s.LastScaleTime.Time}
		if best == nil || a.At.After(best.At) || (a.At.Equal(best.At) && a.Name < best.Name) {
			best = a
		}
	}
	return best
}

// Applies reports whether the active replicas apply to a template that asks for
// templateReplicas: they do while the template asks for what it asked for when the rule
// fired; an edit of the template's replicas wins until the next execution.
func (a *Active) Applies(templateReplicas int32) bool {
	return a != nil && templateReplicas == a.TemplateReplicas
}

// Marker describes a, for the binding's annotation; "" for nil.
func (a *Active) Marker() string {
	if a == nil {
		return ""
	}
	return fmt.Sprintf("CronFederatedHPA %s, rule %s at %s: %d replicas while the template asks for %d",
		a.Name, a.Rule, a.At.UTC().Format(time.RFC3339), a.FleetReplicas, a.TemplateReplicas)
}
