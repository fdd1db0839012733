package join

import (
	"fmt"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
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
// And, whatever the opt-in, of the credential's own ClusterRole (on which it holds escalate:
// see MemberRules) it lets it only add rules of GroupRule's shape for Grantable groups, never
// an aggregationRule, and never delete it.
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
	validations := []admissionv1.Validation{
		deny(fmt.Sprintf("!(has(request.namespace) && request.namespace in %s)", celList(SystemNamespaces)),
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
	// Its own ClusterRole: every rule it had, or one granting a group as GroupRule does.
	notGrantable := slices.Concat([]string{"", rbacv1.APIGroupAll, rbacv1.GroupName}, readOnlyGroups)
	ownRole := fmt.Sprintf("request.resource.group == 'rbac.authorization.k8s.io' && request.resource.resource == 'clusterroles' && "+
		"has(request.name) && request.name == %q", access)
	groupRule := fmt.Sprintf("has(r.apiGroups) && size(r.apiGroups) > 0 && r.apiGroups.all(g, !(g in %s)) && "+
		"has(r.resources) && r.resources == ['*'] && has(r.verbs) && r.verbs.all(v, v in %s) && "+
		"(!has(r.resourceNames) || size(r.resourceNames) == 0) && (!has(r.nonResourceURLs) || size(r.nonResourceURLs) == 0)",
		celList(notGrantable), celList(allVerbs))
	validations = append(validations, deny(
		fmt.Sprintf("!(%s) || (request.operation == 'UPDATE' && !has(object.aggregationRule) && object.rules.all(r, r in oldObject.rules || (%s)))", ownRole, groupRule),
		"change its own ClusterRole but to add every resource of an API group other than the core group, RBAC, admission, API aggregation, "+
			"certificates, the review APIs and API priority; nor delete it"))
	if !allowRBACEscalation {
		clusterRBAC := fmt.Sprintf("request.resource.group == 'rbac.authorization.k8s.io' && request.resource.resource in ['clusterroles', 'clusterrolebindings'] && "+
			"!(has(request.name) && request.name == %q && request.resource.resource == 'clusterroles')", access)
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

// celList is a CEL list of strings.
func celList(items []string) string {
	quoted := make([]string, len(items))
	for i, s := range items {
		quoted[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}
