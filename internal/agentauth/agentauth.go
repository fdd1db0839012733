// Package agentauth names and defines the rights of Pull mode, in the host and in the member:
// what the agent may do with its host credential, what a bootstrap token may do, and the
// admission policy that keeps a bootstrap token to registering one Pull Cluster of its own.
//
// In the host:
//
//   - The agent is the ServiceAccount AgentServiceAccount in its Cluster's execution namespace
//     karmada-es-<cluster>. A RoleBinding there gives it the ClusterRole AgentRole (Works and
//     their status, its heartbeat Lease, Events, and tokens of itself to rotate its
//     credential), and the ClusterRole AgentClusterRoleName(cluster) gives it its own Cluster
//     and that Cluster's status, by resourceNames, and reads (never writes) the
//     ResourceInterpreterCustomizations, whose scripts it runs as the manager does. Nothing
//     else: not another execution namespace, not another Cluster, not Secrets, not policies.
//   - A bootstrap token is a short-lived token of a ServiceAccount BootstrapServiceAccount(id)
//     in SystemNamespace, bound to BootstrapRole: it may create Clusters, and the admission
//     policy BootstrapPolicyName allows it one: the Pull Cluster its id names
//     (BootstrapID(cluster, nonce)), without credentials, labels, taints or placement facts
//     (provider, region, zone, zones), carrying its own id in BootstrapTokenAnnotation. An
//     administrator labels and places the Cluster afterwards. While that annotation names a
//     token and the Cluster's agent is not reporting (no fresh heartbeat Lease), the cluster
//     controller binds ExchangeRole to the token in the execution namespace: it may then ask
//     for a token of that Cluster's agent, and of nothing else. Once the agent reports, the
//     controller consumes the bootstrap token: it removes the binding, the token's
//     ServiceAccount and ClusterRoleBinding (so the token stops working), and the annotation.
//     A token made for a Cluster that exists already (`kubectl flotilla token create NAME`
//     annotates it) re-establishes the credential of an agent that was offline past its
//     credential's expiry, the same way.
//
// In the member the agent's ServiceAccount has exactly the rights a Push join gives the
// control plane (join.MemberRules).
package agentauth

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
)

const (
	// AgentServiceAccount is the agent's ServiceAccount: in the host, in the Cluster's
	// execution namespace; in the member, in SystemNamespace.
	AgentServiceAccount = "flotilla-agent"
	// HeartbeatLease is the Lease the agent renews in its execution namespace in the host.
	HeartbeatLease = "flotilla-agent"
	// AgentRole is the ClusterRole of the agent's rights in its execution namespace, bound
	// there by the RoleBinding AgentRoleBinding.
	AgentRole = "flotilla:agent"
	// AgentRoleBinding binds AgentRole to the agent in its execution namespace.
	AgentRoleBinding = "flotilla-agent"
	// BootstrapRole is the ClusterRole of bootstrap tokens: create Clusters.
	BootstrapRole = "flotilla:agent-bootstrap"
	// ExchangeRole is the ClusterRole that lets a bootstrap token ask for a token of one
	// agent, bound by ExchangeRoleBinding in that agent's execution namespace.
	ExchangeRole = "flotilla:agent-exchange"
	// ExchangeRoleBinding binds ExchangeRole to the bootstrap token that registered the
	// Cluster, until its agent is up.
	ExchangeRoleBinding = "flotilla-agent-exchange"
	// BootstrapPolicyName names the ValidatingAdmissionPolicy, and its binding, that keep
	// bootstrap tokens to Pull Clusters of their own.
	BootstrapPolicyName = "flotilla-agent-bootstrap"

	// BootstrapTokenAnnotation on a Cluster names the bootstrap token that registered it.
	BootstrapTokenAnnotation = "flotilla.io/bootstrap-token"
	// BootstrapTokenLabel marks the ServiceAccount and bindings of a bootstrap token with its
	// id.
	BootstrapTokenLabel = "flotilla.io/bootstrap-token"
	// HostIDAnnotation on a Pull Cluster carries the host's id (wellknown.HostIDAnnotation on
	// member objects), which the agent cannot read from the host's kube-system namespace.
	HostIDAnnotation = "flotilla.io/host-id"
	// ManagedByLabel marks the host objects the cluster controller made for an agent.
	ManagedByLabel = "flotilla.io/agent-of"

	// HostSecret is the member Secret, in SystemNamespace, with the agent's host
	// credential: SecretKeyServer, SecretKeyToken, SecretKeyCA and SecretKeyExpires.
	HostSecret = "flotilla-agent-host"
	// Keys of HostSecret.
	SecretKeyServer  = "server"
	SecretKeyToken   = wellknown.SecretKeyToken
	SecretKeyCA      = wellknown.SecretKeyCABundle
	SecretKeyCluster = "cluster"
	SecretKeyIssued  = "issued"
	SecretKeyExpires = "expires"
	// LeaderElectionID names the agent's leader election Lease in the member.
	LeaderElectionID = "flotilla-agent"
)

