package interpreter

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

// Fields of a reflected status that say which spec it describes. Kinds whose status has
// status.observedGeneration reflect them, so that aggregation can tell a member that has
// rolled out the template's latest generation from one whose status is stale.
const (
	// GenerationField is the member object's metadata.generation.
	GenerationField = "generation"
	// ObservedGenerationField is the member's status.observedGeneration: the member
	// generation its controller last acted on.
	ObservedGenerationField = "observedGeneration"
	// ResourceTemplateGenerationField is the template generation the member object was
	// rendered from: its annotation resourcetemplate.karmada.io/generation.
	ResourceTemplateGenerationField = "resourceTemplateGeneration"
	// ResourceTemplateUIDField is the UID of the template the member object was rendered
	// from: its annotation resourcetemplate.karmada.io/uid. It tells a recreated template
	// from the one before, whose generations started over.
	ResourceTemplateUIDField = "resourceTemplateUID"
)

// counters are the integer status fields summed across members, for kinds with
// status.observedGeneration.
var counters = map[schema.GroupKind][]string{
	deploymentKind:  {"replicas", "readyReplicas", "updatedReplicas", "availableReplicas", "unavailableReplicas"},
	statefulSetKind: {"replicas", "readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas"},
	replicaSetKind:  {"replicas", "readyReplicas", "availableReplicas", "fullyLabeledReplicas"},
	daemonSetKind: {"currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady",
		"updatedNumberScheduled", "numberAvailable", "numberUnavailable"},
	pdbKind: {"currentHealthy", "desiredHealthy", "expectedPods", "disruptionsAllowed"},
}

// jobCounters are the integer status fields of a Job summed across members.
var jobCounters = []string{"active", "succeeded", "failed", "ready"}

// jobReflectedInts are the integer status fields of a Job that ReflectStatus keeps.
var jobReflectedInts = append(slices.Clone(jobCounters), "terminating")

// ReflectStatus returns the part of a member object's status worth sending back to the host,
// as JSON:
//
//   - Deployment, StatefulSet, ReplicaSet, DaemonSet, PodDisruptionBudget: the replica
//     counters present (see counters); generation, observedGeneration,
//     resourceTemplateGeneration and resourceTemplateUID (see GenerationField and the
//     others), which say which spec of which template the status describes; and conditions,
//     each with only those of type, status, reason, message and lastTransitionTime that are
//     non-empty strings. Other condition fields (lastUpdateTime, lastProbeTime,
//     observedGeneration) change without the condition changing; conditions without a type
//     are dropped.
//   - Job: active, succeeded, failed, ready, terminating, startTime, completionTime and
//     conditions (whole).
//   - CronJob: lastScheduleTime, lastSuccessfulTime.
//   - Pod: phase, reason, message. PersistentVolumeClaim: phase, capacity.
//   - ResourceQuota: hard, used (a FederatedResourceQuota aggregates them).
//   - Service and Ingress: loadBalancer.
//   - ConfigMap, Secret: nothing (nil).
//   - Any other kind: the whole status; nil when there is none.
//   - A kind whose customization scripts statusReflection: what the script returns.
//
// A counter or field of the wrong type (conditions that are not a list included) is an error
// naming it.
func (i Interpreter) ReflectStatus(obj *unstructured.Unstructured) (*runtime.RawExtension, error) {
	if c, ok := i.custom(obj, OperationReflectStatus); ok {
		return c.ReflectStatus(obj)
	}
	reflected, err := reflectedStatus(obj)
	if err != nil || reflected == nil {
		return nil, err
	}
	raw, err := json.Marshal(reflected)
	if err != nil {
		return nil, fmt.Errorf("encoding the reflected status: %w", err)
	}
	return &runtime.RawExtension{Raw: raw}, nil
}

