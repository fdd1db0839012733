package interpreter

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/testing/argohealth"
)

// Argo CD's health of an object and its statuses, from internal/testing/argohealth.
var argoHealth = argohealth.Health

const (
	argoHealthy     = argohealth.Healthy
	argoProgressing = argohealth.Progressing
	argoDegraded    = argohealth.Degraded
)

// TestArgoHealthOfAggregatedStatus writes the aggregated status of member objects onto the
// template, as the controller does, and checks that Argo CD's health of the template says
// what a user would expect of the fleet.
func TestArgoHealthOfAggregatedStatus(t *testing.T) {
	const g = fleetGeneration
	type scenario struct {
		name     string
		template *unstructured.Unstructured
		items    []workv1alpha2.AggregatedStatusItem
		want     string
	}
	var scenarios []scenario
	add := func(name string, template *unstructured.Unstructured, want string, items ...workv1alpha2.AggregatedStatusItem) {
		scenarios = append(scenarios, scenario{name, template, items, want})
	}

	// Deployment: 5 replicas, 2 in member1 and 3 in member2.
	deploy := deploymentTemplate(t)
	add("Deployment rolled out everywhere", deploy, argoHealthy,
		applied(t, rolledOut(g, 2).object(), rolledOut(g, 3).object())...)
	add("Deployment: a member still at the previous generation, all its pods available", deploy, argoProgressing,
		applied(t, rolledOut(g, 2).object(), rolledOut(g-1, 3).object())...)
	add("Deployment: a member's controller has not observed the new spec", deploy, argoProgressing,
		applied(t, rolledOut(g, 2).object(), deployMember{tgen: g, replicas: 3, updated: 3, available: 3, unobserved: true}.object())...)
	add("Deployment: a member mid-rollout with old pods left", deploy, argoProgressing,
		applied(t, rolledOut(g, 2).object(), deployMember{tgen: g, replicas: 3, updated: 2, available: 3, old: 1}.object())...)
	add("Deployment: a member's status not collected yet", deploy, argoProgressing,
		append(applied(t, rolledOut(g, 2).object()), notCollected("member2"))...)
	add("Deployment: a member past its progress deadline", deploy, argoDegraded,
		applied(t, rolledOut(g, 2).object(), deployMember{tgen: g, replicas: 3, updated: 1, available: 2, old: 2, progressing: reasonProgressDeadlineExceeded}.object())...)
	add("Deployment: no members", deploy, argoProgressing)

	// StatefulSet: 5 replicas, 2 and 3.
	sts := statefulSetTemplate(t)
	add("StatefulSet rolled out everywhere", sts, argoHealthy,
		applied(t, stsMember{tgen: g, replicas: 2, ready: 2, update: 2}.object(), stsMember{tgen: g, replicas: 3, ready: 3, update: 3}.object())...)
	add("StatefulSet: a member at the previous generation", sts, argoProgressing,
		applied(t, stsMember{tgen: g, replicas: 2, ready: 2, update: 2}.object(), stsMember{tgen: g - 1, replicas: 3, ready: 3, update: 3}.object())...)
	add("StatefulSet: a member still updating its pods", sts, argoProgressing,
		applied(t, stsMember{tgen: g, replicas: 2, ready: 2, update: 2}.object(), stsMember{tgen: g, replicas: 3, ready: 3, update: 1}.object())...)
	add("StatefulSet: a member not collected", sts, argoProgressing,
		append(applied(t, stsMember{tgen: g, replicas: 2, ready: 2, update: 2}.object()), notCollected("member2"))...)

	// DaemonSet on 3 + 2 nodes.
	ds := daemonSetTemplate(t)
	add("DaemonSet rolled out everywhere", ds, argoHealthy,
		applied(t, dsMember{tgen: g, desired: 3, updated: 3, available: 3}.object(), dsMember{tgen: g, desired: 2, updated: 2, available: 2}.object())...)
	add("DaemonSet: a member at the previous generation", ds, argoProgressing,
		applied(t, dsMember{tgen: g, desired: 3, updated: 3, available: 3}.object(), dsMember{tgen: g - 1, desired: 2, updated: 2, available: 2}.object())...)
	add("DaemonSet: a member with a pod unavailable", ds, argoProgressing,
		applied(t, dsMember{tgen: g, desired: 3, updated: 3, available: 2}.object(), dsMember{tgen: g, desired: 2, updated: 2, available: 2}.object())...)

	// ReplicaSet: 5 replicas, 2 and 3.
	rs := replicaSetTemplate(t)
	add("ReplicaSet available everywhere", rs, argoHealthy,
		applied(t, rsMember{tgen: g, replicas: 2, available: 2}.object(), rsMember{tgen: g, replicas: 3, available: 3}.object())...)
	add("ReplicaSet: a member cannot create pods", rs, argoDegraded,
		applied(t, rsMember{tgen: g, replicas: 2, available: 2}.object(), rsMember{tgen: g, replicas: 3, available: 1, failure: true}.object())...)
	add("ReplicaSet: a member at the previous generation", rs, argoProgressing,
		applied(t, rsMember{tgen: g, replicas: 2, available: 2}.object(), rsMember{tgen: g - 1, replicas: 3, available: 3}.object())...)

	// Job.
	job := jobTemplate(t)
	const (
		jobRunning  = `{apiVersion: batch/v1, kind: Job, metadata: {name: batch}, status: {active: 2, ready: 1, startTime: "2026-03-01T10:00:00Z"}}`
		jobComplete = `{apiVersion: batch/v1, kind: Job, metadata: {name: batch}, status: {succeeded: 2, startTime: "2026-03-01T10:01:00Z", completionTime: "2026-03-01T10:05:00Z",
			conditions: [{type: SuccessCriteriaMet, status: "True", reason: CompletionsReached, lastTransitionTime: "2026-03-01T10:05:00Z"},
				{type: Complete, status: "True", reason: CompletionsReached, lastTransitionTime: "2026-03-01T10:05:00Z"}]}}`
		jobFailed = `{apiVersion: batch/v1, kind: Job, metadata: {name: batch}, status: {failed: 3, startTime: "2026-03-01T10:02:00Z",
			conditions: [{type: FailureTarget, status: "True", reason: BackoffLimitExceeded, message: Job has reached the specified backoff limit, lastTransitionTime: "2026-03-01T10:06:00Z"},
				{type: Failed, status: "True", reason: BackoffLimitExceeded, message: Job has reached the specified backoff limit, lastTransitionTime: "2026-03-01T10:06:00Z"}]}}`
	)
	add("Job running", job, argoProgressing, applied(t, jobRunning, jobRunning)...)
	add("Job complete everywhere", job, argoHealthy, applied(t, jobComplete, jobComplete)...)
	add("Job complete in one member, running in the other", job, argoProgressing, applied(t, jobComplete, jobRunning)...)
	// The fleet's Job has failed, but has pods running in member2: like a single cluster's
	// Job with FailureTarget and pods still terminating, it is not Failed yet, and Argo CD
	// looks only for Failed.
	add("Job failed in one member while another still runs", job, argoProgressing, applied(t, jobFailed, jobRunning)...)
	add("Job failed in one member, complete in the other", job, argoDegraded, applied(t, jobFailed, jobComplete)...)
	add("Job failed everywhere", job, argoDegraded, applied(t, jobFailed, jobFailed)...)
	add("Job complete in one member, not collected in the other", job, argoProgressing,
		append(applied(t, jobComplete), notCollected("member2"))...)

	// LoadBalancer Service and Ingress: an address in any member serves.
	lb := fromYAML(t, `{apiVersion: v1, kind: Service, metadata: {name: s, namespace: ns, uid: t1}, spec: {type: LoadBalancer, ports: [{port: 80}]}}`)
	const (
		lbWith    = `{apiVersion: v1, kind: Service, metadata: {name: s}, status: {loadBalancer: {ingress: [{ip: 203.0.113.10}]}}}`
		lbWithout = `{apiVersion: v1, kind: Service, metadata: {name: s}, status: {loadBalancer: {}}}`
	)
	add("LoadBalancer Service with an address", lb, argoHealthy, applied(t, lbWith, lbWithout)...)
	add("LoadBalancer Service without addresses", lb, argoProgressing, applied(t, lbWithout, lbWithout)...)
	ing := fromYAML(t, `{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: i, namespace: ns, uid: t1}, spec: {}}`)
	add("Ingress with an address", ing, argoHealthy,
		applied(t, `{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: i}, status: {loadBalancer: {ingress: [{hostname: lb.example.com}]}}}`)...)
	add("Ingress without addresses", ing, argoProgressing, applied(t, `{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: i}}`)...)

	// PersistentVolumeClaim.
	pvc := fromYAML(t, `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: p, namespace: ns, uid: t1}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}`)
	claim := func(phase string) string {
		return fmt.Sprintf(`{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: p}, status: {phase: %s, capacity: {storage: 1Gi}}}`, phase)
	}
	add("PVC Bound everywhere", pvc, argoHealthy, applied(t, claim("Bound"), claim("Bound"))...)
	add("PVC Pending in a member", pvc, argoProgressing, applied(t, claim("Bound"), claim("Pending"))...)
	add("PVC Lost in a member", pvc, argoDegraded, applied(t, claim("Bound"), claim("Lost"), claim("Pending"))...)

	// PodDisruptionBudget.
	pdb := fromYAML(t, fmt.Sprintf(`{apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: p, namespace: ns, uid: %s, generation: %d}, spec: {minAvailable: 1}}`, fleetUID, g))
	budget := func(status, reason string) string {
		return fmt.Sprintf(`{apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: %s, status: {observedGeneration: %d, currentHealthy: 2, desiredHealthy: 1, expectedPods: 2, disruptionsAllowed: 1,
			conditions: [{type: DisruptionAllowed, status: "%s", reason: %s, message: "", observedGeneration: %d, lastTransitionTime: "2026-03-01T10:00:00Z"}]}}`,
			memberMeta("p", g), g+10, status, reason, g+10)
	}
	add("PDB allowing disruptions everywhere", pdb, argoHealthy, applied(t, budget("True", "SufficientPods"), budget("True", "SufficientPods"))...)
	add("PDB with too few pods in a member", pdb, argoHealthy, applied(t, budget("True", "SufficientPods"), budget("False", "InsufficientPods"))...)
	add("PDB whose controller failed in a member", pdb, argoDegraded, applied(t, budget("True", "SufficientPods"), budget("False", "SyncFailed"))...)
	add("PDB not collected in a member", pdb, argoProgressing, append(applied(t, budget("True", "SufficientPods")), notCollected("member2"))...)

	// CronJob.
	cron := fromYAML(t, `{apiVersion: batch/v1, kind: CronJob, metadata: {name: c, namespace: ns, uid: t1}, spec: {schedule: "0 * * * *", jobTemplate: {spec: {template: {spec: {containers: [{name: c, image: busybox}]}}}}}}`)
	ran := func(scheduled, succeeded string) string {
		status := fmt.Sprintf(`lastScheduleTime: "%s"`, scheduled)
		if succeeded != "" {
			status += fmt.Sprintf(`, lastSuccessfulTime: "%s"`, succeeded)
		}
		return fmt.Sprintf(`{apiVersion: batch/v1, kind: CronJob, metadata: {name: c}, status: {%s}}`, status)
	}
	add("CronJob never scheduled", cron, argoHealthy, applied(t, `{apiVersion: batch/v1, kind: CronJob, metadata: {name: c}}`)...)
	add("CronJob whose last runs succeeded everywhere", cron, argoHealthy,
		applied(t, ran("2026-03-01T10:00:00Z", "2026-03-01T10:00:40Z"), ran("2026-03-01T10:00:00Z", "2026-03-01T10:01:10Z"))...)
	add("CronJob whose last runs failed everywhere", cron, argoDegraded,
		applied(t, ran("2026-03-01T10:00:00Z", "2026-03-01T09:00:30Z"), ran("2026-03-01T10:00:00Z", ""))...)

	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			obj := aggregateOnto(t, sc.template, sc.items)
			got, err := argoHealth(obj)
			if err != nil {
				t.Fatal(err)
			}
			if got != sc.want {
				t.Errorf("Argo CD health %s, want %s; status: %v", got, sc.want, obj.Object["status"])
			}
		})
	}
}

