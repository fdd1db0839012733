package join

import (
	rbacv1 "k8s.io/api/rbac/v1"
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
