// Package hostguard is the manager's guard on the host: a ValidatingAdmissionPolicy, and its
// binding, that deny the manager's own identity every write outside the short list of what
// Flotilla writes. RBAC is the first limit; the guard is the second, for the rights RBAC can
// only grant broadly (create cannot be limited by name, a namespace's labels not by key, a
// ServiceAccount or RoleBinding not by namespace prefix). A bug, or a stolen token, cannot
// write past the list even where the role would let it.
//
// What the manager identity may write, and nothing else:
//   - the status subresource of any kind (aggregated status of templates and of its own kinds);
//   - its own kinds: the Karmada API groups it serves, and *.flotilla.io;
//   - events, anywhere (events on templates and on its objects);
//   - leases in its own namespace (leader election, shards);
//   - execution namespaces (karmada-es-*), and in any other namespace only the label
//     flotilla.io/held;
//   - ServiceAccounts, Roles and RoleBindings in execution namespaces (Pull agents' access);
//   - ClusterRoles and ClusterRoleBindings named flotilla:agent:<cluster> (Pull agents' access);
//   - deletes of a used bootstrap token: its ServiceAccount and ClusterRoleBinding;
//   - members' credentials Secrets labelled flotilla.io/cluster in its namespace (Cluster API
//     auto-join, unjoin);
//   - ClusterProfiles and PlacementDecisions (multicluster.x-k8s.io) labelled as Flotilla's,
//     before and after the write, and the namespace wellknown.ClusterInventoryNamespace.
//
// Admission policies do not apply to admission policies: the guard cannot protect itself or
// the hold's objects. RBAC does that, by name (see controllers/namespace).
package hostguard

import (
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/agentauth"
)

// Name names the guard's ValidatingAdmissionPolicy and its binding.
const Name = "flotilla-manager-guard"

// Username is the username of a ServiceAccount.
func Username(namespace, serviceAccount string) string {
	return "system:serviceaccount:" + namespace + ":" + serviceAccount
}

// OwnGroups are the API groups whose objects are Flotilla's own, besides *.flotilla.io.
var OwnGroups = []string{"cluster.karmada.io", "policy.karmada.io", "work.karmada.io", "config.karmada.io",
	"networking.karmada.io", "apps.karmada.io"}

// Rule is one line of what the guard allows: a CEL condition and what it means.
type Rule struct {
	Name, Expression, Reason string
}

// Rules are the guard's allowed writes for the manager running in namespace.
func Rules(namespace string) []Rule {
	es := wellknown.ExecutionNamespacePrefix
	return []Rule{
		{"status", `variables.sub == 'status'`,
			"status of any kind: aggregated status of templates, and of Flotilla's objects"},
		{"own-kinds", fmt.Sprintf(`request.resource.group in %s || request.resource.group.endsWith('.flotilla.io')`, celList(OwnGroups)),
			"Flotilla's own kinds (the Karmada API groups it serves, *.flotilla.io)"},
		{"events", `request.resource.resource == 'events' && request.resource.group in ['', 'events.k8s.io'] && variables.sub == ''`,
			"events on templates and on Flotilla's objects"},
		{"leases", fmt.Sprintf(`request.resource.group == 'coordination.k8s.io' && request.resource.resource == 'leases' && variables.ns == %q`, namespace),
			"leader election and shard leases in the manager's namespace"},
		{"execution-namespaces", fmt.Sprintf(`request.resource.group == '' && request.resource.resource == 'namespaces' && variables.sub == '' && variables.name.startsWith(%q)`, es),
			"the execution namespaces karmada-es-<cluster> it creates and deletes"},
		{"held-label", `request.resource.group == '' && request.resource.resource == 'namespaces' && variables.sub == '' && request.operation == 'UPDATE' && variables.onlyHeldLabelChanged`,
			"the label " + wellknown.HeldLabel + " on opted-in namespaces, nothing else of a namespace"},
		{"agent-access", fmt.Sprintf(`variables.ns.startsWith(%q) && ((request.resource.group == '' && request.resource.resource == 'serviceaccounts') || (request.resource.group == 'rbac.authorization.k8s.io' && request.resource.resource in ['roles', 'rolebindings'])) && variables.sub == ''`, es),
			"Pull agents' ServiceAccounts and RoleBindings, in execution namespaces"},
		{"agent-cluster-roles", fmt.Sprintf(`request.resource.group == 'rbac.authorization.k8s.io' && request.resource.resource in ['clusterroles', 'clusterrolebindings'] && variables.sub == '' && variables.name.startsWith(%q)`, agentauth.AgentClusterRoleName("")),
			"Pull agents' ClusterRoles and ClusterRoleBindings flotilla:agent:<cluster>"},
		{"consume-bootstrap-tokens", fmt.Sprintf(`request.operation == 'DELETE' && variables.sub == '' && `+
			`((request.resource.group == '' && request.resource.resource == 'serviceaccounts' && variables.ns == %q && variables.name.startsWith(%q)) || `+
			`(request.resource.group == 'rbac.authorization.k8s.io' && request.resource.resource == 'clusterrolebindings' && variables.name.startsWith(%q)))`,
			namespace, agentauth.BootstrapServiceAccount(""), agentauth.BootstrapBinding("")),
			"delete a bootstrap token once its Pull agent reports (its ServiceAccount flotilla-bootstrap-<id> and ClusterRoleBinding flotilla:bootstrap:<id>)"},
		{"cluster-inventory", fmt.Sprintf(`request.resource.group == 'multicluster.x-k8s.io' && request.resource.resource in ['clusterprofiles', 'placementdecisions'] && variables.sub == '' && `+
			`(object == null || (%[1]q in variables.newLabels && variables.newLabels[%[1]q] == %[2]q)) && `+
			`(oldObject == null || (%[1]q in variables.oldLabels && variables.oldLabels[%[1]q] == %[2]q))`,
			wellknown.InventoryManagedByLabel, wellknown.InventoryManagedBy),
			"the ClusterProfiles and PlacementDecisions it publishes, labelled " + wellknown.InventoryManagedByLabel + "=" + wellknown.InventoryManagedBy + " before and after the write (none of another cluster manager's)"},
		{"member-credentials", fmt.Sprintf(`request.resource.group == '' && request.resource.resource == 'secrets' && variables.sub == '' && variables.ns == %[1]q && `+
			`(object == null || %[2]q in variables.newLabels) && (oldObject == null || %[2]q in variables.oldLabels)`, namespace, wellknown.JoinedClusterLabel),
			"the credentials Secrets of the members it joins from Cluster API (labelled " + wellknown.JoinedClusterLabel + "), in its namespace"},
		{"cluster-inventory-namespace", fmt.Sprintf(`request.resource.group == '' && request.resource.resource == 'namespaces' && variables.sub == '' && request.operation == 'CREATE' && variables.name == %q`,
			wellknown.ClusterInventoryNamespace),
			"create the ClusterProfiles' default namespace " + wellknown.ClusterInventoryNamespace + " (another namespace given by flag must exist)"},
	}
}

