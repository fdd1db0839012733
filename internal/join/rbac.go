package join

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	"github.com/flotilla-io/flotilla/api/wellknown"
)

// ClusterAdminRole is the ClusterRole bound instead of the member role with
// Options.ClusterAdmin.
const ClusterAdminRole = "cluster-admin"

// AllowRBACEscalationFlag is the flag of join and register that gives the member credential
// escalate and bind (Rights.AllowRBACEscalation).
const AllowRBACEscalationFlag = "--allow-rbac-escalation"

// Rights say what the member credential may do beyond the least rights of MemberRules.
type Rights struct {
	// ClusterAdmin binds cluster-admin instead of MemberRules, and installs no guard: the
	// escape hatch for members where Flotilla must do what the least rights forbid.
	ClusterAdmin bool
	// AllowRBACEscalation adds escalate and bind on Roles and ClusterRoles and writes of
	// ClusterRoleBindings, so that RBAC objects granting rights the credential does not hold
	// can be propagated. With it the credential can grant itself anything: it is as strong as
	// cluster-admin, whatever the guard says.
	AllowRBACEscalation bool
}

// SystemNamespaces are the member namespaces the credential may not write in (see
// MemberGuard): the cluster's own components, their ServiceAccounts and leases live there.
var SystemNamespaces = []string{metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

// Verbs of the member rules.
var (
	readVerbs  = []string{"get", "list", "watch"}
	writeVerbs = []string{"create", "update", "patch", "delete"}
	allVerbs   = slices.Concat(readVerbs, writeVerbs)
)

// The core group is fixed by Kubernetes (CRDs cannot add to it), so its resources are named
// one by one. Whatever is not named is refused: bindings and pods/binding (scheduling),
// componentstatuses, namespaces/finalize, nodes/proxy, pods/attach, pods/exec,
// pods/portforward, pods/proxy, services/proxy (kubelet and in-cluster access),
// pods/ephemeralcontainers, pods/eviction, pods/resize, serviceaccounts/token (minting tokens
// of any ServiceAccount), every */status (nothing of Flotilla writes a core status in a
// member; pods/status and services/status would let the credential redirect Service traffic)
// and writes of nodes.
var (
	// coreWritable are the core kinds that templates may be: read and written.
	coreWritable = []string{
		"configmaps", "endpoints", "events", "limitranges", "namespaces", "persistentvolumeclaims",
		"persistentvolumes", "pods", "podtemplates", "replicationcontrollers", "resourcequotas",
		"secrets", "serviceaccounts", "services",
	}
	// coreReadable are read only: nodes for the Cluster's node and resource summaries.
	coreReadable = []string{"nodes"}
	// coreLogs is read by `kubectl flotilla logs`.
	coreLogs = "pods/log"
)

// Non-core groups are granted as a whole (resources "*"), since CRDs add their kinds to them,
// except the groups here.
var (
	// readOnlyGroups may be read but not written: admission (webhooks and admission policies
	// see every request, and the credential must not remove its own guard), API aggregation
	// (an APIService takes over a whole group), certificates (a CSR for a kubelet client
	// certificate is approved by the controller-manager when its requester may create
	// certificatesigningrequests/nodeclient, a subresource "*" would cover), the review APIs
	// (create-only), and API priority and fairness (a FlowSchema can starve the member's own
	// controllers).
	readOnlyGroups = []string{
		"admissionregistration.k8s.io", "apiregistration.k8s.io", "certificates.k8s.io",
		"authentication.k8s.io", "authorization.k8s.io", "flowcontrol.apiserver.k8s.io",
	}
	// flotillaGroups are granted whether or not the member serves them yet: Flotilla creates
	// their CRDs itself (the MCS controller installs ServiceExport and ServiceImport).
	flotillaGroups = []string{mcsv1alpha1.GroupName}
)

// KubernetesGroups are the non-core API groups of a plain Kubernetes member (v1.36): the
// groups of the manifests rendered without discovery (config/agent/agent.yaml).
var KubernetesGroups = []string{
	"admissionregistration.k8s.io", "apiextensions.k8s.io", "apiregistration.k8s.io", "apps",
	"authentication.k8s.io", "authorization.k8s.io", "autoscaling", "batch", "certificates.k8s.io",
	"coordination.k8s.io", "discovery.k8s.io", "events.k8s.io", "flowcontrol.apiserver.k8s.io",
	"networking.k8s.io", "node.k8s.io", "policy", "rbac.authorization.k8s.io", "resource.k8s.io",
	"scheduling.k8s.io", "storage.k8s.io",
}

// MemberRules are the least rights the control plane needs in a member whose non-core API
// groups are groups (the member's, by discovery: see ServedGroups):
//
//   - the core kinds templates may be, read and written; nodes read (cluster status); pods/log
//     read (`kubectl flotilla logs`); nothing else of the core group;
//   - every other group read, and written but for readOnlyGroups: the execution controller
//     server-side applies and deletes whatever kinds are propagated, and the status
//     controllers watch them;
//   - RBAC: Roles, RoleBindings and ClusterRoles read and written (the member's RBAC still
//     refuses one granting rights the credential does not hold), ClusterRoleBindings read and
//     deleted only: a ClusterRoleBinding grants its rights in the system namespaces too,
//     which the credential does not hold (its guard refuses them). With allowRBACEscalation:
//     escalate and bind on Roles and ClusterRoles, and ClusterRoleBindings written;
//   - escalate on role, the ClusterRole of these rules, and on nothing else: the credential may
//     add to its own rules a group served since they were made (GrantGroup), and the guard
//     lets it add only rules of GroupRule's shape for a Grantable group;
//   - the health and version endpoints, and discovery.
//
// Never granted: impersonate, deletecollection, approve, sign, and the core subresources
// listed above. The guard (MemberGuard) adds what RBAC cannot say: no writes in the system
// namespaces. API groups served after the rules were made are added by the execution
// controller when the member refuses a Work of one (GrantGroup); join (or register
// --refresh-rights) again also makes the rules from the member's groups of the moment.
func MemberRules(role string, groups []string, allowRBACEscalation bool) []rbacv1.PolicyRule {
	var readable, writable []string
	for _, g := range sortedGroups(append(slices.Clone(groups), flotillaGroups...)) {
		if g == rbacv1.GroupName {
			continue
		}
		readable = append(readable, g)
		if Grantable(g) {
			writable = append(writable, g)
		}
	}
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: coreWritable, Verbs: allVerbs},
		{APIGroups: []string{""}, Resources: coreReadable, Verbs: readVerbs},
		{APIGroups: []string{""}, Resources: []string{coreLogs}, Verbs: []string{"get"}},
	}
	if len(readable) > 0 {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: readable, Resources: []string{rbacv1.ResourceAll}, Verbs: readVerbs})
	}
	if len(writable) > 0 {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: writable, Resources: []string{rbacv1.ResourceAll}, Verbs: writeVerbs})
	}
	rbac := []string{rbacv1.GroupName}
	if allowRBACEscalation {
		rules = append(rules,
			rbacv1.PolicyRule{APIGroups: rbac, Resources: []string{"roles", "rolebindings", "clusterroles", "clusterrolebindings"}, Verbs: allVerbs},
			rbacv1.PolicyRule{APIGroups: rbac, Resources: []string{"roles", "clusterroles"}, Verbs: []string{"escalate", "bind"}})
	} else {
		rules = append(rules,
			rbacv1.PolicyRule{APIGroups: rbac, Resources: []string{"roles", "rolebindings", "clusterroles"}, Verbs: allVerbs},
			rbacv1.PolicyRule{APIGroups: rbac, Resources: []string{"clusterrolebindings"}, Verbs: append(slices.Clone(readVerbs), "delete")})
	}
	rules = append(rules, rbacv1.PolicyRule{APIGroups: rbac, Resources: []string{"clusterroles"}, ResourceNames: []string{role}, Verbs: []string{"escalate"}})
	return append(rules, rbacv1.PolicyRule{
		NonResourceURLs: []string{"/healthz", "/livez", "/readyz", "/version", "/api", "/api/*", "/apis", "/apis/*"},
		Verbs:           []string{"get"},
	})
}