// reflectedStatus picks the status fields of obj worth reflecting; nil when there are none.
func reflectedStatus(obj *unstructured.Unstructured) (map[string]any, error) {
	status, _, err := nestedMap(obj.Object, "status")
	if err != nil {
		return nil, err
	}
	gk := groupKind(obj)
	if names, ok := counters[gk]; ok {
		out, err := pickInts(status, names)
		if err != nil {
			return nil, err
		}
		if err := reflectGenerations(obj, status, out); err != nil {
			return nil, err
		}
		if err := reflectConditions(status, out); err != nil {
			return nil, err
		}
		return out, nil
	}
	switch gk {
	case jobKind:
		out, err := pickInts(status, jobReflectedInts)
		if err != nil {
			return nil, err
		}
		copyFields(status, out, "startTime", "completionTime", "conditions")
		return out, nil
	case cronJobKind:
		return copyFields(status, map[string]any{}, "lastScheduleTime", "lastSuccessfulTime"), nil
	case podKind:
		return copyFields(status, map[string]any{}, "phase", "reason", "message"), nil
	case pvcKind:
		return copyFields(status, map[string]any{}, "phase", "capacity"), nil
	case resourceQuotaKind:
		return copyFields(status, map[string]any{}, "hard", "used"), nil
	case serviceKind, ingressKind:
		return copyFields(status, map[string]any{}, "loadBalancer"), nil
	case configMapKind, secretKind:
		return nil, nil
	}
	if status == nil {
		return nil, nil
	}
	return runtime.DeepCopyJSON(status), nil
}

// reflectGenerations records which spec the status describes. An absent or unreadable
// template annotation is left out: such a status never vouches for a template generation.
func reflectGenerations(obj *unstructured.Unstructured, status, out map[string]any) error {
	out[GenerationField] = obj.GetGeneration()
	observed, found, err := nestedInt64(status, "observedGeneration")
	if err != nil {
		return fmt.Errorf("status.%w", err)
	}
	if found {
		out[ObservedGenerationField] = observed
	}
	annotations := obj.GetAnnotations()
	if g, err := strconv.ParseInt(annotations[wellknown.ResourceTemplateGenerationAnnotation], 10, 64); err == nil {
		out[ResourceTemplateGenerationField] = g
	}
	if uid := annotations[wellknown.ResourceTemplateUIDAnnotation]; uid != "" {
		out[ResourceTemplateUIDField] = uid
	}
	return nil
}

// pickInts copies the integer fields that are present.
func pickInts(status map[string]any, names []string) (map[string]any, error) {
	out := map[string]any{}
	for _, name := range names {
		n, found, err := nestedInt64(status, name)
		if err != nil {
			return nil, fmt.Errorf("status.%w", err)
		}
		if found {
			out[name] = n
		}
	}
	return out, nil
}

// copyFields deep-copies the named fields that are present from status into out.
func copyFields(status, out map[string]any, names ...string) map[string]any {
	for _, name := range names {
		if v, ok := status[name]; ok && v != nil {
			out[name] = runtime.DeepCopyJSONValue(v)
		}
	}
	return out
}

