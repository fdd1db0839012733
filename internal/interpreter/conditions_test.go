package interpreter

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"

	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

// raw is an item whose reflected status is given as YAML, as it would come back from a member.
func raw(t *testing.T, cluster, status string) workv1alpha2.AggregatedStatusItem {
	t.Helper()
	j, err := json.Marshal(fromYAML(t, status).Object)
	if err != nil {
		t.Fatal(err)
	}
	return workv1alpha2.AggregatedStatusItem{ClusterName: cluster, Applied: true, Status: &runtime.RawExtension{Raw: j}}
}

func TestAggregateDeploymentConditions(t *testing.T) {
	template := fromYAML(t, `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, uid: t1, generation: 2}}`)
	// member is a reflected member status rendered from template generation 2.
	member := func(conditions string) string {
		return `{generation: 7, observedGeneration: 7, resourceTemplateGeneration: 2, resourceTemplateUID: t1, replicas: 1, updatedReplicas: 1, readyReplicas: 1, availableReplicas: 1,
			conditions: ` + conditions + `}`
	}
	const (
		available   = `{type: Available, status: "True", reason: MinimumReplicasAvailable, message: Deployment has minimum availability., lastTransitionTime: "2026-01-01T00:0%d:00Z"}`
		unavailable = `{type: Available, status: "False", reason: MinimumReplicasUnavailable, message: Deployment does not have minimum availability., lastTransitionTime: "2026-01-01T00:0%d:00Z"}`
		progressed  = `{type: Progressing, status: "True", reason: NewReplicaSetAvailable, message: ReplicaSet "d-1" has successfully progressed., lastTransitionTime: "2026-01-01T00:0%d:00Z"}`
		progressing = `{type: Progressing, status: "True", reason: ReplicaSetUpdated, message: ReplicaSet "d-2" is progressing., lastTransitionTime: "2026-01-01T00:0%d:00Z"}`
		timedOut    = `{type: Progressing, status: "False", reason: ProgressDeadlineExceeded, message: ReplicaSet "d-2" has timed out progressing., lastTransitionTime: "2026-01-01T00:0%d:00Z"}`
		failure     = `{type: ReplicaFailure, status: "True", reason: FailedCreate, message: exceeded quota, lastTransitionTime: "2026-01-01T00:0%d:00Z"}`
	)
	c := func(format string, minute int) string { return fmt.Sprintf(format, minute) }
	list := func(cs ...string) string { return "[" + strings.Join(cs, ", ") + "]" }
	tests := []struct {
		name  string
		items []workv1alpha2.AggregatedStatusItem
		want  string // conditions
	}{
		{
			name: "available and progressed everywhere: the latest transition times",
			items: []workv1alpha2.AggregatedStatusItem{
				raw(t, "m1", member(list(c(available, 1), c(progressed, 4)))),
				raw(t, "m2", member(list(c(progressed, 2), c(available, 3)))),
			},
			want: `[{type: Available, status: "True", reason: MinimumReplicasAvailable, message: Deployment has minimum availability in every member cluster, lastTransitionTime: "2026-01-01T00:03:00Z"},
				{type: Progressing, status: "True", reason: NewReplicaSetAvailable, message: Every member cluster has rolled out template generation 2 and its new ReplicaSet is available, lastTransitionTime: "2026-01-01T00:04:00Z"},
				{type: FleetRolledOut, status: "True", reason: AllMembersRolledOut, message: Every member cluster has rolled out template generation 2}]`,
		},
		{
			name: "one member unavailable and still progressing",
			items: []workv1alpha2.AggregatedStatusItem{
				raw(t, "m1", member(list(c(available, 1), c(progressed, 4)))),
				raw(t, "m2", member(list(c(unavailable, 5), c(progressing, 2)))),
			},
			want: `[{type: Available, status: "False", reason: MinimumReplicasUnavailable, message: "Minimum availability not met in: m2 (Deployment does not have minimum availability.)", lastTransitionTime: "2026-01-01T00:05:00Z"},
				{type: Progressing, status: "True", reason: ReplicaSetUpdated, message: "Rolling out in: m2 (ReplicaSet \"d-2\" is progressing.)", lastTransitionTime: "2026-01-01T00:04:00Z"},
				{type: FleetRolledOut, status: "True", reason: AllMembersRolledOut, message: Every member cluster has rolled out template generation 2}]`,
		},
		{
			name: "progress deadline exceeded in a member wins, and replica failures are named",
			items: []workv1alpha2.AggregatedStatusItem{
				raw(t, "m1", member(list(c(available, 1), c(timedOut, 6), c(failure, 5)))),
				raw(t, "m2", member(list(c(available, 3), c(progressing, 2)))),
				raw(t, "m3", member(list(c(available, 1), c(failure, 7)))),
			},
			want: `[{type: Available, status: "True", reason: MinimumReplicasAvailable, message: Deployment has minimum availability in every member cluster, lastTransitionTime: "2026-01-01T00:03:00Z"},
				{type: Progressing, status: "False", reason: ProgressDeadlineExceeded, message: "Progress deadline exceeded in: m1 (ReplicaSet \"d-2\" has timed out progressing.)", lastTransitionTime: "2026-01-01T00:06:00Z"},
				{type: ReplicaFailure, status: "True", reason: FailedCreate, message: "Replica failure in: m1 (exceeded quota), m3 (exceeded quota)", lastTransitionTime: "2026-01-01T00:07:00Z"},
				{type: FleetRolledOut, status: "True", reason: AllMembersRolledOut, message: Every member cluster has rolled out template generation 2}]`,
		},
		{
			name: "a deadline exceeded before the member's controller saw its new spec does not count",
			items: []workv1alpha2.AggregatedStatusItem{
				raw(t, "m1", member(list(c(available, 1), c(progressed, 4)))),
				raw(t, "m2", `{generation: 8, observedGeneration: 7, resourceTemplateGeneration: 2, resourceTemplateUID: t1, conditions: `+list(c(available, 3), c(timedOut, 2))+`}`),
			},
			want: `[{type: Available, status: "True", reason: MinimumReplicasAvailable, message: Deployment has minimum availability in every member cluster, lastTransitionTime: "2026-01-01T00:03:00Z"},
				{type: Progressing, status: "True", reason: ReplicaSetUpdated, message: "Rolling out in: m2 (template generation 2 of 2 not yet observed by its controller)", lastTransitionTime: "2026-01-01T00:04:00Z"},
				{type: FleetRolledOut, status: "False", reason: MembersBehind, message: "Behind: m2 (template generation 2 of 2 not yet observed by its controller)"}]`,
		},
		{
			name: "members without conditions or status, times unknown",
			items: []workv1alpha2.AggregatedStatusItem{
				raw(t, "m1", member(`[{type: Available, status: "True"}, {type: Progressing, status: "True", reason: NewReplicaSetAvailable, lastTransitionTime: yesterday}]`)),
				raw(t, "m2", member(`[]`)),
				notCollected("m3"),
			},
			want: `[{type: Available, status: "False", reason: MinimumReplicasUnavailable, message: "Minimum availability not met in: m2 (no Available condition yet), m3 (status not collected yet)"},
				{type: Progressing, status: "True", reason: ReplicaSetUpdated, message: "Rolling out in: m2 (no Progressing condition yet), m3 (status not collected yet)"},
				{type: FleetRolledOut, status: "False", reason: MembersBehind, message: "Behind: m3 (status not collected yet)"}]`,
		},
		{
			name: "no members",
			want: `[{type: Available, status: "False", reason: MinimumReplicasUnavailable, message: No member clusters},
				{type: Progressing, status: "True", reason: ReplicaSetUpdated, message: No member clusters},
				{type: FleetRolledOut, status: "False", reason: NoMembers, message: No member clusters}]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Interpreter{}.AggregateStatus(template, tt.items)
			if err != nil {
				t.Fatal(err)
			}
			want := fromYAML(t, `{conditions: `+tt.want+`}`).Object["conditions"]
			if diff := cmp.Diff(want, got["conditions"]); diff != "" {
				t.Errorf("conditions mismatch (-want +got):\n%s", diff)
			}
			checkWritable(t, deploymentTemplate(t), nil, got)
		})
	}
}

func TestAggregateReplicaSetAndPDBConditions(t *testing.T) {
	rs := fromYAML(t, `{apiVersion: apps/v1, kind: ReplicaSet, metadata: {name: r, generation: 1}}`)
	got, err := Interpreter{}.AggregateStatus(rs, []workv1alpha2.AggregatedStatusItem{
		raw(t, "m1", `{replicas: 1, conditions: [{type: ReplicaFailure, status: "False"}]}`),
		raw(t, "m2", `{replicas: 1, conditions: [{type: ReplicaFailure, status: "True", reason: "bad reason!", message: denied}]}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := fromYAML(t, `{type: ReplicaFailure, status: "True", reason: FailedCreate, message: "Replica failure in: m2 (denied)"}`).Object
	if diff := cmp.Diff(want, conditionOf(got, "ReplicaFailure")); diff != "" {
		t.Errorf("ReplicaFailure mismatch (-want +got):\n%s", diff)
	}

	pdb := fromYAML(t, `{apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: p, generation: 1}}`)
	allowed := func(status, reason, at string) string {
		return fmt.Sprintf(`{currentHealthy: 1, conditions: [{type: DisruptionAllowed, status: "%s", reason: %s, lastTransitionTime: "%s"}]}`, status, reason, at)
	}
	for _, tt := range []struct {
		name  string
		items []workv1alpha2.AggregatedStatusItem
		want  string // the DisruptionAllowed condition; empty when left out
	}{
		{"allowed everywhere", []workv1alpha2.AggregatedStatusItem{
			raw(t, "m1", allowed("True", "SufficientPods", "2026-01-01T00:01:00Z")), raw(t, "m2", allowed("True", "SufficientPods", "2026-01-01T00:02:00+01:00"))},
			`{type: DisruptionAllowed, status: "True", reason: SufficientPods, message: Disruptions are allowed in every member cluster, lastTransitionTime: "2026-01-01T00:01:00Z"}`},
		{"insufficient pods in one", []workv1alpha2.AggregatedStatusItem{
			raw(t, "m1", allowed("True", "SufficientPods", "2026-01-01T00:01:00Z")), raw(t, "m2", allowed("False", "InsufficientPods", "2026-01-01T00:02:00Z"))},
			`{type: DisruptionAllowed, status: "False", reason: InsufficientPods, message: "No disruption allowed in: m2 (InsufficientPods)", lastTransitionTime: "2026-01-01T00:02:00Z"}`},
		{"sync failed in one", []workv1alpha2.AggregatedStatusItem{
			raw(t, "m1", allowed("False", "InsufficientPods", "2026-01-01T00:01:00Z")), raw(t, "m2", allowed("False", "SyncFailed", "2026-01-01T00:02:00Z"))},
			`{type: DisruptionAllowed, status: "False", reason: SyncFailed, message: "No disruption allowed in: m1 (InsufficientPods), m2 (SyncFailed)", lastTransitionTime: "2026-01-01T00:02:00Z"}`},
		{"one not reported", []workv1alpha2.AggregatedStatusItem{
			raw(t, "m1", allowed("True", "SufficientPods", "2026-01-01T00:01:00Z")), raw(t, "m2", `{currentHealthy: 1}`)}, ``},
		{"no transition time", []workv1alpha2.AggregatedStatusItem{
			raw(t, "m1", `{conditions: [{type: DisruptionAllowed, status: "True", reason: SufficientPods}]}`)}, ``},
		{"no members", nil, ``},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Interpreter{}.AggregateStatus(pdb, tt.items)
			if err != nil {
				t.Fatal(err)
			}
			var want map[string]any
			if tt.want != "" {
				want = fromYAML(t, tt.want).Object
			}
			if diff := cmp.Diff(want, conditionOf(got, "DisruptionAllowed")); diff != "" {
				t.Errorf("DisruptionAllowed mismatch (-want +got):\n%s", diff)
			}
			if conditionOf(got, ConditionFleetRolledOut) != nil {
				t.Errorf("a PodDisruptionBudget got %s, which has no lastTransitionTime", ConditionFleetRolledOut)
			}
			checkWritable(t, fromYAML(t, `{apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: p}, spec: {}}`), nil, got)
		})
	}
}

