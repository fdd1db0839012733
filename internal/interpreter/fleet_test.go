package interpreter

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

// Fixtures for tests that judge an aggregated status the way its readers do: a template as
// stored on the host (with its spec) and member objects as the members' controllers leave
// them, reflected with ReflectStatus.

// The templates are at generation fleetGeneration, with UID fleetUID.
const (
	fleetGeneration = 4
	fleetUID        = "t1"
)

func deploymentTemplate(t testing.TB) *unstructured.Unstructured {
	return fromYAML(t, fmt.Sprintf(`{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: ns, uid: %s, generation: %d},
		spec: {replicas: 5, selector: {matchLabels: {app: web}}, strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 25%%, maxUnavailable: 25%%}},
			progressDeadlineSeconds: 600, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: web, image: nginx}]}}}}`, fleetUID, fleetGeneration))
}

// statefulSetTemplate has the update strategy the apiserver defaults: RollingUpdate with
// partition 0.
func statefulSetTemplate(t testing.TB) *unstructured.Unstructured {
	return fromYAML(t, fmt.Sprintf(`{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: db, namespace: ns, uid: %s, generation: %d},
		spec: {replicas: 5, serviceName: db, selector: {matchLabels: {app: db}}, updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 0}},
			template: {metadata: {labels: {app: db}}, spec: {containers: [{name: db, image: postgres}]}}}}`, fleetUID, fleetGeneration))
}

func daemonSetTemplate(t testing.TB) *unstructured.Unstructured {
	return fromYAML(t, fmt.Sprintf(`{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: agent, namespace: ns, uid: %s, generation: %d},
		spec: {selector: {matchLabels: {app: agent}}, updateStrategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 1, maxSurge: 0}},
			template: {metadata: {labels: {app: agent}}, spec: {containers: [{name: agent, image: agent}]}}}}`, fleetUID, fleetGeneration))
}

func replicaSetTemplate(t testing.TB) *unstructured.Unstructured {
	return fromYAML(t, fmt.Sprintf(`{apiVersion: apps/v1, kind: ReplicaSet, metadata: {name: rs, namespace: ns, uid: %s, generation: %d},
		spec: {replicas: 5, selector: {matchLabels: {app: rs}}, template: {metadata: {labels: {app: rs}}, spec: {containers: [{name: rs, image: nginx}]}}}}`, fleetUID, fleetGeneration))
}

func jobTemplate(t testing.TB) *unstructured.Unstructured {
	return fromYAML(t, fmt.Sprintf(`{apiVersion: batch/v1, kind: Job, metadata: {name: batch, namespace: ns, uid: %s, generation: 1},
		spec: {managedBy: flotilla.io/template, completions: 2, parallelism: 2, backoffLimit: 2, template: {spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}}}}`, fleetUID))
}

// memberMeta is the metadata of a member object rendered from template generation tgen; the
// member's own generation differs from the template's, as it does in members.
func memberMeta(name string, tgen int64) string {
	return fmt.Sprintf(`{name: %s, namespace: ns, generation: %d, annotations: {resourcetemplate.karmada.io/generation: "%d", resourcetemplate.karmada.io/uid: %s}}`,
		name, tgen+10, tgen, fleetUID)
}

// observedGeneration is the member's status.observedGeneration: its generation, or one less
// while its controller has not observed its latest spec.
func observedGeneration(tgen int64, unobserved bool) int64 {
	if unobserved {
		return tgen + 9
	}
	return tgen + 10
}

// deployMember is a member Deployment.
type deployMember struct {
	tgen               int64 // the template generation it was rendered from
	replicas           int64 // its share of the template's replicas
	updated, available int64 // pods of the new ReplicaSet, and available ones
	old                int64 // pods of old ReplicaSets still running
	unobserved         bool
	// progressing is the Progressing reason; by default NewReplicaSetAvailable once the
	// rollout is done, ReplicaSetUpdated before.
	progressing string
}

// rolledOut is a member Deployment with every replica updated and available.
func rolledOut(tgen, replicas int64) deployMember {
	return deployMember{tgen: tgen, replicas: replicas, updated: replicas, available: replicas}
}

func (m deployMember) object() string {
	total := m.updated + m.old
	available := "True"
	if m.available < m.replicas {
		available = "False"
	}
	reason := m.progressing
	switch {
	case reason == "" && m.updated == m.replicas && m.old == 0 && m.available == m.replicas && !m.unobserved:
		reason = reasonNewReplicaSetAvailable
	case reason == "":
		reason = reasonReplicaSetUpdated
	}
	progressing := "True"
	if reason == reasonProgressDeadlineExceeded {
		progressing = "False"
	}
	return fmt.Sprintf(`{apiVersion: apps/v1, kind: Deployment, metadata: %s, spec: {replicas: %d},
		status: {observedGeneration: %d, replicas: %d, updatedReplicas: %d, readyReplicas: %d, availableReplicas: %d, unavailableReplicas: %d,
			conditions: [
				{type: Available, status: "%s", reason: Minimum, message: m, lastUpdateTime: "2026-03-01T10:00:00Z", lastTransitionTime: "2026-03-01T09:00:00Z"},
				{type: Progressing, status: "%s", reason: %s, message: "ReplicaSet \"web-abc\" is progressing.", lastUpdateTime: "2026-03-01T10:00:00Z", lastTransitionTime: "2026-03-01T09:30:00Z"}]}}`,
		memberMeta("web", m.tgen), m.replicas, observedGeneration(m.tgen, m.unobserved), total, m.updated, m.available, m.available,
		max(m.replicas-m.available, 0), available, progressing, reason)
}

