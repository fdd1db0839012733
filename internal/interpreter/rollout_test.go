package interpreter

import (
	"errors"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

// rolloutDone says whether `kubectl rollout status` would report the rollout of a
// Deployment, StatefulSet or DaemonSet done, restating the status viewers of k8s.io/kubectl
// v0.36 (pkg/polymorphichelpers/rollout_status.go). An error is what kubectl would fail with.
func rolloutDone(obj *unstructured.Unstructured) (bool, error) {
	switch groupKind(obj) {
	case deploymentKind:
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &d); err != nil {
			return false, err
		}
		// Waits for the spec to be observed; then fails when the Progressing condition's
		// reason says the progress deadline passed, waits while fewer replicas are updated
		// than spec.replicas, while old replicas remain (replicas > updated), and while fewer
		// are available than updated.
		if d.Generation > d.Status.ObservedGeneration {
			return false, nil
		}
		for _, c := range d.Status.Conditions {
			if c.Type == appsv1.DeploymentProgressing && c.Reason == "ProgressDeadlineExceeded" {
				return false, fmt.Errorf("deployment %q exceeded its progress deadline", d.Name)
			}
		}
		s := d.Status
		done := !(d.Spec.Replicas != nil && s.UpdatedReplicas < *d.Spec.Replicas) && s.Replicas <= s.UpdatedReplicas && s.AvailableReplicas >= s.UpdatedReplicas
		return done, nil
	case statefulSetKind:
		var s appsv1.StatefulSet
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &s); err != nil {
			return false, err
		}
		// Only RollingUpdate has a rollout status. Waits for the spec to be observed (an
		// observedGeneration of 0 is not), for spec.replicas ready pods; with rollingUpdate
		// set, for spec.replicas minus the partition updated pods, and is then done; without,
		// for updateRevision to equal currentRevision.
		if s.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType {
			return true, errors.New("rollout status is only available for RollingUpdate strategy type")
		}
		if s.Status.ObservedGeneration == 0 || s.Generation > s.Status.ObservedGeneration {
			return false, nil
		}
		if s.Spec.Replicas != nil && s.Status.ReadyReplicas < *s.Spec.Replicas {
			return false, nil
		}
		if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil {
			if s.Spec.Replicas != nil && ru.Partition != nil && s.Status.UpdatedReplicas < *s.Spec.Replicas-*ru.Partition {
				return false, nil
			}
			return true, nil
		}
		return s.Status.UpdateRevision == s.Status.CurrentRevision, nil
	case daemonSetKind:
		var d appsv1.DaemonSet
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &d); err != nil {
			return false, err
		}
		// Only RollingUpdate has a rollout status. Waits for the spec to be observed, then
		// while fewer pods are updated, or available, than desiredNumberScheduled.
		if d.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType {
			return true, errors.New("rollout status is only available for RollingUpdate strategy type")
		}
		if d.Generation > d.Status.ObservedGeneration {
			return false, nil
		}
		return d.Status.UpdatedNumberScheduled >= d.Status.DesiredNumberScheduled && d.Status.NumberAvailable >= d.Status.DesiredNumberScheduled, nil
	}
	return false, fmt.Errorf("no rollout status for %s", groupKind(obj))
}

