package join

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-io/flotilla/api/wellknown"
)

// ClusterAdminRole is the ClusterRole bound instead of the member role with
// Options.ClusterAdmin.
const ClusterAdminRole = "cluster-admin"

// MemberRules are the least rights the control plane needs in a member: the execution
// controller server-side applies and deletes whatever kinds are propagated, and the status
// controllers watch them, so every resource with get, list, watch, create, update, patch and
// delete; and the health and version endpoints the cluster controller reads.
//
// Deliberately absent: escalate, bind and impersonate. Without them the ServiceAccount cannot
// grant itself, or act with, rights it does not hold (RBAC checks every Role it creates or
// binds against its own rights), and no deletecollection either.
func MemberRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{
			APIGroups: []string{rbacv1.APIGroupAll},
			Resources: []string{rbacv1.ResourceAll},
			Verbs:     []string{"get", "list", "watch", "create", "update", "patch", "delete"},
		},
		{
			NonResourceURLs: []string{"/readyz", "/healthz", "/version"},
			Verbs:           []string{"get"},
		},
	}
}

// MemberAccessObjects are the ServiceAccount flotilla-system/<access>, and the ClusterRole and
// ClusterRoleBinding <access> with MemberRules, that GrantMemberAccess applies (without
// cluster-admin): for rendering them as manifests.
func MemberAccessObjects(access string, labels map[string]string) (*corev1.ServiceAccount, *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
	sa := &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Name: access, Namespace: wellknown.SystemNamespace, Labels: labels}}
	cr := &rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: access, Labels: labels}, Rules: MemberRules()}
	crb := &rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: access, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: access},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: access, Namespace: wellknown.SystemNamespace}}}
	return sa, cr, crb
}
