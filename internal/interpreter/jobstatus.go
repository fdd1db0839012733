package interpreter

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

// Job condition types, and the reasons the aggregated conditions get.
const (
	jobComplete           = "Complete"
	jobFailed             = "Failed"
	jobFailureTarget      = "FailureTarget"
	jobSuccessCriteriaMet = "SuccessCriteriaMet"

	reasonCompletionsReached = "CompletionsReached"
	reasonMemberFailed       = "MemberFailed"
)

// jobMembers is what the members' reflected Job statuses say, for aggregateJob.
type jobMembers struct {
	// complete: every member's Job is Complete. succeeded: every member's Job is Complete or
	// has met its success criteria. settled: every member's Job is Complete or Failed. All
	// false without members.
	complete, succeeded, settled bool
	// Notes naming members, for condition messages.
	completed, failing, running []string
	// failReason is the reason of the first failing member's condition.
	failReason string
	// Canonical times: the earliest startTime; the latest completionTime of a complete
	// member; the latest time a member met its success criteria; the earliest time a member
	// failed; the latest time a member finished; the earliest time of any kind.
	start, completion, succeededAt, failedAt, finishedAt, anyAt string
	// terminating is the sum of the members' terminating pods; terminatingReported whether
	// any member reports the field.
	terminating         int64
	terminatingReported bool
}

func readJobMembers(items []workv1alpha2.AggregatedStatusItem, statuses []map[string]any) jobMembers {
	m := jobMembers{complete: len(items) > 0, succeeded: len(items) > 0, settled: len(items) > 0}
	for i, s := range statuses {
		name := items[i].ClusterName
		if s == nil {
			m.complete, m.succeeded, m.settled = false, false, false
			m.running = append(m.running, memberNote(name, "status not collected yet"))
			continue
		}
		if n, found, err := nestedInt64(s, "terminating"); err == nil && found {
			m.terminating = clampCount(m.terminating + clampCount(n))
			m.terminatingReported = true
		}
		for _, f := range []string{"startTime", "completionTime"} {
			raw, _ := s[f].(string)
			at, _ := canonicalTime(raw)
			m.anyAt = earlierTime(m.anyAt, at)
			if f == "startTime" {
				m.start = earlierTime(m.start, at)
			}
		}
		conditions := map[string]memberCondition{}
		for _, t := range []string{jobComplete, jobFailed, jobFailureTarget, jobSuccessCriteriaMet} {
			if c, ok := findCondition(s, t); ok && c.status == "True" {
				conditions[t] = c
				m.anyAt = earlierTime(m.anyAt, c.at)
			}
		}
		complete, isComplete := conditions[jobComplete]
		failed, isFailed := conditions[jobFailed]
		target, isTarget := conditions[jobFailureTarget]
		met, isMet := conditions[jobSuccessCriteriaMet]
		switch {
		case isFailed || isTarget:
			c := target
			if isFailed {
				c = failed
				m.finishedAt = laterTime(m.finishedAt, c.at)
			} else {
				m.settled = false
			}
			m.complete, m.succeeded = false, false
			why := c.message
			if c.reason != "" && c.message != "" {
				why = c.reason + ": " + c.message
			} else if c.reason != "" {
				why = c.reason
			}
			m.failing = append(m.failing, memberNote(name, why))
			if len(m.failing) == 1 {
				m.failReason = c.reason
			}
			// The member became a failure target first; Failed follows once its pods are gone.
			at := target.at
			if at == "" {
				at = failed.at
			}
			m.failedAt = earlierTime(m.failedAt, at)
		case isComplete:
			m.completed = append(m.completed, name)
			raw, _ := s["completionTime"].(string)
			at, _ := canonicalTime(raw)
			if at == "" {
				at = complete.at
			}
			m.completion = laterTime(m.completion, at)
			at = met.at
			if at == "" {
				at = complete.at
			}
			m.succeededAt = laterTime(m.succeededAt, at)
			m.finishedAt = laterTime(m.finishedAt, complete.at)
		default:
			m.complete, m.settled = false, false
			if isMet {
				m.completed = append(m.completed, name)
				m.succeededAt = laterTime(m.succeededAt, met.at)
				m.running = append(m.running, memberNote(name, "success criteria met, pods terminating"))
				continue
			}
			m.succeeded = false
			active, _, _ := nestedInt64(s, "active")
			if active > 0 {
				m.running = append(m.running, memberNote(name, fmt.Sprintf("%d active", active)))
			} else {
				m.running = append(m.running, memberNote(name, "not finished"))
			}
		}
	}
	return m
}