// SystemNamespace is where bootstrap tokens' ServiceAccounts live in the host, and where the
// agent runs in the member.
const SystemNamespace = wellknown.SystemNamespace

// bootstrapPrefix is the name of every bootstrap ServiceAccount before its id.
const bootstrapPrefix = "flotilla-bootstrap-"

// BootstrapNonceLength is the length of the random part of a bootstrap token's id.
const BootstrapNonceLength = 6

// bootstrapIDPattern is what a bootstrap token's id looks like: the name of the one Cluster
// it may register, a dash, and BootstrapNonceLength random lowercase letters and digits.
var bootstrapIDPattern = regexp.MustCompile(fmt.Sprintf(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?)-[a-z0-9]{%d}$`, BootstrapNonceLength))

// BootstrapID is the id of the bootstrap token that may register cluster, with its random
// nonce: <cluster>-<nonce>.
func BootstrapID(cluster, nonce string) string { return cluster + "-" + nonce }

// BootstrapCluster returns the name of the one Cluster bootstrap token id may register. Ids
// of tokens made before tokens named their Cluster (six characters alone) name none.
func BootstrapCluster(id string) (string, bool) {
	m := bootstrapIDPattern.FindStringSubmatch(id)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// BootstrapServiceAccount is the ServiceAccount of bootstrap token id.
func BootstrapServiceAccount(id string) string { return bootstrapPrefix + id }

// BootstrapBinding is the ClusterRoleBinding that gives bootstrap token id BootstrapRole.
func BootstrapBinding(id string) string { return "flotilla:bootstrap:" + id }

// BootstrapUser is the user name a bootstrap token of id authenticates as.
func BootstrapUser(id string) string {
	return "system:serviceaccount:" + SystemNamespace + ":" + BootstrapServiceAccount(id)
}

// BootstrapUserID returns the id of the bootstrap token user authenticates with, if it is
// one.
func BootstrapUserID(user string) (string, bool) {
	return strings.CutPrefix(user, "system:serviceaccount:"+SystemNamespace+":"+bootstrapPrefix)
}

// AgentUser is the user name the agent of cluster authenticates as in the host.
func AgentUser(cluster string) string {
	return "system:serviceaccount:" + wellknown.ExecutionNamespace(cluster) + ":" + AgentServiceAccount
}

// AgentClusterRoleName names the ClusterRole, and its binding, that give the agent of
// cluster its own Cluster.
func AgentClusterRoleName(cluster string) string { return "flotilla:agent:" + cluster }

// AgentRules are AgentRole's rules, granted in one execution namespace.
func AgentRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"work.karmada.io"}, Resources: []string{"works"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
		{APIGroups: []string{"work.karmada.io"}, Resources: []string{"works/status"}, Verbs: []string{"get", "update", "patch"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{HeartbeatLease}, Verbs: []string{"get", "update", "patch"}},
		{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		// Tokens of itself only: the agent rotates its own credential.
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, ResourceNames: []string{AgentServiceAccount}, Verbs: []string{"create"}},
	}
}

// AgentClusterRules are the rules of AgentClusterRoleName(cluster): its own Cluster, and the
// ResourceInterpreterCustomizations and ResourceInterpreterWebhookConfigurations (cluster
// scoped, so not in AgentRules, which a RoleBinding grants), read only: the agent applies
// their retention, status reflection and health scripts and webhooks to its member's objects
// as the manager does for a Push member, and the manager alone reports on them.
func AgentClusterRules(cluster string) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{clusterv1alpha1.GroupVersion.Group}, Resources: []string{"clusters"}, ResourceNames: []string{cluster}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{clusterv1alpha1.GroupVersion.Group}, Resources: []string{"clusters/status"}, ResourceNames: []string{cluster}, Verbs: []string{"get", "update", "patch"}},
		{APIGroups: []string{configv1alpha1.GroupVersion.Group}, Resources: []string{"resourceinterpretercustomizations", "resourceinterpreterwebhookconfigurations"}, Verbs: []string{"get", "list", "watch"}},
	}
}

// BootstrapRules are BootstrapRole's rules.
func BootstrapRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{clusterv1alpha1.GroupVersion.Group}, Resources: []string{"clusters"}, Verbs: []string{"create"}},
	}
}

// ExchangeRules are ExchangeRole's rules, granted in one execution namespace.
func ExchangeRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, ResourceNames: []string{AgentServiceAccount}, Verbs: []string{"create"}},
	}
}

// ClusterRoles are the ClusterRoles Pull mode needs in the host before any agent registers:
// the installation ships them (config/rbac/agent_roles.yaml) and `kubectl flotilla token
// create` applies them too.
func ClusterRoles() []rbacv1.ClusterRole {
	mk := func(name string, rules []rbacv1.PolicyRule) rbacv1.ClusterRole {
		return rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/part-of": "flotilla"}},
			Rules:      rules,
		}
	}
	return []rbacv1.ClusterRole{mk(AgentRole, AgentRules()), mk(BootstrapRole, BootstrapRules()), mk(ExchangeRole, ExchangeRules())}
}