// stsMember is a member StatefulSet.
type stsMember struct {
	tgen                    int64
	replicas, ready, update int64
	unobserved              bool
}

func (m stsMember) object() string {
	return fmt.Sprintf(`{apiVersion: apps/v1, kind: StatefulSet, metadata: %s, spec: {replicas: %d},
		status: {observedGeneration: %d, replicas: %d, readyReplicas: %d, availableReplicas: %d, currentReplicas: %d, updatedReplicas: %d,
			currentRevision: db-1, updateRevision: db-2}}`,
		memberMeta("db", m.tgen), m.replicas, observedGeneration(m.tgen, m.unobserved), m.replicas, m.ready, m.ready, m.replicas-m.update, m.update)
}

// dsMember is a member DaemonSet.
type dsMember struct {
	tgen                        int64
	desired, updated, available int64
	unobserved                  bool
}

func (m dsMember) object() string {
	return fmt.Sprintf(`{apiVersion: apps/v1, kind: DaemonSet, metadata: %s,
		status: {observedGeneration: %d, desiredNumberScheduled: %d, currentNumberScheduled: %d, updatedNumberScheduled: %d, numberReady: %d,
			numberAvailable: %d, numberUnavailable: %d, numberMisscheduled: 0}}`,
		memberMeta("agent", m.tgen), observedGeneration(m.tgen, m.unobserved), m.desired, m.desired, m.updated, m.available, m.available, m.desired-m.available)
}

// rsMember is a member ReplicaSet.
type rsMember struct {
	tgen                int64
	replicas, available int64
	failure             bool // pods cannot be created: ReplicaFailure True
}

func (m rsMember) object() string {
	conditions := "[]"
	if m.failure {
		conditions = `[{type: ReplicaFailure, status: "True", reason: FailedCreate, message: "pods \"rs-x\" is forbidden: exceeded quota", lastTransitionTime: "2026-03-01T09:00:00Z"}]`
	}
	return fmt.Sprintf(`{apiVersion: apps/v1, kind: ReplicaSet, metadata: %s, spec: {replicas: %d},
		status: {observedGeneration: %d, replicas: %d, fullyLabeledReplicas: %d, readyReplicas: %d, availableReplicas: %d, conditions: %s}}`,
		memberMeta("rs", m.tgen), m.replicas, observedGeneration(m.tgen, false), m.available, m.available, m.available, m.available, conditions)
}

// applied reflects member objects, applied, in clusters member1, member2, ...
func applied(t *testing.T, members ...string) []workv1alpha2.AggregatedStatusItem {
	t.Helper()
	var items []workv1alpha2.AggregatedStatusItem
	for i, m := range members {
		items = append(items, item(t, fmt.Sprintf("member%d", i+1), true, m))
	}
	return items
}

// notCollected is a member whose object is applied but whose status has not come back yet.
func notCollected(cluster string) workv1alpha2.AggregatedStatusItem {
	return workv1alpha2.AggregatedStatusItem{ClusterName: cluster, Applied: true}
}

// aggregateOnto aggregates the items for the template the way the controller does, and
// returns the template with the result as its status. The controller passes only apiVersion,
// kind, metadata.uid and metadata.generation of the template, and its current status; so
// does this. The test fails when the apiserver would reject the status update, when
// aggregating again gives another result, or when aggregating onto the result changes it.
func aggregateOnto(t testing.TB, template *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem) *unstructured.Unstructured {
	t.Helper()
	aggregate := func(status any) map[string]any {
		t.Helper()
		bare := &unstructured.Unstructured{Object: map[string]any{}}
		bare.SetAPIVersion(template.GetAPIVersion())
		bare.SetKind(template.GetKind())
		bare.SetUID(template.GetUID())
		bare.SetGeneration(template.GetGeneration())
		if status != nil {
			bare.Object["status"] = runtime.DeepCopyJSONValue(status)
		}
		got, err := Interpreter{}.AggregateStatus(bare, items)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	prev, _ := template.Object["status"].(map[string]any)
	got := aggregate(template.Object["status"])
	checkWritable(t, template, prev, got)
	if diff := cmp.Diff(got, aggregate(template.Object["status"])); diff != "" {
		t.Errorf("a second aggregation differs (-first +second):\n%s", diff)
	}
	if diff := cmp.Diff(got, aggregate(got)); diff != "" {
		t.Errorf("aggregating onto the result changes it (-written +next):\n%s", diff)
	}
	out := template.DeepCopy()
	out.Object["status"] = got
	return out
}
