package join

import (
	"cmp"
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/agentauth"
)

// Member is how a member credential was made, for saying how to change its rights.
type Member struct {
	// Cluster is the Cluster's name.
	Cluster string
	// Pull is true for a Pull member: the credential is its agent's, made by register.
	Pull bool
	// AllowRBACEscalation is the opt-in the Cluster records
	// (wellknown.AllowRBACEscalationAnnotation).
	AllowRBACEscalation bool
}

// Access is the name of the credential's ServiceAccount, ClusterRole and ClusterRoleBinding
// in the member: flotilla-<cluster> for Push (join), flotilla-agent for Pull (register).
func (m Member) Access() string {
	if m.Pull {
		return agentauth.AgentServiceAccount
	}
	return wellknown.MemberAccessName(m.Cluster)
}

// RefusedByRBAC says whether err is the member's RBAC refusing a request (not its
// admission): "User ... cannot <verb> resource ... in API group ...".
func RefusedByRBAC(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), " cannot ") && strings.Contains(err.Error(), " in API group ")
}

// rbacEscalationRefused is how the member's RBAC says that an object would grant rights the
// requester does not hold (a Role or ClusterRole it creates, or the role a binding refers to).
const rbacEscalationRefused = "attempting to grant RBAC permissions not currently held"

// ExplainForbidden turns a member's 403 answer to the credential's write (or read) of an
// object of kind gvk into a message that says which right is missing and what gives it:
// --allow-rbac-escalation for RBAC objects granting more than the credential holds, joining
// again for an API group served since the credential's rules were made, --cluster-admin for
// what the least rights leave out by design. Refusals of the member's admission (the guard's
// among them) say why themselves and are kept as they are.
func ExplainForbidden(m Member, gvk schema.GroupVersionKind, err error) string {
	msg := err.Error()
	if strings.Contains(msg, "ValidatingAdmissionPolicy") || strings.Contains(msg, "admission webhook") {
		return msg
	}
	kind := cmp.Or(gvk.Kind, "object")
	rbacGroup := gvk.Group == rbacv1.GroupName
	switch {
	case rbacGroup && strings.Contains(msg, rbacEscalationRefused):
		what, command := m.again(true)
		return fmt.Sprintf("%s's credential may not grant rights it does not hold; %s to propagate this %s (%s): %s",
			m.Cluster, what, kind, command, msg)
	case rbacGroup && gvk.Kind == "ClusterRoleBinding" && !m.AllowRBACEscalation:
		what, command := m.again(true)
		return fmt.Sprintf("%s's credential may not write ClusterRoleBindings, which grant their rights in the system namespaces too, "+
			"where it holds none; %s to propagate this ClusterRoleBinding (%s): %s", m.Cluster, what, command, msg)
	case Grantable(gvk.Group):
		what, command := m.again(m.AllowRBACEscalation)
		return fmt.Sprintf("%s's credential has no rights on the API group %s, which the member did not serve when it was joined, "+
			"and could not add them to its ClusterRole %s; %s to give it the member's current groups (%s): %s",
			m.Cluster, gvk.Group, m.Access(), what, command, msg)
	}
	return fmt.Sprintf("%s's credential may not do this: Flotilla's least rights in a member leave it out by design "+
		"(see docs/member-rights.md); only a member joined with --cluster-admin allows it: %s", m.Cluster, msg)
}

// again says how to make the credential's rights anew, with --allow-rbac-escalation when
// escalation is true: in words, and the command.
func (m Member) again(escalation bool) (what, command string) {
	flag := ""
	if escalation {
		flag = " " + AllowRBACEscalationFlag
	}
	switch {
	case m.Pull && escalation:
		what = "register it with " + AllowRBACEscalationFlag
	case m.Pull:
		what = "refresh its rights"
	case escalation:
		what = "join it with " + AllowRBACEscalationFlag
	default:
		what = "join it again"
	}
	if m.Pull {
		return what, fmt.Sprintf("run `kubectl flotilla register %s --refresh-rights%s` with the member's kubeconfig", m.Cluster, flag)
	}
	return what, fmt.Sprintf("run `kubectl flotilla join %s --cluster-kubeconfig FILE%s`", m.Cluster, flag)
}
