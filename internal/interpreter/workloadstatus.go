package interpreter

import (
	"fmt"
	"math"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

// countersAtMostReplicas are, by kind, the counters the apiserver's status validation wants
// no greater than status.replicas. The availableReplicas counter must also be no greater
// than readyReplicas. Sums of valid member statuses keep both rules; capCounters makes sure
// of them for any member data.
var countersAtMostReplicas = map[schema.GroupKind][]string{
	deploymentKind:  {"updatedReplicas", "readyReplicas", "availableReplicas"},
	statefulSetKind: {"readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas"},
	replicaSetKind:  {"fullyLabeledReplicas", "readyReplicas", "availableReplicas"},
}

// capCounters enforces countersAtMostReplicas on summed counters.
func capCounters(gk schema.GroupKind, status map[string]any) {
	names, ok := countersAtMostReplicas[gk]
	if !ok {
		return
	}
	replicas, _ := status["replicas"].(int64)
	for _, name := range names {
		if n, _ := status[name].(int64); n > replicas {
			status[name] = replicas
		}
	}
	available, _ := status["availableReplicas"].(int64)
	ready, _ := status["readyReplicas"].(int64)
	if available > ready {
		status["availableReplicas"] = ready
	}
}

// aggregateWorkload aggregates the kinds with counters: Deployment, StatefulSet, ReplicaSet,
// DaemonSet and PodDisruptionBudget. See AggregateStatus.
func aggregateWorkload(gk schema.GroupKind, template *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem, statuses []map[string]any) map[string]any {
	status := sumInts(statuses, counters[gk])
	capCounters(gk, status)
	rollouts := make([]rollout, len(items))
	for i := range items {
		rollouts[i] = memberRollout(template, items[i], statuses[i])
	}
	if g, ok := fleetObservedGeneration(template, rollouts); ok {
		status[ObservedGenerationField] = g
	}
	var conditions []any
	switch gk {
	case deploymentKind:
		conditions = append(conditions,
			deploymentAvailable(items, statuses),
			deploymentProgressing(template, items, statuses, rollouts))
		if c := replicaFailure(items, statuses); c != nil {
			conditions = append(conditions, c)
		}
	case replicaSetKind:
		if c := replicaFailure(items, statuses); c != nil {
			conditions = append(conditions, c)
		}
	case pdbKind:
		// PodDisruptionBudget conditions are metav1.Conditions: the apiserver wants a
		// lastTransitionTime on each, so FleetRolledOut, which has none, is not added.
		if c := disruptionAllowed(items, statuses); c != nil {
			conditions = append(conditions, c)
		}
	}
	if gk != pdbKind {
		conditions = append(conditions, fleetRolledOut(template, items, rollouts))
	}
	if len(conditions) > 0 {
		status["conditions"] = conditions
	}
	return status
}

// rollout is how far one member has rolled out the template.
type rollout struct {
	// generation is the template generation the member has rolled out, when ok.
	generation int64
	ok         bool
	// behind says why the member is not at the template's current generation; empty when
	// it is.
	behind string
}

// memberRollout works out the template generation one member has rolled out: see
// "Observed generation" in AggregateStatus.
func memberRollout(template *unstructured.Unstructured, item workv1alpha2.AggregatedStatusItem, status map[string]any) rollout {
	current := template.GetGeneration()
	if !item.Applied {
		if item.AppliedMessage != "" {
			return rollout{behind: "not applied: " + item.AppliedMessage}
		}
		return rollout{behind: "not applied"}
	}
	if status == nil {
		return rollout{behind: "status not collected yet"}
	}
	if uid, _ := status[ResourceTemplateUIDField].(string); uid != "" && template.GetUID() != "" && uid != string(template.GetUID()) {
		return rollout{behind: "runs the object of an earlier template of the same name"}
	}
	tg, found, err := nestedInt64(status, ResourceTemplateGenerationField)
	switch {
	case err != nil || !found || tg < 0:
		return rollout{behind: "template generation unknown"}
	case tg > current:
		// A generation ahead of the template's is from a template since deleted.
		return rollout{behind: fmt.Sprintf("at template generation %d, newer than the template's %d", tg, current)}
	}
	g, _, err := nestedInt64(status, GenerationField)
	if err != nil {
		return rollout{behind: "generation unknown"}
	}
	observed, found, err := nestedInt64(status, ObservedGenerationField)
	if err != nil || !found || observed < g {
		return rollout{behind: fmt.Sprintf("template generation %d of %d not yet observed by its controller", tg, current)}
	}
	r := rollout{generation: tg, ok: true}
	if tg < current {
		r.behind = fmt.Sprintf("at template generation %d of %d", tg, current)
	}
	return r
}

// fleetObservedGeneration returns the template generation every member has rolled out, and
// false when that is unknown. See AggregateStatus.
func fleetObservedGeneration(template *unstructured.Unstructured, rollouts []rollout) (int64, bool) {
	if len(rollouts) == 0 {
		return 0, false
	}
	least := template.GetGeneration()
	for _, r := range rollouts {
		if !r.ok {
			return 0, false
		}
		least = min(least, r.generation)
	}
	return max(least, 0), true
}

// fleetRolledOut is the FleetRolledOut condition.
func fleetRolledOut(template *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem, rollouts []rollout) map[string]any {
	if len(items) == 0 {
		return newCondition(ConditionFleetRolledOut, "False", ReasonNoMembers, "No member clusters", "")
	}
	var behind []string
	for i, r := range rollouts {
		if r.behind != "" {
			behind = append(behind, memberNote(items[i].ClusterName, r.behind))
		}
	}
	if len(behind) > 0 {
		return newCondition(ConditionFleetRolledOut, "False", ReasonMembersBehind, joinNotes("Behind: ", behind), "")
	}
	return newCondition(ConditionFleetRolledOut, "True", ReasonAllMembersRolledOut,
		fmt.Sprintf("Every member cluster has rolled out template generation %d", template.GetGeneration()), "")
}

// Deployment condition types and the reasons the Deployment controller gives them.
const (
	deploymentAvailableType        = "Available"
	deploymentProgressingType      = "Progressing"
	replicaFailureType             = "ReplicaFailure"
	reasonMinimumReplicasAvail     = "MinimumReplicasAvailable"
	reasonMinimumReplicasUnavail   = "MinimumReplicasUnavailable"
	reasonNewReplicaSetAvailable   = "NewReplicaSetAvailable"
	reasonReplicaSetUpdated        = "ReplicaSetUpdated"
	reasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	reasonFailedCreate             = "FailedCreate"
)

// deploymentAvailable is Available: True when every member's Available condition is True.
func deploymentAvailable(items []workv1alpha2.AggregatedStatusItem, statuses []map[string]any) map[string]any {
	if len(items) == 0 {
		return newCondition(deploymentAvailableType, "False", reasonMinimumReplicasUnavail, "No member clusters", "")
	}
	var short []string
	var trueAt, falseAt string
	for i, s := range statuses {
		name := items[i].ClusterName
		c, ok := findCondition(s, deploymentAvailableType)
		switch {
		case s == nil:
			short = append(short, memberNote(name, "status not collected yet"))
		case !ok:
			short = append(short, memberNote(name, "no Available condition yet"))
		case c.status == "True":
			trueAt = laterTime(trueAt, c.at)
		default:
			short = append(short, memberNote(name, conditionDetail(deploymentAvailableType, c)))
			if c.status == "False" {
				falseAt = laterTime(falseAt, c.at)
			}
		}
	}
	if len(short) > 0 {
		return newCondition(deploymentAvailableType, "False", reasonMinimumReplicasUnavail,
			joinNotes("Minimum availability not met in: ", short), falseAt)
	}
	return newCondition(deploymentAvailableType, "True", reasonMinimumReplicasAvail,
		"Deployment has minimum availability in every member cluster", trueAt)
}

// deploymentProgressing is Progressing: False with ProgressDeadlineExceeded when a member's
// current rollout exceeded its deadline; else True with NewReplicaSetAvailable once the fleet has
// rolled out and every member's new ReplicaSet is available; else True with
// ReplicaSetUpdated, naming the members still rolling out.
func deploymentProgressing(template *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem, statuses []map[string]any, rollouts []rollout) map[string]any {
	var exceeded, rolling []string
	var exceededAt, trueAt string
	for i, s := range statuses {
		name := items[i].ClusterName
		c, ok := findCondition(s, deploymentProgressingType)
		// A deadline counts once the member's controller has acted on the member's latest
		// spec; before, it is about a spec since replaced, and the rollout starts over.
		if ok && c.reason == reasonProgressDeadlineExceeded && rollouts[i].ok {
			exceeded = append(exceeded, memberNote(name, c.message))
			exceededAt = laterTime(exceededAt, c.at)
			continue
		}
		if ok && c.status == "True" {
			trueAt = laterTime(trueAt, c.at)
		}
		switch {
		case rollouts[i].behind != "":
			rolling = append(rolling, memberNote(name, rollouts[i].behind))
		case !ok:
			rolling = append(rolling, memberNote(name, "no Progressing condition yet"))
		case c.reason != reasonNewReplicaSetAvailable:
			rolling = append(rolling, memberNote(name, conditionDetail(deploymentProgressingType, c)))
		}
	}
	switch {
	case len(exceeded) > 0:
		return newCondition(deploymentProgressingType, "False", reasonProgressDeadlineExceeded,
			joinNotes("Progress deadline exceeded in: ", exceeded), exceededAt)
	case len(items) == 0:
		return newCondition(deploymentProgressingType, "True", reasonReplicaSetUpdated, "No member clusters", "")
	case len(rolling) > 0:
		return newCondition(deploymentProgressingType, "True", reasonReplicaSetUpdated,
			joinNotes("Rolling out in: ", rolling), trueAt)
	}
	return newCondition(deploymentProgressingType, "True", reasonNewReplicaSetAvailable,
		fmt.Sprintf("Every member cluster has rolled out template generation %d and its new ReplicaSet is available", template.GetGeneration()), trueAt)
}

// replicaFailure is ReplicaFailure True when some member's is True, naming those members;
// nil otherwise (the controllers remove the condition once pods can be made again).
func replicaFailure(items []workv1alpha2.AggregatedStatusItem, statuses []map[string]any) map[string]any {
	var failing []string
	var reason, at string
	for i, s := range statuses {
		c, ok := findCondition(s, replicaFailureType)
		if !ok || c.status != "True" {
			continue
		}
		failing = append(failing, memberNote(items[i].ClusterName, conditionDetail(replicaFailureType, c)))
		if reason == "" {
			reason = c.reason
		}
		at = laterTime(at, c.at)
	}
	if len(failing) == 0 {
		return nil
	}
	if !isConditionReason(reason) {
		reason = reasonFailedCreate
	}
	return newCondition(replicaFailureType, "True", reason, joinNotes("Replica failure in: ", failing), at)
}

// PodDisruptionBudget condition type and the reasons the disruption controller gives it.
const (
	disruptionAllowedType  = "DisruptionAllowed"
	reasonSufficientPods   = "SufficientPods"
	reasonInsufficientPods = "InsufficientPods"
	reasonSyncFailed       = "SyncFailed"
)

// disruptionAllowed is DisruptionAllowed: True when every member's is True; else False,
// with SyncFailed when a member's controller failed to sync, else InsufficientPods. It is
// left out while some member has not reported the condition, and when no member gives a
// lastTransitionTime for it: the apiserver wants one on every PodDisruptionBudget condition.
func disruptionAllowed(items []workv1alpha2.AggregatedStatusItem, statuses []map[string]any) map[string]any {
	if len(items) == 0 {
		return nil
	}
	var disallowed []string
	reason := reasonInsufficientPods
	var trueAt, falseAt string
	for i, s := range statuses {
		c, ok := findCondition(s, disruptionAllowedType)
		switch {
		case !ok:
			return nil
		case c.status == "True":
			trueAt = laterTime(trueAt, c.at)
		default:
			disallowed = append(disallowed, memberNote(items[i].ClusterName, conditionDetail(disruptionAllowedType, c)))
			if c.reason == reasonSyncFailed {
				reason = reasonSyncFailed
			}
			falseAt = laterTime(falseAt, c.at)
		}
	}
	switch {
	case len(disallowed) > 0 && falseAt != "":
		return newCondition(disruptionAllowedType, "False", reason, joinNotes("No disruption allowed in: ", disallowed), falseAt)
	case len(disallowed) == 0 && trueAt != "":
		return newCondition(disruptionAllowedType, "True", reasonSufficientPods, "Disruptions are allowed in every member cluster", trueAt)
	}
	return nil
}

// isConditionReason reports whether s is a valid metav1.Condition reason: a letter, then
// letters, digits, '_', ',' or ':', not ending in ',' or ':'; at most 1024 bytes. Other
// condition types accept any reason, but a reason copied from a member is held to it anyway.
func isConditionReason(s string) bool {
	if s == "" || len(s) > 1024 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		switch {
		case letter:
		case i == 0:
			return false
		case c >= '0' && c <= '9' || c == '_':
		case (c == ',' || c == ':') && i < len(s)-1:
		default:
			return false
		}
	}
	return true
}

// clampCount keeps a summed counter within what an int32 status field holds.
func clampCount(n int64) int64 {
	return min(max(n, 0), math.MaxInt32)
}