// AggregateStatus adds up the members' reflected statuses into a status for the template,
// meant to be written whole as the template's status on the host, so that kubectl, Argo CD
// and other clients judge the fleet as they would judge one cluster's object. It needs of the
// template only its kind, metadata.uid and metadata.generation, and for a Job its current
// status (see below); never its spec. The result depends only on its input, map key order
// aside, so equal input gives equal output. Times are written as the apiserver writes them
// (UTC, whole seconds).
//
// Deployment, StatefulSet, ReplicaSet, DaemonSet, PodDisruptionBudget: the counters summed
// (each sum kept within 0 and the int32 maximum; for Deployment, StatefulSet and ReplicaSet
// the counters that the apiserver wants no greater than replicas are held to it, and
// availableReplicas to readyReplicas), observedGeneration the template generation the whole
// fleet has rolled out (see below), and conditions, in this order:
//
//   - Deployment: Available, True with reason MinimumReplicasAvailable when every member's
//     Available condition is True; else False, MinimumReplicasUnavailable, the message
//     naming each member that is not, with its condition's message.
//   - Deployment: Progressing. When some member's Progressing reason is
//     ProgressDeadlineExceeded, and its controller has acted on its latest spec (see below):
//     False, reason ProgressDeadlineExceeded, the message naming those members with their
//     messages. Else, when the fleet has rolled out (FleetRolledOut
//     True) and every member's Progressing reason is NewReplicaSetAvailable: True,
//     NewReplicaSetAvailable. Else True, ReplicaSetUpdated, the message naming each member
//     still rolling out and why.
//   - Deployment, ReplicaSet: ReplicaFailure, True when some member's is True, with the
//     first such member's reason and a message naming each; left out otherwise.
//   - PodDisruptionBudget: DisruptionAllowed, True (SufficientPods) when every member's is
//     True; else False, SyncFailed when a member's is, else InsufficientPods, naming the
//     members. Left out while some member has not reported it, and when no member gives it
//     a lastTransitionTime, which the apiserver requires on these conditions.
//   - Deployment, StatefulSet, ReplicaSet, DaemonSet: FleetRolledOut (ConditionFleetRolledOut),
//     True with reason AllMembersRolledOut when every member has rolled out the template's
//     current generation; else False, reason MembersBehind, the message naming, in item
//     order, each member behind and why ("Behind: member2 (at template generation 3 of 4),
//     member1 (status not collected yet)"); with no members False, reason NoMembers. It has
//     no lastTransitionTime.
//
// Without members, Available is False and Progressing True (ReplicaSetUpdated), both with
// the message "No member clusters". Member conditions aggregated this way carry the latest
// lastTransitionTime among the members' conditions of that type with the same status; none
// when no member gives one. Messages name at most 30 members, each member's part cut to 200
// bytes.
//
// Job: active, succeeded, failed and ready summed (ready no more than active), terminating
// summed when a member reports it; startTime the earliest member's. Conditions, True only,
// each with a reason, a message naming members, and a lastTransitionTime (and lastProbeTime,
// equal to it) taken from the members' when they give one:
//
//   - When every member's Job is Complete, or has met its success criteria
//     (SuccessCriteriaMet), and none has failed: SuccessCriteriaMet, reason
//     CompletionsReached, at the latest member's. Once every member's is Complete also
//     Complete, CompletionsReached, with completionTime (and transition time) the latest
//     member's completionTime, and active, ready and terminating 0.
//   - When some member's Job has failed (Failed or FailureTarget True): FailureTarget, with
//     the first failing member's reason (MemberFailed when it has none), at the earliest
//     member failure, the message naming failing and running members. Once every member's
//     Job has finished (Complete or Failed) also Failed, same reason, at the latest member's
//     finish, and active, ready and terminating 0. Until then (a member still running, or not
//     collected) the Job is not Failed: Failed means no pod runs anywhere any more.
//
// Complete and Failed are never written together, nor SuccessCriteriaMet and FailureTarget;
// completionTime only with Complete, never before startTime. A finished Job without a
// startTime from any member gets the earliest time a member reports instead; without any,
// it is not marked finished. The apiserver (1.31 and later) rejects a Job status update that
// decreases succeeded or failed, removes a True Complete, Failed, FailureTarget or
// SuccessCriteriaMet condition, or changes a startTime or completionTime once set. So when the
// template carries a status, which for a Job held by the host (spec.managedBy JobManagedBy) is
// the one Flotilla last wrote, the result keeps to it: counters no lower than its own, those
// conditions kept (with their transition times; Complete is not given SuccessCriteriaMet
// afterwards), startTime and completionTime kept, and a finished Job stays finished with 0
// active pods. Applying AggregateStatus again to its own result gives the same result.
//
// CronJob: the latest lastScheduleTime and lastSuccessfulTime.
//
// Pod: phase Succeeded when every member's pod succeeded, else the first of Failed, Unknown,
// Pending, Running that any member is in (a member without a phase is Pending).
// PersistentVolumeClaim: Bound when every member's is, else Lost if any is, else Pending.
//
// Service, Ingress: loadBalancer.ingress of every member, in item order, without duplicates.
//
// ConfigMap, Secret and any other kind: nil, no aggregated status; each member's reflected
// status stays readable in its item.
//
// Items without a status are skipped in sums. The error reports an item whose status is not
// a JSON object, naming its cluster.
//
// # Observed generation
//
// A member has rolled out template generation G when its item is applied and its reflected
// status says it was rendered from this template (same resourceTemplateUID, when both are
// known) at generation G (resourceTemplateGeneration), and its controller has acted on the
// object's latest spec (observedGeneration >= generation). The aggregated observedGeneration
// is the least G over all members: the newest template generation every member has acted on.
// It equals the template's generation only once the whole fleet has rolled it out, so a
// stale member status, or one not yet collected, never makes a new generation look rolled
// out. It is left out when any member has not rolled out anything knowable, and when there
// are no members. The template's own status is not consulted for it.
func (i Interpreter) AggregateStatus(template *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem) (map[string]any, error) {
	if c, ok := i.custom(template, OperationAggregateStatus); ok {
		return c.AggregateStatus(template, items)
	}
	statuses, err := decodeItems(items)
	if err != nil {
		return nil, err
	}
	gk := groupKind(template)
	if _, ok := counters[gk]; ok {
		return aggregateWorkload(gk, template, items, statuses), nil
	}
	switch gk {
	case jobKind:
		return aggregateJob(template, items, statuses), nil
	case cronJobKind:
		return aggregateTimes(statuses, latest, "lastScheduleTime", "lastSuccessfulTime"), nil
	case podKind:
		return aggregatePhase(statuses, "Succeeded", "Pending", "Failed", "Unknown", "Pending", "Running"), nil
	case pvcKind:
		return aggregatePhase(statuses, "Bound", "Pending", "Lost", "Pending"), nil
	case serviceKind, ingressKind:
		return aggregateLoadBalancer(statuses), nil
	}
	return nil, nil
}