func celList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// Policy returns the guard for the manager's identity: the ServiceAccount serviceAccount in
// namespace.
func Policy(namespace, serviceAccount string) (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding) {
	rules := Rules(namespace)
	allowed := make([]string, len(rules))
	for i, r := range rules {
		allowed[i] = "(" + r.Expression + ")"
	}
	labels := map[string]string{"app.kubernetes.io/name": "flotilla", "app.kubernetes.io/component": "manager-guard"}
	all := admissionv1.NamedRuleWithOperations{RuleWithOperations: admissionv1.RuleWithOperations{
		Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update, admissionv1.Delete, admissionv1.Connect},
		Rule: admissionv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*/*"},
			Scope: ptr.To(admissionv1.AllScopes)},
	}}
	labelsOf := func(o string) string {
		return fmt.Sprintf("(has(%[1]s.metadata.labels) ? %[1]s.metadata.labels : {})", o)
	}
	annotationsOf := func(o string) string {
		return fmt.Sprintf("(has(%[1]s.metadata.annotations) ? %[1]s.metadata.annotations : {})", o)
	}
	user := Username(namespace, serviceAccount)
	policy := &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: Name, Labels: labels},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{all}},
			MatchConditions: []admissionv1.MatchCondition{{Name: "flotilla-manager",
				Expression: fmt.Sprintf("request.userInfo.username == %q", user)}},
			Variables: []admissionv1.Variable{
				// Empty fields of the request are absent.
				{Name: "sub", Expression: "has(request.subResource) ? request.subResource : ''"},
				{Name: "ns", Expression: "has(request.namespace) ? request.namespace : ''"},
				{Name: "name", Expression: "has(request.name) ? request.name : ''"},
				{Name: "newLabels", Expression: fmt.Sprintf("object == null ? {} : %s", labelsOf("object"))},
				{Name: "oldLabels", Expression: fmt.Sprintf("oldObject == null ? {} : %s", labelsOf("oldObject"))},
				{Name: "onlyHeldLabelChanged", Expression: fmt.Sprintf(
					`object != null && oldObject != null && %[2]s == %[3]s && `+
						`variables.newLabels.all(k, k == %[1]q || (k in variables.oldLabels && variables.oldLabels[k] == variables.newLabels[k])) && `+
						`variables.oldLabels.all(k, k == %[1]q || k in variables.newLabels)`,
					wellknown.HeldLabel, annotationsOf("object"), annotationsOf("oldObject"))},
			},
			Validations: []admissionv1.Validation{{
				Expression: strings.Join(allowed, " ||\n"),
				MessageExpression: `'Flotilla\'s manager may not ' + request.operation + ' ' + request.resource.resource + ` +
					`(variables.sub != '' ? '/' + variables.sub : '') + (variables.ns != '' ? ' in namespace ' + variables.ns : '') + ` +
					`(variables.name != '' ? ' (' + variables.name + ')' : '') + ': the guard ` + Name + ` allows it to write only its own kinds, status, events and its execution namespaces (docs/security.md)'`,
				Reason: ptr.To(metav1.StatusReasonForbidden),
			}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: Name, Labels: labels},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        Name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
	return policy, binding
}
