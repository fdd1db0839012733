package interpreter

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

func decodeRaw(t *testing.T, raw *runtime.RawExtension) map[string]any {
	t.Helper()
	if raw == nil {
		return nil
	}
	var m map[string]any
	if err := utiljson.Unmarshal(raw.Raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestReflectStatus(t *testing.T) {
	tests := []struct {
		name string
		obj  string
		want string // YAML; empty for nil
	}{
		{
			name: "Deployment carries generations",
			obj: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 4, annotations: {resourcetemplate.karmada.io/generation: "7", resourcetemplate.karmada.io/uid: t1}},
				status: {observedGeneration: 4, replicas: 2, readyReplicas: 2, updatedReplicas: 2, availableReplicas: 1, unavailableReplicas: 1, conditions: [{type: Available}]}}`,
			want: `{generation: 4, observedGeneration: 4, resourceTemplateGeneration: 7, resourceTemplateUID: t1, replicas: 2, readyReplicas: 2, updatedReplicas: 2, availableReplicas: 1, unavailableReplicas: 1, conditions: [{type: Available}]}`,
		},
		{
			name: "Deployment conditions without the fields that churn",
			obj: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 1}, status: {observedGeneration: 1, conditions: [
				{type: Available, status: "True", reason: MinimumReplicasAvailable, message: Deployment has minimum availability., lastUpdateTime: "2026-01-01T00:05:00Z", lastTransitionTime: "2026-01-01T00:01:00Z"},
				{type: Progressing, status: "True", reason: NewReplicaSetAvailable, message: "", lastUpdateTime: "2026-01-01T00:05:00Z", lastTransitionTime: "2026-01-01T00:00:00Z"},
				{status: "True", reason: NoType}, oops, {type: Odd, status: true, reason: 7}]}}`,
			want: `{generation: 1, observedGeneration: 1, conditions: [
				{type: Available, status: "True", reason: MinimumReplicasAvailable, message: Deployment has minimum availability., lastTransitionTime: "2026-01-01T00:01:00Z"},
				{type: Progressing, status: "True", reason: NewReplicaSetAvailable, lastTransitionTime: "2026-01-01T00:00:00Z"},
				{type: Odd}]}`,
		},
		{
			name: "ReplicaSet conditions",
			obj:  `{apiVersion: apps/v1, kind: ReplicaSet, metadata: {name: r, generation: 1}, status: {observedGeneration: 1, replicas: 1, conditions: [{type: ReplicaFailure, status: "True", reason: FailedCreate, message: quota, lastTransitionTime: "2026-01-01T00:00:00Z"}]}}`,
			want: `{generation: 1, observedGeneration: 1, replicas: 1, conditions: [{type: ReplicaFailure, status: "True", reason: FailedCreate, message: quota, lastTransitionTime: "2026-01-01T00:00:00Z"}]}`,
		},
		{
			name: "ResourceQuota: hard and used",
			obj:  `{apiVersion: v1, kind: ResourceQuota, metadata: {name: q}, status: {hard: {cpu: "2"}, used: {cpu: 500m}, extra: x}}`,
			want: `{hard: {cpu: "2"}, used: {cpu: 500m}}`,
		},
		{
			name: "Deployment without status or annotation",
			obj:  `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 1}}`,
			want: `{generation: 1}`,
		},
		{
			name: "unreadable template generation is left out",
			obj:  `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: s, generation: 2, annotations: {resourcetemplate.karmada.io/generation: x}}, status: {observedGeneration: 2, readyReplicas: 1, currentRevision: r1}}`,
			want: `{generation: 2, observedGeneration: 2, readyReplicas: 1}`,
		},
		{
			name: "DaemonSet",
			obj:  `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: d, generation: 1}, status: {observedGeneration: 1, desiredNumberScheduled: 3, numberReady: 3, numberAvailable: 3, updatedNumberScheduled: 3, conditions: []}}`,
			want: `{generation: 1, observedGeneration: 1, desiredNumberScheduled: 3, numberReady: 3, numberAvailable: 3, updatedNumberScheduled: 3}`,
		},
		{
			name: "Job",
			obj:  `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, status: {active: 1, succeeded: 2, terminating: 1, startTime: "2026-01-01T00:00:00Z", uncountedTerminatedPods: {}, conditions: [{type: Complete, status: "True"}]}}`,
			want: `{active: 1, succeeded: 2, terminating: 1, startTime: "2026-01-01T00:00:00Z", conditions: [{type: Complete, status: "True"}]}`,
		},
		{
			name: "CronJob",
			obj:  `{apiVersion: batch/v1, kind: CronJob, metadata: {name: c}, status: {active: [{name: j}], lastScheduleTime: "2026-01-01T00:00:00Z"}}`,
			want: `{lastScheduleTime: "2026-01-01T00:00:00Z"}`,
		},
		{
			name: "Pod",
			obj:  `{apiVersion: v1, kind: Pod, metadata: {name: p}, status: {phase: Running, podIP: 10.1.1.1, containerStatuses: []}}`,
			want: `{phase: Running}`,
		},
		{
			name: "PersistentVolumeClaim",
			obj:  `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: p}, status: {phase: Bound, capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce]}}`,
			want: `{phase: Bound, capacity: {storage: 1Gi}}`,
		},
		{
			name: "Service",
			obj:  `{apiVersion: v1, kind: Service, metadata: {name: s}, status: {loadBalancer: {ingress: [{ip: 1.2.3.4}]}, conditions: []}}`,
			want: `{loadBalancer: {ingress: [{ip: 1.2.3.4}]}}`,
		},
		{
			name: "Ingress",
			obj:  `{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: i}, status: {loadBalancer: {ingress: [{hostname: lb.example.com}]}}}`,
			want: `{loadBalancer: {ingress: [{hostname: lb.example.com}]}}`,
		},
		{
			name: "PodDisruptionBudget",
			obj: `{apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: p, generation: 1}, status: {observedGeneration: 1, currentHealthy: 3, desiredHealthy: 2, expectedPods: 3, disruptionsAllowed: 1,
				conditions: [{type: DisruptionAllowed, status: "True", reason: SufficientPods, message: "", observedGeneration: 1, lastTransitionTime: "2026-01-01T00:00:00Z"}]}}`,
			want: `{generation: 1, observedGeneration: 1, currentHealthy: 3, desiredHealthy: 2, expectedPods: 3, disruptionsAllowed: 1,
				conditions: [{type: DisruptionAllowed, status: "True", reason: SufficientPods, lastTransitionTime: "2026-01-01T00:00:00Z"}]}`,
		},
		{name: "ConfigMap", obj: `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {a: b}}`},
		{name: "Secret", obj: `{apiVersion: v1, kind: Secret, metadata: {name: s}}`},
		{
			name: "custom resource: whole status",
			obj:  `{apiVersion: example.com/v1, kind: App, metadata: {name: a}, status: {phase: Ready, endpoints: [a, b]}}`,
			want: `{phase: Ready, endpoints: [a, b]}`,
		},
		{name: "custom resource without status", obj: `{apiVersion: example.com/v1, kind: App, metadata: {name: a}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := Interpreter{}.ReflectStatus(fromYAML(t, tt.obj))
			if err != nil {
				t.Fatal(err)
			}
			var want map[string]any
			if tt.want != "" {
				want = fromYAML(t, tt.want).Object
			}
			if diff := cmp.Diff(want, decodeRaw(t, raw)); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReflectStatusErrors(t *testing.T) {
	for obj, want := range map[string]string{
		`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, status: {readyReplicas: "2"}}`:     "status.readyReplicas: want an integer",
		`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, status: {observedGeneration: []}}`: "status.observedGeneration: want an integer",
		`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, status: oops}`:                     "status: want an object",
		`{apiVersion: batch/v1, kind: Job, metadata: {name: j}, status: {failed: true}}`:                 "status.failed: want an integer",
		`{apiVersion: batch/v1, kind: Job, metadata: {name: j}, status: {terminating: x}}`:               "status.terminating: want an integer",
		`{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: d}, status: {conditions: {a: b}}}`:      "status.conditions: want a list",
	} {
		raw, err := Interpreter{}.ReflectStatus(fromYAML(t, obj))
		if err == nil || !strings.Contains(err.Error(), want) || raw != nil {
			t.Errorf("ReflectStatus(%s) = %v, %v; want an error containing %q", obj, raw, err, want)
		}
	}
}

// item is a member's reflected status, built by ReflectStatus from a member object.
func item(t *testing.T, cluster string, applied bool, member string) workv1alpha2.AggregatedStatusItem {
	t.Helper()
	raw, err := Interpreter{}.ReflectStatus(fromYAML(t, member))
	if err != nil {
		t.Fatal(err)
	}
	return workv1alpha2.AggregatedStatusItem{ClusterName: cluster, Applied: applied, Status: raw}
}

// memberDeployment is a member Deployment rendered from generation tgen of the template with
// UID uid, at member generation gen, whose controller observed generation observed.
func memberDeployment(uid string, tgen, gen, observed, ready int) string {
	return fmt.Sprintf(`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: %d,
		annotations: {resourcetemplate.karmada.io/generation: "%d", resourcetemplate.karmada.io/uid: %s}},
		status: {observedGeneration: %d, replicas: %d, readyReplicas: %d, updatedReplicas: %d, availableReplicas: %d}}`,
		gen, tgen, uid, observed, ready, ready, ready, ready)
}

// conditionOf returns the condition of the type in an aggregated status; nil when absent.
func conditionOf(status map[string]any, conditionType string) map[string]any {
	list, _ := status["conditions"].([]any)
	for _, c := range list {
		if m, ok := c.(map[string]any); ok && m["type"] == conditionType {
			return m
		}
	}
	return nil
}

// withoutConditions returns a copy of an aggregated status without its conditions.
func withoutConditions(status map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range status {
		if k != "conditions" {
			out[k] = v
		}
	}
	return out
}

func TestAggregateDeploymentGenerations(t *testing.T) {
	// The template is at generation 5. The host's Deployment controller has observed it,
	// which says nothing about the members.
	template := fromYAML(t, `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, uid: t1, generation: 5}, status: {observedGeneration: 5}}`)
	const sums = `replicas: 3, readyReplicas: 3, updatedReplicas: 3, availableReplicas: 3, unavailableReplicas: 0`

	tests := []struct {
		name  string
		items []workv1alpha2.AggregatedStatusItem
		want  string // the status without conditions
		// rolledOut is the FleetRolledOut condition.
		rolledOut string
	}{
		{
			name: "every member rolled out generation 5",
			items: []workv1alpha2.AggregatedStatusItem{
				item(t, "m1", true, memberDeployment("t1", 5, 3, 3, 1)),
				item(t, "m2", true, memberDeployment("t1", 5, 8, 8, 2)),
			},
			want:      `{observedGeneration: 5, ` + sums + `}`,
			rolledOut: `{type: FleetRolledOut, status: "True", reason: AllMembersRolledOut, message: Every member cluster has rolled out template generation 5}`,
		},
		{
			name: "a member still runs the object of template generation 4",
			items: []workv1alpha2.AggregatedStatusItem{
				item(t, "m1", true, memberDeployment("t1", 5, 3, 3, 1)),
				item(t, "m2", true, memberDeployment("t1", 4, 7, 7, 2)),
			},
			want:      `{observedGeneration: 4, ` + sums + `}`,
			rolledOut: `{type: FleetRolledOut, status: "False", reason: MembersBehind, message: "Behind: m2 (at template generation 4 of 5)"}`,
		},
		{
			name: "a member's controller has not observed the new object yet",
			items: []workv1alpha2.AggregatedStatusItem{
				item(t, "m1", true, memberDeployment("t1", 5, 3, 2, 1)),
				item(t, "m2", true, memberDeployment("t1", 5, 8, 8, 2)),
			},
			want:      `{` + sums + `}`,
			rolledOut: `{type: FleetRolledOut, status: "False", reason: MembersBehind, message: "Behind: m1 (template generation 5 of 5 not yet observed by its controller)"}`,
		},
		{
			name: "a member not applied",
			items: []workv1alpha2.AggregatedStatusItem{
				item(t, "m1", true, memberDeployment("t1", 5, 3, 3, 1)),
				func() workv1alpha2.AggregatedStatusItem {
					it := item(t, "m2", false, memberDeployment("t1", 5, 8, 8, 2))
					it.AppliedMessage = "admission webhook denied the request"
					return it
				}(),
			},
			want:      `{` + sums + `}`,
			rolledOut: `{type: FleetRolledOut, status: "False", reason: MembersBehind, message: "Behind: m2 (not applied: admission webhook denied the request)"}`,
		},
		{
			name: "a member without status yet",
			items: []workv1alpha2.AggregatedStatusItem{
				item(t, "m1", true, memberDeployment("t1", 5, 3, 3, 3)),
				{ClusterName: "m2", Applied: true},
			},
			want:      `{` + sums + `}`,
			rolledOut: `{type: FleetRolledOut, status: "False", reason: MembersBehind, message: "Behind: m2 (status not collected yet)"}`,
		},
		{
			name: "a member object of a deleted template of the same name",
			items: []workv1alpha2.AggregatedStatusItem{
				item(t, "m1", true, memberDeployment("t1", 5, 3, 3, 1)),
				item(t, "m2", true, memberDeployment("t0", 5, 8, 8, 2)),
			},
			want:      `{` + sums + `}`,
			rolledOut: `{type: FleetRolledOut, status: "False", reason: MembersBehind, message: "Behind: m2 (runs the object of an earlier template of the same name)"}`,
		},
		{
			name: "a member ahead of the template's generation",
			items: []workv1alpha2.AggregatedStatusItem{
				item(t, "m1", true, memberDeployment("t1", 9, 3, 3, 3)),
			},
			want:      `{` + sums + `}`,
			rolledOut: `{type: FleetRolledOut, status: "False", reason: MembersBehind, message: "Behind: m1 (at template generation 9, newer than the template's 5)"}`,
		},
		{
			name: "a member object without the template annotations",
			items: []workv1alpha2.AggregatedStatusItem{
				item(t, "m1", true, `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 1}, status: {observedGeneration: 1, replicas: 3, readyReplicas: 3, updatedReplicas: 3, availableReplicas: 3}}`),
			},
			want:      `{` + sums + `}`,
			rolledOut: `{type: FleetRolledOut, status: "False", reason: MembersBehind, message: "Behind: m1 (template generation unknown)"}`,
		},
		{
			name: "every kind of lag at once, in item order",
			items: []workv1alpha2.AggregatedStatusItem{
				item(t, "m2", true, memberDeployment("t1", 3, 7, 7, 1)),
				item(t, "m3", false, memberDeployment("t1", 5, 8, 8, 1)),
				{ClusterName: "m1", Applied: true},
				item(t, "m0", true, memberDeployment("t1", 5, 2, 2, 1)),
			},
			want:      `{replicas: 3, readyReplicas: 3, updatedReplicas: 3, availableReplicas: 3, unavailableReplicas: 0}`,
			rolledOut: `{type: FleetRolledOut, status: "False", reason: MembersBehind, message: "Behind: m2 (at template generation 3 of 5), m3 (not applied), m1 (status not collected yet)"}`,
		},
		{
			name:      "no members: nothing is rolled out",
			want:      `{replicas: 0, readyReplicas: 0, updatedReplicas: 0, availableReplicas: 0, unavailableReplicas: 0}`,
			rolledOut: `{type: FleetRolledOut, status: "False", reason: NoMembers, message: No member clusters}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Interpreter{}.AggregateStatus(template, tt.items)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(fromYAML(t, tt.want).Object, withoutConditions(got)); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(fromYAML(t, tt.rolledOut).Object, conditionOf(got, ConditionFleetRolledOut)); diff != "" {
				t.Errorf("FleetRolledOut mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAggregateStatus(t *testing.T) {
	tests := []struct {
		name     string
		template string
		members  []string // member objects, reflected and applied in order
		want     string   // YAML; empty for nil
	}{
		{
			name:     "StatefulSet",
			template: `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: s, generation: 2}}`,
			members: []string{
				`{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: s, generation: 1, annotations: {resourcetemplate.karmada.io/generation: "2"}}, status: {observedGeneration: 1, replicas: 2, readyReplicas: 2, currentReplicas: 2, updatedReplicas: 2, availableReplicas: 2}}`,
				`{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: s, generation: 1, annotations: {resourcetemplate.karmada.io/generation: "2"}}, status: {observedGeneration: 1, replicas: 1, readyReplicas: 0, currentReplicas: 1, updatedReplicas: 1, availableReplicas: 0}}`,
			},
			want: `{observedGeneration: 2, replicas: 3, readyReplicas: 2, currentReplicas: 3, updatedReplicas: 3, availableReplicas: 2,
				conditions: [{type: FleetRolledOut, status: "True", reason: AllMembersRolledOut, message: Every member cluster has rolled out template generation 2}]}`,
		},
		{
			name:     "DaemonSet",
			template: `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: d, generation: 1}}`,
			members: []string{
				`{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: d, generation: 1, annotations: {resourcetemplate.karmada.io/generation: "1"}}, status: {observedGeneration: 1, desiredNumberScheduled: 3, numberReady: 3, numberAvailable: 3, updatedNumberScheduled: 3, currentNumberScheduled: 3}}`,
				`{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: d, generation: 1, annotations: {resourcetemplate.karmada.io/generation: "1"}}, status: {observedGeneration: 1, desiredNumberScheduled: 2, numberReady: 1, numberAvailable: 1, numberUnavailable: 1, updatedNumberScheduled: 2, currentNumberScheduled: 2}}`,
			},
			want: `{observedGeneration: 1, desiredNumberScheduled: 5, numberReady: 4, numberAvailable: 4, numberUnavailable: 1, updatedNumberScheduled: 5, currentNumberScheduled: 5, numberMisscheduled: 0,
				conditions: [{type: FleetRolledOut, status: "True", reason: AllMembersRolledOut, message: Every member cluster has rolled out template generation 1}]}`,
		},
		{
			name:     "Job running in one member, complete in the other",
			template: `{apiVersion: batch/v1, kind: Job, metadata: {name: j}}`,
			members: []string{
				`{apiVersion: batch/v1, kind: Job, metadata: {name: j}, status: {active: 1, ready: 1, startTime: "2026-01-01T00:05:00Z"}}`,
				`{apiVersion: batch/v1, kind: Job, metadata: {name: j}, status: {succeeded: 2, startTime: "2026-01-01T00:01:00Z", completionTime: "2026-01-01T00:09:00Z", conditions: [{type: Complete, status: "True", lastTransitionTime: "2026-01-01T00:09:00Z"}]}}`,
			},
			want: `{active: 1, ready: 1, succeeded: 2, failed: 0, startTime: "2026-01-01T00:01:00Z"}`,
		},
		{
			name:     "Job complete everywhere",
			template: `{apiVersion: batch/v1, kind: Job, metadata: {name: j}}`,
			members: []string{
				`{apiVersion: batch/v1, kind: Job, metadata: {name: j}, status: {succeeded: 1, startTime: "2026-01-01T00:05:00Z", completionTime: "2026-01-01T00:10:00Z", conditions: [{type: Complete, status: "True", lastTransitionTime: "2026-01-01T00:10:00Z"}]}}`,
				`{apiVersion: batch/v1, kind: Job, metadata: {name: j}, status: {succeeded: 2, startTime: "2026-01-01T00:01:00Z", completionTime: "2026-01-01T00:09:00Z", conditions: [{type: Complete, status: "True", lastTransitionTime: "2026-01-01T00:09:00Z"}]}}`,
			},
			want: `{active: 0, ready: 0, succeeded: 3, failed: 0, startTime: "2026-01-01T00:01:00Z", completionTime: "2026-01-01T00:10:00Z",
				conditions: [
					{type: SuccessCriteriaMet, status: "True", reason: CompletionsReached, message: "Succeeded in every member cluster: m0, m1", lastTransitionTime: "2026-01-01T00:10:00Z", lastProbeTime: "2026-01-01T00:10:00Z"},
					{type: Complete, status: "True", reason: CompletionsReached, message: "Succeeded in every member cluster: m0, m1", lastTransitionTime: "2026-01-01T00:10:00Z", lastProbeTime: "2026-01-01T00:10:00Z"}]}`,
		},
		{
			name:     "Job failed in one member",
			template: `{apiVersion: batch/v1, kind: Job, metadata: {name: j}}`,
			members: []string{
				`{apiVersion: batch/v1, kind: Job, metadata: {name: j}, status: {failed: 6, conditions: [{type: Failed, status: "True", lastTransitionTime: "2026-01-01T00:03:00Z"}]}}`,
				`{apiVersion: batch/v1, kind: Job, metadata: {name: j}, status: {succeeded: 1, conditions: [{type: Complete, status: "True"}]}}`,
			},
			// No member reports a startTime: the failure's time stands in, as a finished Job
			// needs one.
			want: `{active: 0, ready: 0, succeeded: 1, failed: 6, startTime: "2026-01-01T00:03:00Z",
				conditions: [
					{type: FailureTarget, status: "True", reason: MemberFailed, message: "Failed in: m0", lastTransitionTime: "2026-01-01T00:03:00Z", lastProbeTime: "2026-01-01T00:03:00Z"},
					{type: Failed, status: "True", reason: MemberFailed, message: "Failed in: m0", lastTransitionTime: "2026-01-01T00:03:00Z", lastProbeTime: "2026-01-01T00:03:00Z"}]}`,
		},
		{
			name:     "CronJob",
			template: `{apiVersion: batch/v1, kind: CronJob, metadata: {name: c}}`,
			members: []string{
				`{apiVersion: batch/v1, kind: CronJob, metadata: {name: c}, status: {lastScheduleTime: "2026-01-01T00:05:00Z", lastSuccessfulTime: "2026-01-01T00:06:00Z"}}`,
				`{apiVersion: batch/v1, kind: CronJob, metadata: {name: c}, status: {lastScheduleTime: "2026-01-01T00:10:00Z"}}`,
			},
			want: `{lastScheduleTime: "2026-01-01T00:10:00Z", lastSuccessfulTime: "2026-01-01T00:06:00Z"}`,
		},
		{
			name:     "Pod: running and succeeded",
			template: `{apiVersion: v1, kind: Pod, metadata: {name: p}}`,
			members: []string{
				`{apiVersion: v1, kind: Pod, metadata: {name: p}, status: {phase: Succeeded}}`,
				`{apiVersion: v1, kind: Pod, metadata: {name: p}, status: {phase: Running}}`,
			},
			want: `{phase: Running}`,
		},
		{
			name:     "Pod: all succeeded",
			template: `{apiVersion: v1, kind: Pod, metadata: {name: p}}`,
			members: []string{
				`{apiVersion: v1, kind: Pod, metadata: {name: p}, status: {phase: Succeeded}}`,
				`{apiVersion: v1, kind: Pod, metadata: {name: p}, status: {phase: Succeeded}}`,
			},
			want: `{phase: Succeeded}`,
		},
		{
			name:     "Pod: no phase yet is Pending, failed wins",
			template: `{apiVersion: v1, kind: Pod, metadata: {name: p}}`,
			members: []string{
				`{apiVersion: v1, kind: Pod, metadata: {name: p}}`,
				`{apiVersion: v1, kind: Pod, metadata: {name: p}, status: {phase: Failed}}`,
			},
			want: `{phase: Failed}`,
		},
		{
			name:     "PersistentVolumeClaim: one pending",
			template: `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: p}}`,
			members: []string{
				`{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: p}, status: {phase: Bound}}`,
				`{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: p}, status: {phase: Pending}}`,
			},
			want: `{phase: Pending}`,
		},
		{
			name:     "Service: ingress points joined without duplicates",
			template: `{apiVersion: v1, kind: Service, metadata: {name: s}}`,
			members: []string{
				`{apiVersion: v1, kind: Service, metadata: {name: s}, status: {loadBalancer: {ingress: [{ip: 1.1.1.1}]}}}`,
				`{apiVersion: v1, kind: Service, metadata: {name: s}, status: {loadBalancer: {ingress: [{hostname: lb.example.com}, {ip: 1.1.1.1}]}}}`,
				`{apiVersion: v1, kind: Service, metadata: {name: s}, status: {loadBalancer: {}}}`,
			},
			want: `{loadBalancer: {ingress: [{ip: 1.1.1.1}, {hostname: lb.example.com}]}}`,
		},
		{
			name:     "Ingress without points",
			template: `{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: i}}`,
			members:  []string{`{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: i}}`},
			want:     `{loadBalancer: {}}`,
		},
		{
			name:     "PodDisruptionBudget",
			template: `{apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: p, generation: 1}}`,
			members: []string{
				`{apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: p, generation: 1, annotations: {resourcetemplate.karmada.io/generation: "1"}}, status: {observedGeneration: 1, currentHealthy: 2, desiredHealthy: 1, expectedPods: 2, disruptionsAllowed: 1}}`,
				`{apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: p, generation: 1, annotations: {resourcetemplate.karmada.io/generation: "1"}}, status: {observedGeneration: 1, currentHealthy: 1, desiredHealthy: 1, expectedPods: 1, disruptionsAllowed: 0}}`,
			},
			want: `{observedGeneration: 1, currentHealthy: 3, desiredHealthy: 2, expectedPods: 3, disruptionsAllowed: 1}`,
		},
		{
			name:     "ConfigMap",
			template: `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}`,
			members:  []string{`{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}`},
		},
		{
			name:     "custom resource: no aggregation",
			template: `{apiVersion: example.com/v1, kind: App, metadata: {name: a}}`,
			members:  []string{`{apiVersion: example.com/v1, kind: App, metadata: {name: a}, status: {ready: 1}}`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var items []workv1alpha2.AggregatedStatusItem
			for i, m := range tt.members {
				items = append(items, item(t, fmt.Sprintf("m%d", i), true, m))
			}
			got, err := Interpreter{}.AggregateStatus(fromYAML(t, tt.template), items)
			if err != nil {
				t.Fatal(err)
			}
			var want map[string]any
			if tt.want != "" {
				want = fromYAML(t, tt.want).Object
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAggregateStatusBadItem(t *testing.T) {
	template := fromYAML(t, `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}}`)
	items := []workv1alpha2.AggregatedStatusItem{{ClusterName: "m1", Status: &runtime.RawExtension{Raw: []byte(`[1]`)}}}
	if _, err := (Interpreter{}).AggregateStatus(template, items); err == nil || !strings.Contains(err.Error(), `cluster "m1"`) {
		t.Errorf("AggregateStatus error = %v, want one naming cluster m1", err)
	}
}
