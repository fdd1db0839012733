package interpreter

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

func TestAggregateJob(t *testing.T) {
	const (
		running  = `{active: 2, ready: 1, terminating: 1, startTime: "2026-01-01T00:02:00Z"}`
		complete = `{succeeded: 2, startTime: "2026-01-01T00:01:00Z", completionTime: "2026-01-01T00:09:00.750Z", conditions: [
			{type: SuccessCriteriaMet, status: "True", lastTransitionTime: "2026-01-01T00:08:00Z"}, {type: Complete, status: "True", lastTransitionTime: "2026-01-01T00:09:00Z"}]}`
		met = `{succeeded: 2, terminating: 1, startTime: "2026-01-01T00:01:00Z", conditions: [
			{type: SuccessCriteriaMet, status: "True", reason: CompletionsReached, lastTransitionTime: "2026-01-01T00:07:00Z"}]}`
		failing = `{failed: 3, terminating: 2, startTime: "2026-01-01T00:03:00Z", conditions: [
			{type: FailureTarget, status: "True", reason: DeadlineExceeded, message: Job was active longer than specified deadline, lastTransitionTime: "2026-01-01T00:05:00Z"}]}`
		failed = `{failed: 3, startTime: "2026-01-01T00:03:00Z", conditions: [
			{type: FailureTarget, status: "True", reason: DeadlineExceeded, message: Job was active longer than specified deadline, lastTransitionTime: "2026-01-01T00:05:00Z"},
			{type: Failed, status: "True", reason: DeadlineExceeded, message: Job was active longer than specified deadline, lastTransitionTime: "2026-01-01T00:06:00Z"}]}`
	)
	tests := []struct {
		name  string
		prev  string // the template's status: what Flotilla wrote last
		items []workv1alpha2.AggregatedStatusItem
		want  string
	}{
		{
			name:  "running and complete",
			items: []workv1alpha2.AggregatedStatusItem{raw(t, "m1", running), raw(t, "m2", complete)},
			want:  `{active: 2, ready: 1, terminating: 1, succeeded: 2, failed: 0, startTime: "2026-01-01T00:01:00Z"}`,
		},
		{
			name:  "success criteria met everywhere, pods still terminating: not Complete yet",
			items: []workv1alpha2.AggregatedStatusItem{raw(t, "m1", met), raw(t, "m2", complete)},
			want: `{active: 0, ready: 0, terminating: 1, succeeded: 4, failed: 0, startTime: "2026-01-01T00:01:00Z", conditions: [
				{type: SuccessCriteriaMet, status: "True", reason: CompletionsReached, message: "Succeeded in every member cluster: m1, m2", lastTransitionTime: "2026-01-01T00:08:00Z", lastProbeTime: "2026-01-01T00:08:00Z"}]}`,
		},
		{
			name:  "complete everywhere: completionTime in whole seconds",
			items: []workv1alpha2.AggregatedStatusItem{raw(t, "m1", complete), raw(t, "m2", complete)},
			want: `{active: 0, ready: 0, succeeded: 4, failed: 0, startTime: "2026-01-01T00:01:00Z", completionTime: "2026-01-01T00:09:00Z", conditions: [
				{type: SuccessCriteriaMet, status: "True", reason: CompletionsReached, message: "Succeeded in every member cluster: m1, m2", lastTransitionTime: "2026-01-01T00:08:00Z", lastProbeTime: "2026-01-01T00:08:00Z"},
				{type: Complete, status: "True", reason: CompletionsReached, message: "Succeeded in every member cluster: m1, m2", lastTransitionTime: "2026-01-01T00:09:00Z", lastProbeTime: "2026-01-01T00:09:00Z"}]}`,
		},
		{
			name:  "failing in one member, running in another",
			items: []workv1alpha2.AggregatedStatusItem{raw(t, "m1", running), raw(t, "m2", failing), notCollected("m3")},
			want: `{active: 2, ready: 1, terminating: 3, succeeded: 0, failed: 3, startTime: "2026-01-01T00:02:00Z", conditions: [
				{type: FailureTarget, status: "True", reason: DeadlineExceeded, lastTransitionTime: "2026-01-01T00:05:00Z", lastProbeTime: "2026-01-01T00:05:00Z",
				 message: "Failed in: m2 (DeadlineExceeded: Job was active longer than specified deadline); still running in: m1 (2 active), m3 (status not collected yet)"}]}`,
		},
		{
			name:  "failed in one member, complete in the other",
			items: []workv1alpha2.AggregatedStatusItem{raw(t, "m1", complete), raw(t, "m2", failed)},
			want: `{active: 0, ready: 0, succeeded: 2, failed: 3, startTime: "2026-01-01T00:01:00Z", conditions: [
				{type: FailureTarget, status: "True", reason: DeadlineExceeded, lastTransitionTime: "2026-01-01T00:05:00Z", lastProbeTime: "2026-01-01T00:05:00Z",
				 message: "Failed in: m2 (DeadlineExceeded: Job was active longer than specified deadline)"},
				{type: Failed, status: "True", reason: DeadlineExceeded, lastTransitionTime: "2026-01-01T00:09:00Z", lastProbeTime: "2026-01-01T00:09:00Z",
				 message: "Failed in: m2 (DeadlineExceeded: Job was active longer than specified deadline)"}]}`,
		},
		{
			name:  "complete everywhere without any time: success criteria met, but not Complete",
			items: []workv1alpha2.AggregatedStatusItem{raw(t, "m1", `{succeeded: 1, conditions: [{type: Complete, status: "True"}]}`)},
			want: `{active: 0, ready: 0, succeeded: 1, failed: 0, conditions: [
				{type: SuccessCriteriaMet, status: "True", reason: CompletionsReached, message: "Succeeded in every member cluster: m1"}]}`,
		},
		{
			name: "members' times out of order: completionTime no earlier than startTime",
			items: []workv1alpha2.AggregatedStatusItem{raw(t, "m1", `{succeeded: 1, completionTime: "2026-01-01T00:00:00Z",
				conditions: [{type: Complete, status: "True"}]}`)},
			prev: `{startTime: "2026-01-01T00:05:00Z"}`,
			want: `{active: 0, ready: 0, succeeded: 1, failed: 0, startTime: "2026-01-01T00:05:00Z", completionTime: "2026-01-01T00:05:00Z", conditions: [
				{type: SuccessCriteriaMet, status: "True", reason: CompletionsReached, message: "Succeeded in every member cluster: m1"},
				{type: Complete, status: "True", reason: CompletionsReached, message: "Succeeded in every member cluster: m1", lastTransitionTime: "2026-01-01T00:05:00Z", lastProbeTime: "2026-01-01T00:05:00Z"}]}`,
		},
		{
			name: "written Complete stays, with its times and counters, though members are gone",
			prev: `{succeeded: 4, startTime: "2026-01-01T00:01:00Z", completionTime: "2026-01-01T00:09:00Z", conditions: [
				{type: SuccessCriteriaMet, status: "True", reason: CompletionsReached, message: m, lastTransitionTime: "2026-01-01T00:08:00Z", lastProbeTime: "2026-01-01T00:08:00Z"},
				{type: Complete, status: "True", reason: CompletionsReached, message: m, lastTransitionTime: "2026-01-01T00:09:00Z", lastProbeTime: "2026-01-01T00:09:00Z"}]}`,
			items: []workv1alpha2.AggregatedStatusItem{notCollected("m1"), raw(t, "m2", running)},
			want: `{active: 0, ready: 0, terminating: 0, succeeded: 4, failed: 0, startTime: "2026-01-01T00:01:00Z", completionTime: "2026-01-01T00:09:00Z", conditions: [
				{type: SuccessCriteriaMet, status: "True", reason: CompletionsReached, message: m, lastTransitionTime: "2026-01-01T00:08:00Z", lastProbeTime: "2026-01-01T00:08:00Z"},
				{type: Complete, status: "True", reason: CompletionsReached, message: m, lastTransitionTime: "2026-01-01T00:09:00Z", lastProbeTime: "2026-01-01T00:09:00Z"}]}`,
		},
		{
			name:  "Complete written without SuccessCriteriaMet (by an older Flotilla) does not get it",
			prev:  `{succeeded: 2, startTime: "2026-01-01T00:01:00Z", conditions: [{type: Complete, status: "True", reason: Completed, message: Job completed in every member cluster, lastTransitionTime: "2026-01-01T00:09:00Z"}]}`,
			items: []workv1alpha2.AggregatedStatusItem{raw(t, "m1", complete)},
			want: `{active: 0, ready: 0, succeeded: 2, failed: 0, startTime: "2026-01-01T00:01:00Z", completionTime: "2026-01-01T00:09:00Z", conditions: [
				{type: Complete, status: "True", reason: CompletionsReached, message: "Succeeded in every member cluster: m1", lastTransitionTime: "2026-01-01T00:09:00Z", lastProbeTime: "2026-01-01T00:09:00Z"}]}`,
		},
		{
			name: "written FailureTarget stays though the failing member recovered; it fails once all are done",
			prev: `{failed: 3, startTime: "2026-01-01T00:03:00Z", conditions: [
				{type: FailureTarget, status: "True", reason: DeadlineExceeded, message: "Failed in: m2", lastTransitionTime: "2026-01-01T00:05:00Z", lastProbeTime: "2026-01-01T00:05:00Z"}]}`,
			items: []workv1alpha2.AggregatedStatusItem{raw(t, "m1", complete), raw(t, "m2", complete)},
			want: `{active: 0, ready: 0, succeeded: 4, failed: 3, startTime: "2026-01-01T00:03:00Z", conditions: [
				{type: FailureTarget, status: "True", reason: DeadlineExceeded, message: "Failed in: m2", lastTransitionTime: "2026-01-01T00:05:00Z", lastProbeTime: "2026-01-01T00:05:00Z"},
				{type: Failed, status: "True", reason: MemberFailed, message: "", lastTransitionTime: "2026-01-01T00:09:00Z", lastProbeTime: "2026-01-01T00:09:00Z"}]}`,
		},
		{
			name:  "Failed written by an older Flotilla, without FailureTarget, gets it and stays",
			prev:  `{failed: 6, conditions: [{type: Failed, status: "True", reason: JobFailed, message: Job failed in 1 of 2 member clusters, lastTransitionTime: "2026-01-01T00:03:00Z"}]}`,
			items: []workv1alpha2.AggregatedStatusItem{raw(t, "m1", running)},
			want: `{active: 0, ready: 0, terminating: 0, succeeded: 0, failed: 6, startTime: "2026-01-01T00:02:00Z", conditions: [
				{type: FailureTarget, status: "True", reason: MemberFailed, message: ""},
				{type: Failed, status: "True", reason: JobFailed, message: Job failed in 1 of 2 member clusters, lastTransitionTime: "2026-01-01T00:03:00Z", lastProbeTime: "2026-01-01T00:03:00Z"}]}`,
		},
		{
			name:  "no members",
			items: nil,
			want:  `{active: 0, ready: 0, succeeded: 0, failed: 0}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			template := jobTemplate(t)
			var prev map[string]any
			if tt.prev != "" {
				prev = fromYAML(t, tt.prev).Object
				template.Object["status"] = prev
			}
			obj := aggregateOnto(t, template, tt.items)
			if diff := cmp.Diff(fromYAML(t, tt.want).Object, obj.Object["status"]); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAggregateJobWithoutItsStatus shows why the controller must pass the template's status
// for a Job: without it, the result follows the members alone, and the apiserver rejects an
// update that undoes what was written.
func TestAggregateJobWithoutItsStatus(t *testing.T) {
	template := jobTemplate(t)
	written := aggregateOnto(t, template, []workv1alpha2.AggregatedStatusItem{
		raw(t, "m1", `{succeeded: 2, startTime: "2026-01-01T00:01:00Z", completionTime: "2026-01-01T00:09:00Z", conditions: [{type: Complete, status: "True"}]}`),
	}).Object["status"].(map[string]any)
	bare := fromYAML(t, `{apiVersion: batch/v1, kind: Job, metadata: {name: batch, uid: t1, generation: 1}}`)
	next, err := Interpreter{}.AggregateStatus(bare, []workv1alpha2.AggregatedStatusItem{notCollected("m1")})
	if err != nil {
		t.Fatal(err)
	}
	if len(statusUpdateErrors(t, template, written, next)) == 0 {
		t.Errorf("without the template's status, expected a status the apiserver rejects; got %v", next)
	}
}