// TestRolloutStatusOfAggregatedStatus writes the aggregated status of member objects onto
// the template, as the controller does, and checks that `kubectl rollout status` on the host
// is done only once every member has rolled out the template's current generation.
func TestRolloutStatusOfAggregatedStatus(t *testing.T) {
	const g = fleetGeneration
	deploy, sts, ds := deploymentTemplate(t), statefulSetTemplate(t), daemonSetTemplate(t)
	tests := []struct {
		name     string
		template *unstructured.Unstructured
		items    []workv1alpha2.AggregatedStatusItem
		done     bool
		fails    bool // kubectl gives up with an error
	}{
		{name: "Deployment rolled out everywhere", template: deploy, done: true,
			items: applied(t, rolledOut(g, 2).object(), rolledOut(g, 3).object())},
		{name: "Deployment: a member at the previous generation", template: deploy,
			items: applied(t, rolledOut(g, 2).object(), rolledOut(g-1, 3).object())},
		{name: "Deployment: a member's controller behind its spec", template: deploy,
			items: applied(t, rolledOut(g, 2).object(), deployMember{tgen: g, replicas: 3, updated: 3, available: 3, unobserved: true}.object())},
		{name: "Deployment: a member with old pods left", template: deploy,
			items: applied(t, rolledOut(g, 2).object(), deployMember{tgen: g, replicas: 3, updated: 3, available: 3, old: 1}.object())},
		{name: "Deployment: a member with updated pods not available yet", template: deploy,
			items: applied(t, rolledOut(g, 2).object(), deployMember{tgen: g, replicas: 3, updated: 3, available: 1}.object())},
		{name: "Deployment: a member's status not collected", template: deploy,
			items: append(applied(t, rolledOut(g, 2).object()), notCollected("member2"))},
		{name: "Deployment: a member not applied", template: deploy,
			items: append(applied(t, rolledOut(g, 2).object()), item(t, "member2", false, rolledOut(g, 3).object()))},
		{name: "Deployment: a member past its progress deadline", template: deploy, fails: true,
			items: applied(t, rolledOut(g, 2).object(), deployMember{tgen: g, replicas: 3, updated: 1, available: 2, old: 2, progressing: reasonProgressDeadlineExceeded}.object())},
		{name: "Deployment: no members", template: deploy},

		{name: "StatefulSet rolled out everywhere", template: sts, done: true,
			items: applied(t, stsMember{tgen: g, replicas: 2, ready: 2, update: 2}.object(), stsMember{tgen: g, replicas: 3, ready: 3, update: 3}.object())},
		{name: "StatefulSet: a member at the previous generation", template: sts,
			items: applied(t, stsMember{tgen: g, replicas: 2, ready: 2, update: 2}.object(), stsMember{tgen: g - 1, replicas: 3, ready: 3, update: 3}.object())},
		{name: "StatefulSet: a member still updating its pods, all ready", template: sts,
			items: applied(t, stsMember{tgen: g, replicas: 2, ready: 2, update: 2}.object(), stsMember{tgen: g, replicas: 3, ready: 3, update: 2}.object())},
		{name: "StatefulSet: a member with a pod not ready", template: sts,
			items: applied(t, stsMember{tgen: g, replicas: 2, ready: 2, update: 2}.object(), stsMember{tgen: g, replicas: 3, ready: 2, update: 3}.object())},
		{name: "StatefulSet: a member's controller behind its spec", template: sts,
			items: applied(t, stsMember{tgen: g, replicas: 2, ready: 2, update: 2}.object(), stsMember{tgen: g, replicas: 3, ready: 3, update: 3, unobserved: true}.object())},
		{name: "StatefulSet: a member not collected", template: sts,
			items: append(applied(t, stsMember{tgen: g, replicas: 2, ready: 2, update: 2}.object()), notCollected("member2"))},

		{name: "DaemonSet rolled out everywhere", template: ds, done: true,
			items: applied(t, dsMember{tgen: g, desired: 3, updated: 3, available: 3}.object(), dsMember{tgen: g, desired: 2, updated: 2, available: 2}.object())},
		{name: "DaemonSet: a member at the previous generation", template: ds,
			items: applied(t, dsMember{tgen: g, desired: 3, updated: 3, available: 3}.object(), dsMember{tgen: g - 1, desired: 2, updated: 2, available: 2}.object())},
		{name: "DaemonSet: a member with pods to update", template: ds,
			items: applied(t, dsMember{tgen: g, desired: 3, updated: 3, available: 3}.object(), dsMember{tgen: g, desired: 2, updated: 1, available: 2}.object())},
		{name: "DaemonSet: a member not collected", template: ds,
			items: append(applied(t, dsMember{tgen: g, desired: 3, updated: 3, available: 3}.object()), notCollected("member2"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := aggregateOnto(t, tt.template, tt.items)
			done, err := rolloutDone(obj)
			if (err != nil) != tt.fails {
				t.Fatalf("rollout status error %v, want an error: %v", err, tt.fails)
			}
			if done != tt.done {
				t.Errorf("rollout done %v, want %v; status: %v", done, tt.done, obj.Object["status"])
			}
			// kubectl done, Argo CD Healthy and FleetRolledOut True go together.
			health, err := argoHealth(obj)
			if err != nil {
				t.Fatal(err)
			}
			rolledOut := conditionOf(obj.Object["status"].(map[string]any), ConditionFleetRolledOut)["status"] == "True"
			if tt.done != (health == argoHealthy) || (tt.done && !rolledOut) {
				t.Errorf("rollout done %v, but Argo CD health %s and FleetRolledOut %v", tt.done, health, rolledOut)
			}
		})
	}
}

// TestRolloutStatusRules checks rolloutDone itself on single objects.
func TestRolloutStatusRules(t *testing.T) {
	for _, tt := range []struct {
		obj   string
		done  bool
		fails bool
	}{
		{obj: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 2}, spec: {replicas: 2}, status: {observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 2}}`, done: true},
		{obj: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 2}, spec: {replicas: 2}, status: {observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 2}}`},
		{obj: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 2}, spec: {replicas: 2}, status: {observedGeneration: 2, conditions: [{type: Progressing, reason: ProgressDeadlineExceeded}]}}`, fails: true},
		{obj: `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: s, generation: 1}, spec: {replicas: 1, updateStrategy: {type: RollingUpdate}}, status: {observedGeneration: 1, readyReplicas: 1, currentRevision: a, updateRevision: b}}`},
		{obj: `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: s, generation: 1}, spec: {replicas: 3, updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 2}}}, status: {observedGeneration: 1, readyReplicas: 3, updatedReplicas: 1}}`, done: true},
		{obj: `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: s, generation: 1}, spec: {updateStrategy: {type: OnDelete}}}`, done: true, fails: true},
		{obj: `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: d, generation: 1}, spec: {updateStrategy: {type: RollingUpdate}}, status: {observedGeneration: 1, desiredNumberScheduled: 2, updatedNumberScheduled: 2, numberAvailable: 1}}`},
	} {
		done, err := rolloutDone(fromYAML(t, tt.obj))
		if done != tt.done || (err != nil) != tt.fails {
			t.Errorf("rolloutDone(%s) = %v, %v; want %v, error %v", tt.obj, done, err, tt.done, tt.fails)
		}
	}
}