// TestArgoHealthOfJobOverTime follows a Job through its life in two members, writing each
// aggregated status onto the template and aggregating the next onto it, as the controller
// does.
func TestArgoHealthOfJobOverTime(t *testing.T) {
	job := jobTemplate(t)
	running := func(start string) string {
		return fmt.Sprintf(`{apiVersion: batch/v1, kind: Job, metadata: {name: batch}, status: {active: 2, ready: 2, startTime: "%s"}}`, start)
	}
	failing := `{apiVersion: batch/v1, kind: Job, metadata: {name: batch}, status: {failed: 3, terminating: 1, startTime: "2026-03-01T10:00:00Z",
		conditions: [{type: FailureTarget, status: "True", reason: BackoffLimitExceeded, message: Job has reached the specified backoff limit, lastTransitionTime: "2026-03-01T10:06:00Z"}]}}`
	failed := `{apiVersion: batch/v1, kind: Job, metadata: {name: batch}, status: {failed: 3, startTime: "2026-03-01T10:00:00Z",
		conditions: [{type: FailureTarget, status: "True", reason: BackoffLimitExceeded, message: Job has reached the specified backoff limit, lastTransitionTime: "2026-03-01T10:06:00Z"},
			{type: Failed, status: "True", reason: BackoffLimitExceeded, message: Job has reached the specified backoff limit, lastTransitionTime: "2026-03-01T10:06:30Z"}]}}`
	complete := `{apiVersion: batch/v1, kind: Job, metadata: {name: batch}, status: {succeeded: 2, startTime: "2026-03-01T09:59:00Z", completionTime: "2026-03-01T10:08:00Z",
		conditions: [{type: SuccessCriteriaMet, status: "True", reason: CompletionsReached, lastTransitionTime: "2026-03-01T10:08:00Z"},
			{type: Complete, status: "True", reason: CompletionsReached, lastTransitionTime: "2026-03-01T10:08:00Z"}]}}`

	steps := []struct {
		name  string
		items []workv1alpha2.AggregatedStatusItem
		want  string
	}{
		{"member1 reports first", append(applied(t, running("2026-03-01T10:00:00Z")), notCollected("member2")), argoProgressing},
		// member2 started earlier, but the written startTime may not move.
		{"member2 reports an earlier start", applied(t, running("2026-03-01T10:00:00Z"), running("2026-03-01T09:59:00Z")), argoProgressing},
		{"member1 fails, its pods terminating", applied(t, failing, running("2026-03-01T09:59:00Z")), argoProgressing},
		{"member1 failed", applied(t, failed, running("2026-03-01T09:59:00Z")), argoProgressing},
		{"member2 completes: the fleet's Job has failed", applied(t, failed, complete), argoDegraded},
		// member2's Job is deleted (ttlSecondsAfterFinished): the counters may not go down, and
		// the Job stays failed.
		{"member2's Job gone", append(applied(t, failed), notCollected("member2")), argoDegraded},
	}
	for _, step := range steps {
		obj := aggregateOnto(t, job, step.items)
		got, err := argoHealth(obj)
		if err != nil {
			t.Fatal(err)
		}
		if got != step.want {
			t.Errorf("%s: Argo CD health %s, want %s; status: %v", step.name, got, step.want, obj.Object["status"])
		}
		if start, _ := obj.Object["status"].(map[string]any)["startTime"].(string); start != "2026-03-01T10:00:00Z" {
			t.Errorf("%s: startTime %q, want the first written, 2026-03-01T10:00:00Z", step.name, start)
		}
		job = obj
	}
	status := job.Object["status"].(map[string]any)
	if status["succeeded"] != int64(2) || status["failed"] != int64(3) {
		t.Errorf("counters went down: %v", status)
	}
}