// Grantable says whether the credential may read and write every resource of group, as
// MemberRules grants the groups the member serves: a non-core group other than RBAC and
// readOnlyGroups.
func Grantable(group string) bool {
	return group != "" && group != rbacv1.APIGroupAll && group != rbacv1.GroupName && !slices.Contains(readOnlyGroups, group)
}

// GroupRule is the rule GrantGroup adds for a group served after the credential's rules were
// made: every resource of it read and written, as MemberRules grants the groups it knows.
func GroupRule(group string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{rbacv1.ResourceAll}, Verbs: allVerbs}
}

// GrantGroup adds GroupRule(group) to the credential's own ClusterRole role, with the
// credential's own client cl (MemberRules gives it escalate on that role alone, and the guard
// lets it add only such rules), unless a rule already grants writes of the group. granted
// says whether the role grants the group now, added whether this call added it: the member's
// RBAC allows the group a moment later.
func GrantGroup(ctx context.Context, cl client.Client, role, group string) (granted, added bool, err error) {
	if !Grantable(group) {
		return false, false, nil
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		granted, added = false, false
		cr := &rbacv1.ClusterRole{}
		if err := cl.Get(ctx, client.ObjectKey{Name: role}, cr); err != nil {
			return err
		}
		for _, r := range cr.Rules {
			if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, rbacv1.ResourceAll) && slices.Contains(r.Verbs, "create") {
				granted = true
				return nil
			}
		}
		cr.Rules = append(cr.Rules, GroupRule(group))
		if err := cl.Update(ctx, cr); err != nil {
			return err
		}
		granted, added = true, true
		return nil
	})
	if err != nil {
		return false, false, err
	}
	return granted, added, nil
}

