package join

import (
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/flotilla-io/flotilla/api/wellknown"
)

// GuardName names the ValidatingAdmissionPolicy and its binding that guard the member
// credential <access>.
func GuardName(access string) string { return access + "-guard" }

// MemberGuard is the ValidatingAdmissionPolicy (and its binding) that GrantMemberAccess
// installs in the member beside the credential's ClusterRole. It matches only requests of the
// credential's ServiceAccount and denies what RBAC cannot exclude, or what a wider binding
// someone adds later should not bring back:
//
//   - writes (create, update, patch, delete) in SystemNamespaces, and of those Namespaces;
//   - CONNECT: exec, attach, port-forward and proxy into pods, nodes and services;
//   - TokenRequests (serviceaccounts/token) and pods/ephemeralcontainers;
//   - Secrets of type kubernetes.io/service-account-token (the token controller fills them
//     with a token of the ServiceAccount they name: a TokenRequest by other means).
//
// Without allowRBACEscalation also, since RBAC's own escalation check knows nothing of this
// guard and would let the credential pass its rights to someone the guard does not match:
//
//   - ClusterRoles labelled rbac.authorization.k8s.io/aggregate-to-*: their rules would be
//     aggregated into admin, edit and view, and granted to whoever holds those;
//   - updates and deletions of ClusterRoles and ClusterRoleBindings Flotilla did not
//     propagate (not labelled karmada.io/managed): changing a role bound elsewhere grants
//     its new rules to its subjects.
//
// Admission policies do not apply to admission policy objects, and the credential may not
// write admissionregistration.k8s.io (MemberRules), so it cannot remove its own guard.
// Impersonation is refused by RBAC (no impersonate verb) before admission sees a request.
func MemberGuard(access string, labels map[string]string, allowRBACEscalation bool) (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding) {
	name := GuardName(access)
	user := "system:serviceaccount:" + wellknown.SystemNamespace + ":" + access
	deny := func(expr, what string) admissionv1.Validation {
		// Forbidden (403), as RBAC's refusals are, rather than the default Invalid (422).
		return admissionv1.Validation{Expression: expr, Message: fmt.Sprintf("Flotilla's member credential %s may not %s", access, what),
			Reason: ptr.To(metav1.StatusReasonForbidden)}
	}
	quoted := make([]string, len(SystemNamespaces))
	for i, ns := range SystemNamespaces {
		quoted[i] = fmt.Sprintf("%q", ns)
	}
	validations := []admissionv1.Validation{
		deny(fmt.Sprintf("!(has(request.namespace) && request.namespace in [%s])", strings.Join(quoted, ", ")),
			fmt.Sprintf("write in the namespaces %s (nor write those namespaces)", strings.Join(SystemNamespaces, ", "))),
		deny("request.operation != 'CONNECT'", "exec, attach, port-forward or proxy into pods, nodes or services"),
		deny("!(request.resource.group == '' && has(request.subResource) && "+
			"((request.resource.resource == 'serviceaccounts' && request.subResource == 'token') || "+
			"(request.resource.resource == 'pods' && request.subResource == 'ephemeralcontainers')))",
			"create ServiceAccount tokens (TokenRequests) or add ephemeral containers to pods"),
		deny("!(request.resource.group == '' && request.resource.resource == 'secrets' && !has(request.subResource) && request.operation != 'DELETE' && "+
			"has(object.type) && object.type == 'kubernetes.io/service-account-token')",
			"write Secrets of type kubernetes.io/service-account-token (the token controller would fill them with a ServiceAccount's token)"),
	}
	if !allowRBACEscalation {
		clusterRBAC := "request.resource.group == 'rbac.authorization.k8s.io' && request.resource.resource in ['clusterroles', 'clusterrolebindings']"
		hint := fmt.Sprintf("; join (or register) the member with %s to allow it", AllowRBACEscalationFlag)
		validations = append(validations,
			deny("!(request.resource.group == 'rbac.authorization.k8s.io' && request.resource.resource == 'clusterroles' && request.operation != 'DELETE' && "+
				"has(object.metadata.labels) && object.metadata.labels.exists(k, k.startsWith('rbac.authorization.k8s.io/aggregate-to-')))",
				"label a ClusterRole rbac.authorization.k8s.io/aggregate-to-* (its rules would go to whoever holds admin, edit or view)"+hint),
			deny(fmt.Sprintf("!(%s) || request.operation == 'CREATE' || (has(oldObject.metadata.labels) && %q in oldObject.metadata.labels && oldObject.metadata.labels[%q] == %q)",
				clusterRBAC, wellknown.ManagedLabel, wellknown.ManagedLabel, wellknown.ManagedLabelValue),
				"change or delete a ClusterRole or ClusterRoleBinding that Flotilla did not propagate (not labelled "+
					wellknown.ManagedLabel+"="+wellknown.ManagedLabelValue+"): it would change the rights of whoever it is bound to"+hint),
		)
	}
	policy := &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update, admissionv1.Delete, admissionv1.Connect},
					Rule:       admissionv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*/*"}},
				},
			}}},
			MatchConditions: []admissionv1.MatchCondition{{Name: "member-credential", Expression: fmt.Sprintf("request.userInfo.username == %q", user)}},
			Validations:     validations,
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
	return policy, binding
}
