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

// ReflectStatus returns the part of a member object's status worth sending back to the host,
// as JSON:
//
//   - Deployment, StatefulSet, ReplicaSet, DaemonSet, PodDisruptionBudget: the replica
//     counters, plus generation, observedGeneration, resourceTemplateGeneration and
//     resourceTemplateUID (see GenerationField and the others), which say which spec of
//     which template the status describes.
//   - Job: active, succeeded, failed, ready, startTime, completionTime, conditions.
//   - CronJob: lastScheduleTime, lastSuccessfulTime.
//   - Pod: phase, reason, message. PersistentVolumeClaim: phase, capacity.
//   - Service and Ingress: loadBalancer.
//   - ConfigMap, Secret: nothing (nil).
//   - Any other kind: the whole status; nil when there is none.
//
// A counter or field of the wrong type is an error naming it.
func (Interpreter) ReflectStatus(obj *unstructured.Unstructured) (*runtime.RawExtension, error) {
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
		return out, nil
	}
	switch gk {
	case jobKind:
		out, err := pickInts(status, jobCounters)
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
// the way the template's own controller would report it for the whole fleet:
//
//   - Deployment, StatefulSet, ReplicaSet, DaemonSet, PodDisruptionBudget: counters summed,
//     and observedGeneration the template generation the whole fleet has rolled out (see
//     below).
//   - Job: counters summed; startTime the earliest; completionTime the latest, once every
//     member has one; a Failed condition when any member failed, else a Complete condition
//     when every member completed.
//   - CronJob: the latest lastScheduleTime and lastSuccessfulTime.
//   - Pod: phase Succeeded when every member's pod succeeded, else the first of Failed,
//     Unknown, Pending, Running that any member is in (a member without a phase is Pending).
//     PersistentVolumeClaim: Bound when every member's is, else Lost if any is, else Pending.
//   - Service, Ingress: loadBalancer.ingress of every member, in item order, without
//     duplicates.
//   - ConfigMap, Secret and any other kind: nil, no aggregated status; each member's
//     reflected status stays readable in its item.
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
// are no members. The template's own status is not consulted: on the host it belongs to the
// host's controllers, which observe the template without running it.
func (Interpreter) AggregateStatus(template *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem) (map[string]any, error) {
	statuses, err := decodeItems(items)
	if err != nil {
		return nil, err
	}
	gk := groupKind(template)
	if names, ok := counters[gk]; ok {
		status := sumInts(statuses, names)
		if g, ok := fleetObservedGeneration(template, items, statuses); ok {
			status[ObservedGenerationField] = g
		}
		return status, nil
	}
	switch gk {
	case jobKind:
		return aggregateJob(statuses), nil
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

// sumInts sums integer fields over the statuses; a field of the wrong type counts as 0.
func sumInts(statuses []map[string]any, names []string) map[string]any {
	out := make(map[string]any, len(names))
	for _, name := range names {
		var sum int64
		for _, s := range statuses {
			if n, _, err := nestedInt64(s, name); err == nil {
				sum += n
			}
		}
		out[name] = sum
	}
	return out
}

// fleetObservedGeneration returns the template generation every member has rolled out, and
// false when that is unknown. See AggregateStatus.
func fleetObservedGeneration(template *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem, statuses []map[string]any) (int64, bool) {
	if len(items) == 0 {
		return 0, false
	}
	least := template.GetGeneration()
	for i, s := range statuses {
		g, ok := rolledOutGeneration(template, items[i], s)
		if !ok {
			return 0, false
		}
		least = min(least, g)
	}
	return least, true
}

// rolledOutGeneration returns the template generation one member has rolled out.
func rolledOutGeneration(template *unstructured.Unstructured, item workv1alpha2.AggregatedStatusItem, status map[string]any) (int64, bool) {
	if !item.Applied || status == nil {
		return 0, false
	}
	if uid, _ := status[ResourceTemplateUIDField].(string); uid != "" && template.GetUID() != "" && uid != string(template.GetUID()) {
		return 0, false
	}
	tg, found, err := nestedInt64(status, ResourceTemplateGenerationField)
	if err != nil || !found || tg > template.GetGeneration() {
		return 0, false // a generation ahead of the template's is from a template since deleted
	}
	g, _, err := nestedInt64(status, GenerationField)
	if err != nil {
		return 0, false
	}
	observed, found, err := nestedInt64(status, ObservedGenerationField)
	if err != nil || !found || observed < g {
		return 0, false
	}
	return tg, true
}

func aggregateJob(statuses []map[string]any) map[string]any {
	out := sumInts(statuses, jobCounters)
	for k, v := range aggregateTimes(statuses, earliest, "startTime") {
		out[k] = v
	}
	if everyHas(statuses, "completionTime") {
		for k, v := range aggregateTimes(statuses, latest, "completionTime") {
			out[k] = v
		}
	}
	if c := jobCondition(statuses); c != nil {
		out["conditions"] = []any{c}
	}
	return out
}

// jobCondition returns the fleet's Failed or Complete condition, nil when neither holds.
// Its transition time is the latest of the members' for that condition.
func jobCondition(statuses []map[string]any) map[string]any {
	var failed []int
	complete := len(statuses) > 0
	var failedAt, completeAt string
	for i, s := range statuses {
		if at, ok := conditionTrue(s, "Failed"); ok {
			failed = append(failed, i)
			failedAt = later(failedAt, at)
		}
		at, ok := conditionTrue(s, "Complete")
		complete = complete && ok
		completeAt = later(completeAt, at)
	}
	switch {
	case len(failed) > 0:
		return condition("Failed", "JobFailed", fmt.Sprintf("Job failed in %d of %d member clusters", len(failed), len(statuses)), failedAt)
	case complete:
		return condition("Complete", "Completed", "Job completed in every member cluster", completeAt)
	}
	return nil
}

func condition(conditionType, reason, message, at string) map[string]any {
	c := map[string]any{"type": conditionType, "status": "True", "reason": reason, "message": message}
	if at != "" {
		c["lastTransitionTime"] = at
	}
	return c
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

// everyHas reports whether there are statuses and each has the field.
func everyHas(statuses []map[string]any, name string) bool {
	if len(statuses) == 0 {
		return false
	}
	for _, s := range statuses {
		if _, ok := s[name].(string); !ok {
			return false
		}
	}
	return true
}

// pick chooses between two RFC 3339 times.
type pick func(a, b time.Time) bool

func earliest(a, b time.Time) bool { return a.Before(b) }
func latest(a, b time.Time) bool   { return a.After(b) }

// aggregateTimes picks, for each field, one RFC 3339 time among the members'; unparsable
// times are skipped.
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
			out[name] = bestRaw
		}
	}
	return out
}

// later returns the later of two RFC 3339 times; an unparsable one loses.
func later(a, b string) string {
	ta, errA := time.Parse(time.RFC3339, a)
	tb, errB := time.Parse(time.RFC3339, b)
	switch {
	case errB != nil:
		return a
	case errA != nil || tb.After(ta):
		return b
	}
	return a
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