// sortedGroups returns the non-core groups sorted, once each.
func sortedGroups(groups []string) []string {
	out := slices.DeleteFunc(slices.Clone(groups), func(g string) bool { return g == "" })
	slices.Sort(out)
	return slices.Compact(out)
}

// ServedGroups are the non-core API groups the member serves now.
func ServedGroups(ctx context.Context, dc discovery.DiscoveryInterface) ([]string, error) {
	list, err := discovery.ToDiscoveryInterfaceWithContext(dc).ServerGroupsWithContext(ctx)
	if err != nil {
		return nil, err
	}
	groups := make([]string, 0, len(list.Groups))
	for _, g := range list.Groups {
		groups = append(groups, g.Name)
	}
	return sortedGroups(groups), nil
}

// MemberAccessObjects are the ServiceAccount flotilla-system/<access>, and the ClusterRole and
// ClusterRoleBinding <access> with MemberRules, that GrantMemberAccess applies (without
// cluster-admin): for rendering them as manifests. The guard is MemberGuard.
func MemberAccessObjects(access string, labels map[string]string, groups []string, allowRBACEscalation bool) (*corev1.ServiceAccount, *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
	sa := &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Name: access, Namespace: wellknown.SystemNamespace, Labels: labels}}
	cr := &rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: access, Labels: labels}, Rules: MemberRules(access, groups, allowRBACEscalation)}
	if allowRBACEscalation {
		cr.Annotations = map[string]string{wellknown.AllowRBACEscalationAnnotation: "true"}
	}
	crb := &rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: access, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: access},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: access, Namespace: wellknown.SystemNamespace}}}
	return sa, cr, crb
}
