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
// status.observedGeneration reflect all three, so that aggregation can tell a member that
// has rolled out the template's latest generation from one whose status is stale.
const (
	// GenerationField is the member object's metadata.generation.
	GenerationField = "generation"
	// ObservedGenerationField is the member's status.observedGeneration: the member
	// generation its controller last acted on.
	ObservedGenerationField = "observedGeneration"
	// ResourceTemplateGenerationField is the template generation the member object was
	// rendered from: its annotation resourcetemplate.karmada.io/generation.
	ResourceTemplateGenerationField = "resourceTemplateGeneration"
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
//     counters, plus generation, observedGeneration and resourceTemplateGeneration (see
//     GenerationField and friends).
//   - Job: active, succeeded, failed, ready, startTime, completionTime, conditions.
//   - CronJob: lastScheduleTime, lastSuccessfulTime.
//   - Pod: phase, reason, message. PersistentVolumeClaim: phase, capacity.
//   - Service and Ingress: loadBalancer.
//   - ConfigMap, Secret: nothing (nil).
//   - Any other kind: the whole status; nil when there is none.
//
// A counter or field of the wrong type is an error naming it.
func (Interpreter) ReflectStatus(obj *unstructured.Unstructured) (*runtime.RawExtension, error) {
	reflected, err := reflect(obj)
	if err != nil || reflected == nil {
		return nil, err
	}
	raw, err := json.Marshal(reflected)
	if err != nil {
		return nil, fmt.Errorf("encoding the reflected status: %w", err)
	}
	return &runtime.RawExtension{Raw: raw}, nil
}

func reflect(obj *unstructured.Unstructured) (map[string]any, error) {
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
		return out, reflectGenerations(obj, status, out)
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

// reflectGenerations records which spec the status describes.
func reflectGenerations(obj *unstructured.Unstructured, status, out map[string]any) error {
	out[GenerationField] = obj.GetGeneration()
	observed, found, err := nestedInt64(status, "observedGeneration")
	if err != nil {
		return fmt.Errorf("status.%w", err)
	}
	if found {
		out[ObservedGenerationField] = observed
	}
	if g, ok := templateGeneration(obj); ok {
		out[ResourceTemplateGenerationField] = g
	}
	return nil
}

// templateGeneration reads the template generation a member object was rendered from. An
// absent or unreadable annotation counts as unknown: such a status never vouches for a
// generation.
func templateGeneration(obj *unstructured.Unstructured) (int64, bool) {
	v, ok := obj.GetAnnotations()[wellknown.ResourceTemplateGenerationAnnotation]
	if !ok {
		return 0, false
	}
	g, err := strconv.ParseInt(v, 10, 64)
	return g, err == nil
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
//   - Deployment, StatefulSet, ReplicaSet, DaemonSet, PodDisruptionBudget: counters summed.
//     status.observedGeneration is the template's metadata.generation only when every member
//     has rolled out that generation: each item is applied and has a reflected status whose
//     resourceTemplateGeneration equals the template's generation and whose
//     observedGeneration is at least the member's generation. Otherwise it stays what the
//     template's status already says (absent when it says nothing), so a stale member never
//     makes a new generation look rolled out, and the value never goes backwards. With no
//     items at all nothing is rolled out.
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
func (Interpreter) AggregateStatus(template *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem) (map[string]any, error) {
	statuses, err := decodeItems(items)
	if err != nil {
		return nil, err
	}
	gk := groupKind(template)
	if names, ok := counters[gk]; ok {
		status := sumInts(statuses, names)
		if g, ok := observedGeneration(template, items, statuses); ok {
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

// observedGeneration returns the template's observedGeneration after aggregation, and false
// when it has none.
func observedGeneration(template *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem, statuses []map[string]any) (int64, bool) {
	if rolledOut(template.GetGeneration(), items, statuses) {
		return template.GetGeneration(), true
	}
	g, found, err := nestedInt64(template.Object, "status", "observedGeneration")
	return g, found && err == nil
}

// rolledOut reports whether every member runs the template's generation.
func rolledOut(generation int64, items []workv1alpha2.AggregatedStatusItem, statuses []map[string]any) bool {
	if len(items) == 0 {
		return false
	}
	for i, s := range statuses {
		if !items[i].Applied || s == nil {
			return false
		}
		tg, found, err := nestedInt64(s, ResourceTemplateGenerationField)
		if err != nil || !found || tg != generation {
			return false
		}
		g, _, err := nestedInt64(s, GenerationField)
		if err != nil {
			return false
		}
		observed, found, err := nestedInt64(s, ObservedGenerationField)
		if err != nil || !found || observed < g {
			return false
		}
	}
	return true
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
