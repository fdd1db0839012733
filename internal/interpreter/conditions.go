package interpreter

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// The condition Flotilla adds to the aggregated status of a Deployment, StatefulSet,
// DaemonSet or ReplicaSet template. See AggregateStatus.
const (
	// ConditionFleetRolledOut says whether every member has rolled out the template's
	// current generation.
	ConditionFleetRolledOut = "FleetRolledOut"
	// ReasonAllMembersRolledOut: FleetRolledOut is True.
	ReasonAllMembersRolledOut = "AllMembersRolledOut"
	// ReasonMembersBehind: some member has not rolled out the current generation; the message
	// names each and says why.
	ReasonMembersBehind = "MembersBehind"
	// ReasonNoMembers: the template has no member clusters.
	ReasonNoMembers = "NoMembers"
)

// conditionFields are the fields of a member condition that ReflectStatus keeps. Others
// (lastUpdateTime, lastProbeTime, observedGeneration) change without the condition changing.
var conditionFields = []string{"type", "status", "reason", "message", "lastTransitionTime"}

// reflectConditions copies status.conditions into out, each condition with only its
// conditionFields that are strings. Entries that are not objects, or have no type, are
// skipped; a conditions field that is not a list is an error.
func reflectConditions(status, out map[string]any) error {
	list, _, err := nestedSlice(status, "conditions")
	if err != nil {
		return fmt.Errorf("status.%w", err)
	}
	var kept []any
	for _, c := range list {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		if t, _ := m["type"].(string); t == "" {
			continue
		}
		k := map[string]any{}
		for _, f := range conditionFields {
			if v, ok := m[f].(string); ok && v != "" {
				k[f] = v
			}
		}
		kept = append(kept, k)
	}
	if len(kept) > 0 {
		out["conditions"] = kept
	}
	return nil
}

// memberCondition is a condition read from a member's reflected status.
type memberCondition struct {
	status, reason, message string
	// at is the lastTransitionTime in canonical form; empty when absent or unreadable.
	at string
}

// findCondition returns the first condition of the type in a reflected status. Fields that
// are not strings read as empty.
func findCondition(status map[string]any, conditionType string) (memberCondition, bool) {
	conditions, _, _ := nestedSlice(status, "conditions")
	for _, c := range conditions {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != conditionType {
			continue
		}
		var mc memberCondition
		mc.status, _ = m["status"].(string)
		mc.reason, _ = m["reason"].(string)
		mc.message, _ = m["message"].(string)
		raw, _ := m["lastTransitionTime"].(string)
		mc.at, _ = canonicalTime(raw)
		return mc, true
	}
	return memberCondition{}, false
}

// conditionIsTrue reports whether a reflected status has the condition with status True.
func conditionIsTrue(status map[string]any, conditionType string) bool {
	c, ok := findCondition(status, conditionType)
	return ok && c.status == "True"
}

// newCondition builds a condition for an aggregated status; lastTransitionTime is left out
// when at is empty.
func newCondition(conditionType, status, reason, message, at string) map[string]any {
	c := map[string]any{"type": conditionType, "status": status, "reason": reason, "message": message}
	if at != "" {
		c["lastTransitionTime"] = at
	}
	return c
}

// canonicalTime parses an RFC 3339 time and formats it the way the apiserver writes a
// metav1.Time (UTC, whole seconds), so that what Flotilla writes is what it reads back.
func canonicalTime(raw string) (string, bool) {
	t, err := time.Parse(time.RFC3339, raw)
	if err != nil {
		return "", false
	}
	return t.UTC().Truncate(time.Second).Format(time.RFC3339), true
}

// laterTime returns the later of two canonical times; an empty one loses. Canonical times
// compare as strings.
func laterTime(a, b string) string {
	if a == "" || b > a {
		return b
	}
	return a
}

// earlierTime returns the earlier of two canonical times; an empty one loses.
func earlierTime(a, b string) string {
	if a == "" || (b != "" && b < a) {
		return b
	}
	return a
}

// Limits on condition messages that name members: a fleet of hundreds of clusters, or a
// member message of any length, must not make a status too big to write.
const (
	maxNamedMembers = 30
	maxNoteLen      = 200
)

// memberNote names a member in a condition message: "cluster (why)", the why shortened to
// maxNoteLen bytes.
func memberNote(cluster, why string) string {
	if why == "" {
		return cluster
	}
	if len(why) > maxNoteLen {
		cut := maxNoteLen
		for cut > 0 && !utf8.RuneStart(why[cut]) {
			cut--
		}
		why = why[:cut] + "…"
	}
	return cluster + " (" + why + ")"
}

// joinNotes joins member notes after a prefix, naming at most maxNamedMembers of them.
func joinNotes(prefix string, notes []string) string {
	if len(notes) <= maxNamedMembers {
		return prefix + strings.Join(notes, ", ")
	}
	return fmt.Sprintf("%s%s, and %d more", prefix, strings.Join(notes[:maxNamedMembers], ", "), len(notes)-maxNamedMembers)
}

// conditionDetail says what a member condition says: its message, else its reason, else
// its type and status.
func conditionDetail(conditionType string, c memberCondition) string {
	switch {
	case c.message != "":
		return c.message
	case c.reason != "":
		return c.reason
	}
	return conditionType + "=" + c.status
}