// BootstrapPolicy is the admission policy that keeps a bootstrap token to registering the
// one Pull Cluster it was made for:
//
//   - the Cluster its id names (BootstrapCluster), so a token registers one Cluster, under
//     the name the administrator chose when making it, and cannot take a name a policy
//     places workloads on;
//   - Pull, with no credentials (a Push Cluster's secretRef would make the control plane
//     connect with a Secret the bootstrap token chose);
//   - nothing that decides what is placed there: no labels, taints, provider, region, zone,
//     zones or resourceModels, and no annotation but BootstrapTokenAnnotation (and
//     wellknown.AllowRBACEscalationAnnotation, which records the member's own choice). An
//     administrator sets them once the Cluster is registered;
//   - the token's own id in BootstrapTokenAnnotation, so the cluster controller knows which
//     token may fetch the agent's credential.
//
// The bootstrap token's user name is all the policy needs: the id is the end of it.
func BootstrapPolicy() (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding) {
	prefix := "system:serviceaccount:" + SystemNamespace + ":" + bootstrapPrefix
	const (
		id      = "variables.id"
		cluster = "variables.cluster"
		set     = "variables.placement"
	)
	// Each field a bootstrap token may not set, as a CEL test of its presence.
	var placement []string
	for _, f := range []struct{ path, present string }{
		{"metadata.labels", "has(object.metadata.labels) && size(object.metadata.labels) > 0"},
		{"spec.taints", "has(object.spec.taints)"},
		{"spec.provider", "has(object.spec.provider)"},
		{"spec.region", "has(object.spec.region)"},
		{"spec.zone", "has(object.spec.zone)"},
		{"spec.zones", "has(object.spec.zones)"},
		{"spec.resourceModels", "has(object.spec.resourceModels)"},
	} {
		placement = append(placement, fmt.Sprintf("(%s ? [%q] : [])", f.present, f.path))
	}
	policy := &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: BootstrapPolicyName, Labels: map[string]string{"app.kubernetes.io/part-of": "flotilla"}},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
					Rule: admissionv1.Rule{APIGroups: []string{clusterv1alpha1.GroupVersion.Group}, APIVersions: []string{"*"},
						Resources: []string{"clusters"}},
				},
			}}},
			MatchConditions: []admissionv1.MatchCondition{{
				Name: "bootstrap-token", Expression: fmt.Sprintf("request.userInfo.username.startsWith(%q)", prefix),
			}},
			Variables: []admissionv1.Variable{
				{Name: "id", Expression: fmt.Sprintf("request.userInfo.username.substring(%d)", len(prefix))},
				// The Cluster the id names; "" for a token that names none.
				{Name: "cluster", Expression: fmt.Sprintf("%s.matches(%q) ? %s.substring(0, size(%s) - %d) : ''",
					id, bootstrapIDPattern.String(), id, id, BootstrapNonceLength+1)},
				{Name: "placement", Expression: strings.Join(placement, " + ")},
			},
			Validations: []admissionv1.Validation{
				{Expression: cluster + " != ''",
					Message: "this bootstrap token names no cluster (it was made by an older kubectl flotilla): make a new one with `kubectl flotilla token create NAME`"},
				{Expression: cluster + " == '' || object.metadata.name == " + cluster,
					MessageExpression: "'a bootstrap token registers one cluster, the one it was made for: this one registers ' + " + cluster +
						" + ', not ' + object.metadata.name + '. Make a token for ' + object.metadata.name + ' with `kubectl flotilla token create ' + object.metadata.name + '`'"},
				{Expression: "has(object.spec.syncMode) && object.spec.syncMode == 'Pull'",
					Message: "a bootstrap token may only register a Pull cluster: set spec.syncMode to Pull"},
				{Expression: "!has(object.spec.secretRef) && !has(object.spec.impersonatorSecretRef)",
					Message: "a bootstrap token may not give a cluster credentials: remove spec.secretRef and spec.impersonatorSecretRef"},
				{Expression: "size(" + set + ") == 0",
					MessageExpression: "'a bootstrap token may not decide what is placed on a cluster: remove ' + " + set + ".join(', ') + " +
						"'. An administrator of the host sets labels, taints, provider, region and zones once the cluster is registered'"},
				{Expression: fmt.Sprintf("!has(object.metadata.annotations) || object.metadata.annotations.all(k, k == %q || (k == %q && object.metadata.annotations[k] == 'true'))",
					BootstrapTokenAnnotation, wellknown.AllowRBACEscalationAnnotation),
					Message: fmt.Sprintf("a bootstrap token may set no annotation on a cluster but %s (and %s: \"true\", the member's own choice, recorded)",
						BootstrapTokenAnnotation, wellknown.AllowRBACEscalationAnnotation)},
				{Expression: fmt.Sprintf("has(object.metadata.annotations) && %q in object.metadata.annotations && object.metadata.annotations[%q] == %s",
					BootstrapTokenAnnotation, BootstrapTokenAnnotation, id),
					MessageExpression: fmt.Sprintf("'a bootstrap token must name itself: set the annotation %s: ' + %s", BootstrapTokenAnnotation, id)},
			},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: BootstrapPolicyName, Labels: map[string]string{"app.kubernetes.io/part-of": "flotilla"}},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        BootstrapPolicyName,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
	return policy, binding
}