// decodeItems decodes each item's reflected status; nil for an item without one.
func decodeItems(items []workv1alpha2.AggregatedStatusItem) ([]map[string]any, error) {
	out := make([]map[string]any, len(items))
	for i, item := range items {
		if item.Status == nil || len(item.Status.Raw) == 0 {
			continue
		}
		var m map[string]any
		if err := utiljson.Unmarshal(item.Status.Raw, &m); err != nil {
			return nil, fmt.Errorf("aggregatedStatus of cluster %q: %w", item.ClusterName, err)
		}
		out[i] = m
	}
	return out, nil
}

// sumInts sums integer fields over the statuses, each as an int64 within the range of the
// int32 status fields; a field of the wrong type, or negative, counts as 0.
func sumInts(statuses []map[string]any, names []string) map[string]any {
	out := make(map[string]any, len(names))
	for _, name := range names {
		var sum int64
		for _, s := range statuses {
			if n, _, err := nestedInt64(s, name); err == nil {
				sum = clampCount(sum + clampCount(n))
			}
		}
		out[name] = sum
	}
	return out
}

// conditionTrue reports whether a status has the condition with status True, and its
// lastTransitionTime.
func conditionTrue(status map[string]any, conditionType string) (string, bool) {
	conditions, _, _ := nestedSlice(status, "conditions")
	for _, c := range conditions {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != conditionType {
			continue
		}
		at, _ := m["lastTransitionTime"].(string)
		return at, m["status"] == "True"
	}
	return "", false
}

// pick chooses between two RFC 3339 times.
type pick func(a, b time.Time) bool

func latest(a, b time.Time) bool { return a.After(b) }

// aggregateTimes picks, for each field, one RFC 3339 time among the members', in canonical
// form (see canonicalTime); unparsable times are skipped.
func aggregateTimes(statuses []map[string]any, better pick, names ...string) map[string]any {
	out := map[string]any{}
	for _, name := range names {
		var best time.Time
		var bestRaw string
		for _, s := range statuses {
			raw, _ := s[name].(string)
			t, err := time.Parse(time.RFC3339, raw)
			if err != nil {
				continue
			}
			if bestRaw == "" || better(t, best) {
				best, bestRaw = t, raw
			}
		}
		if bestRaw != "" {
			out[name], _ = canonicalTime(bestRaw)
		}
	}
	return out
}

// aggregatePhase returns the fleet's phase: whole when every member is in it; otherwise
// the first phase of precedence that any member is in. A member without a phase, or with one
// not listed, counts as missing.
func aggregatePhase(statuses []map[string]any, whole, missing string, precedence ...string) map[string]any {
	if len(statuses) == 0 {
		return map[string]any{}
	}
	seen := map[string]bool{}
	for _, s := range statuses {
		phase, _ := s["phase"].(string)
		if phase != whole && !slices.Contains(precedence, phase) {
			phase = missing
		}
		seen[phase] = true
	}
	for _, p := range precedence {
		if seen[p] {
			return map[string]any{"phase": p}
		}
	}
	return map[string]any{"phase": whole}
}

// aggregateLoadBalancer joins the members' load balancer ingress points.
func aggregateLoadBalancer(statuses []map[string]any) map[string]any {
	var ingress []any
	seen := map[string]bool{}
	for _, s := range statuses {
		list, _, err := nestedSlice(s, "loadBalancer", "ingress")
		if err != nil {
			continue
		}
		for _, point := range list {
			key, err := json.Marshal(point)
			if err != nil || seen[string(key)] {
				continue
			}
			seen[string(key)] = true
			ingress = append(ingress, runtime.DeepCopyJSONValue(point))
		}
	}
	lb := map[string]any{}
	if len(ingress) > 0 {
		lb["ingress"] = ingress
	}
	return map[string]any{"loadBalancer": lb}
}