// aggregateJob aggregates Job statuses; see AggregateStatus. The template's own status, when
// it carries one, is what Flotilla wrote last: it keeps the result within the transitions the
// apiserver allows.
func aggregateJob(template *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem, statuses []map[string]any) map[string]any {
	prev, _, _ := nestedMap(template.Object, "status")
	m := readJobMembers(items, statuses)
	sums := sumInts(statuses, jobCounters)
	active := sums["active"].(int64)
	out := map[string]any{
		"active":    active,
		"ready":     min(sums["ready"].(int64), active),
		"succeeded": max(sums["succeeded"].(int64), prevCount(prev, "succeeded")),
		"failed":    max(sums["failed"].(int64), prevCount(prev, "failed")),
	}
	if m.terminatingReported {
		out["terminating"] = m.terminating
	}

	prevMet, prevComplete := conditionIsTrue(prev, jobSuccessCriteriaMet), conditionIsTrue(prev, jobComplete)
	prevTarget, prevFailed := conditionIsTrue(prev, jobFailureTarget), conditionIsTrue(prev, jobFailed)
	success := prevMet || prevComplete || (!prevTarget && !prevFailed && len(m.failing) == 0 && m.succeeded)
	failure := !success && (prevTarget || prevFailed || len(m.failing) > 0)

	// startTime and completionTime may not change once written. A finished Job needs a
	// startTime; when no member reports one, the earliest time a member reports stands in.
	start, startFromPrev := prevTime(prev, "startTime"), true
	if start == "" {
		start, startFromPrev = m.start, false
	}
	var conditions []any
	finished := false
	switch {
	case success:
		message := ""
		if len(m.completed) > 0 {
			message = joinNotes("Succeeded in every member cluster: ", m.completed)
		}
		if prevMet || !prevComplete {
			// A Job already Complete without SuccessCriteriaMet may not get it.
			conditions = append(conditions, jobCondition(prev, jobSuccessCriteriaMet, reasonCompletionsReached, message, m.succeededAt))
		}
		if !prevComplete && !m.complete {
			break
		}
		completion, completionFromPrev := "", false
		if prevComplete {
			completion = prevTime(prev, "completionTime")
			completionFromPrev = completion != ""
		}
		if !completionFromPrev {
			completion = m.completion
		}
		st := start
		if st == "" {
			st = earlierTime(m.anyAt, completion)
		}
		if completion != "" && st != "" && completion < st {
			// completionTime may not be before startTime: move whichever is new.
			if !completionFromPrev {
				completion = st
			} else if !startFromPrev {
				st = completion
			}
		}
		if !prevComplete && (completion == "" || st == "") {
			break
		}
		start = st
		conditions = append(conditions, jobCondition(prev, jobComplete, reasonCompletionsReached, message, completion))
		if completion != "" {
			out["completionTime"] = completion
		}
		finished = true
	case failure:
		reason := m.failReason
		if !isConditionReason(reason) {
			reason = reasonMemberFailed
		}
		message := ""
		if len(m.failing) > 0 {
			message = joinNotes("Failed in: ", m.failing)
			if len(m.running) > 0 {
				message += "; " + joinNotes("still running in: ", m.running)
			}
		}
		conditions = append(conditions, jobCondition(prev, jobFailureTarget, reason, message, m.failedAt))
		if !prevFailed && m.settled && start == "" {
			start = m.anyAt
		}
		if prevFailed || (m.settled && start != "") {
			if len(m.failing) > 0 {
				message = joinNotes("Failed in: ", m.failing)
			}
			conditions = append(conditions, jobCondition(prev, jobFailed, reason, message, m.finishedAt))
			finished = true
		}
	}
	if start != "" {
		out["startTime"] = start
	}
	if finished {
		// A finished Job has no active, ready or terminating pods.
		out["active"], out["ready"] = int64(0), int64(0)
		if _, ok := out["terminating"]; ok {
			out["terminating"] = int64(0)
		}
	}
	if len(conditions) > 0 {
		out["conditions"] = conditions
	}
	return out
}

// jobCondition builds a True Job condition. When the previous status has it True already,
// its transition time stands, and so do its reason and message when there is no new message.
// lastProbeTime is the transition time, as the Job controller writes it.
func jobCondition(prev map[string]any, conditionType, reason, message, at string) map[string]any {
	if p, ok := findCondition(prev, conditionType); ok && p.status == "True" {
		if p.at != "" {
			at = p.at
		}
		if message == "" {
			message = p.message
			if isConditionReason(p.reason) {
				reason = p.reason
			}
		}
	}
	c := newCondition(conditionType, "True", reason, message, at)
	if at != "" {
		c["lastProbeTime"] = at
	}
	return c
}

// prevCount reads a counter of the previous status; 0 when absent or odd.
func prevCount(prev map[string]any, name string) int64 {
	n, _, err := nestedInt64(prev, name)
	if err != nil {
		return 0
	}
	return clampCount(n)
}

// prevTime reads a time of the previous status in canonical form; empty when absent or odd.
func prevTime(prev map[string]any, name string) string {
	raw, _ := prev[name].(string)
	at, _ := canonicalTime(raw)
	return at
}