// Subject is the RBAC subject of a ServiceAccount.
func Subject(namespace, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}
}

// HostObjects are the objects the cluster controller keeps in the host for the agent of a
// Pull Cluster: its ServiceAccount and RoleBinding in the execution namespace, and its own
// ClusterRole and ClusterRoleBinding. bootstrapID, when set, adds the exchange RoleBinding
// for that bootstrap token.
func HostObjects(cluster string) (sa *corev1.ServiceAccount, rb *rbacv1.RoleBinding, cr *rbacv1.ClusterRole, crb *rbacv1.ClusterRoleBinding) {
	ns := wellknown.ExecutionNamespace(cluster)
	labels := map[string]string{ManagedByLabel: cluster}
	sa = &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Name: AgentServiceAccount, Namespace: ns, Labels: labels},
	}
	rb = &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: AgentRoleBinding, Namespace: ns, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: AgentRole},
		Subjects:   []rbacv1.Subject{Subject(ns, AgentServiceAccount)},
	}
	name := AgentClusterRoleName(cluster)
	cr = &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Rules:      AgentClusterRules(cluster),
	}
	crb = &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{Subject(ns, AgentServiceAccount)},
	}
	return sa, rb, cr, crb
}

// ExchangeBinding is the RoleBinding that lets bootstrap token id ask for a token of the
// agent of cluster.
func ExchangeBinding(cluster, id string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: ExchangeRoleBinding, Namespace: wellknown.ExecutionNamespace(cluster),
			Labels: map[string]string{ManagedByLabel: cluster, BootstrapTokenLabel: id}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ExchangeRole},
		Subjects: []rbacv1.Subject{Subject(SystemNamespace, BootstrapServiceAccount(id))},
	}
}

// RotationDue reports whether a credential issued at issued and expiring at expires should
// be replaced at now: once four fifths of its lifetime have passed. A credential with unknown
// dates (an older registration) is replaced at once.
func RotationDue(issued, expires, now time.Time) bool {
	if issued.IsZero() || expires.IsZero() || !expires.After(issued) {
		return true
	}
	return !now.Before(issued.Add(expires.Sub(issued) * 4 / 5))
}