func TestAggregateMessagesAreBounded(t *testing.T) {
	template := fromYAML(t, `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: d, generation: 1}}`)
	var items []workv1alpha2.AggregatedStatusItem
	for i := range 40 {
		items = append(items, workv1alpha2.AggregatedStatusItem{ClusterName: fmt.Sprintf("m%02d", i), AppliedMessage: strings.Repeat("é", 300)})
	}
	got, err := Interpreter{}.AggregateStatus(template, items)
	if err != nil {
		t.Fatal(err)
	}
	message, _ := conditionOf(got, ConditionFleetRolledOut)["message"].(string)
	if !strings.HasPrefix(message, "Behind: m00 (not applied: éé") || !strings.HasSuffix(message, "…), and 10 more") || strings.Contains(message, "m30") {
		t.Errorf("message %q: want 30 members named, their notes cut, and the 10 others counted", message)
	}
	if len(message) > 30*(maxNoteLen+20) {
		t.Errorf("message of %d bytes", len(message))
	}
	if !strings.Contains(message, "m29") || strings.ContainsRune(message, '\uFFFD') {
		t.Errorf("message %q: a member missing, or a character cut in half", message)
	}
}

func TestAggregateOddCountersStayWritable(t *testing.T) {
	for _, kind := range []string{"Deployment", "StatefulSet", "ReplicaSet", "DaemonSet"} {
		template := fromYAML(t, `{apiVersion: apps/v1, kind: `+kind+`, metadata: {name: x, generation: 1}, spec: {}}`)
		got, err := Interpreter{}.AggregateStatus(template, []workv1alpha2.AggregatedStatusItem{
			raw(t, "m1", `{replicas: 2, readyReplicas: 5, availableReplicas: 9, updatedReplicas: -3, currentReplicas: 4000000000, fullyLabeledReplicas: 1.5, numberReady: -1, observedGeneration: 1, generation: 1, resourceTemplateGeneration: -2}`),
			raw(t, "m2", `{replicas: 2147483647, numberAvailable: 2147483647, desiredNumberScheduled: 2147483647}`),
			raw(t, "m3", `{numberAvailable: 5, desiredNumberScheduled: 9, conditions: "x"}`),
		})
		if err != nil {
			t.Fatal(err)
		}
		checkWritable(t, template, nil, got)
		if _, ok := got[ObservedGenerationField]; ok {
			t.Errorf("%s: observedGeneration %v from a negative template generation", kind, got[ObservedGenerationField])
		}
	}
}
