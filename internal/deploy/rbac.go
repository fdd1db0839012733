package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// GeneratedRoles are the roles of config/rbac/role.yaml: controller-gen writes one
// ClusterRole for the cluster-wide markers and one Role per namespace a marker names.
type GeneratedRoles struct {
	ClusterRoles []rbacv1.ClusterRole
	Roles        []rbacv1.Role
}

// ReadGeneratedRoles reads config/rbac/role.yaml under root.
func ReadGeneratedRoles(root string) (*GeneratedRoles, error) {
	data, err := os.ReadFile(filepath.Join(root, RolePath))
	if err != nil {
		return nil, err
	}
	objs, err := DecodeObjects(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", RolePath, err)
	}
	out := &GeneratedRoles{}
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterRole":
			var r rbacv1.ClusterRole
			if err := Into(o, &r); err != nil {
				return nil, err
			}
			out.ClusterRoles = append(out.ClusterRoles, r)
		case "Role":
			var r rbacv1.Role
			if err := Into(o, &r); err != nil {
				return nil, err
			}
			out.Roles = append(out.Roles, r)
		default:
			return nil, fmt.Errorf("%s: unexpected %s %s", RolePath, o.GetKind(), o.GetName())
		}
	}
	if len(out.ClusterRoles) == 0 {
		return nil, fmt.Errorf("%s holds no ClusterRole: run make manifests", RolePath)
	}
	return out, nil
}

// Permissions are what the manager's ServiceAccount is granted by a set of manifests.
type Permissions struct {
	// ServiceAccount is the namespace/name the manager Deployment runs as.
	ServiceAccount string
	// Cluster are the rules of the ClusterRoles bound with ClusterRoleBindings.
	Cluster []rbacv1.PolicyRule
	// Namespaced are the rules bound with RoleBindings, by namespace.
	Namespaced map[string][]rbacv1.PolicyRule
}

// ManagerDeploymentOf returns the one Deployment of a set of manifests.
func ManagerDeploymentOf(objs []*unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ds := OfKind(objs, "Deployment")
	if len(ds) != 1 {
		return nil, fmt.Errorf("want exactly one Deployment, found %d", len(ds))
	}
	return ds[0], nil
}

// ManagerPermissions resolves, in a set of manifests, the rules granted to the ServiceAccount
// of the manager Deployment. It fails when a Role or ClusterRole of the manifests is bound to
// no one or to someone else, or a binding refers to a role the manifests do not hold: both
// mean a grant the manager does not get, or one it was not meant to.
func ManagerPermissions(objs []*unstructured.Unstructured) (*Permissions, error) {
	d, err := ManagerDeploymentOf(objs)
	if err != nil {
		return nil, err
	}
	saName, _, _ := unstructured.NestedString(d.Object, "spec", "template", "spec", "serviceAccountName")
	if saName == "" {
		return nil, fmt.Errorf("deployment %s names no serviceAccountName", d.GetName())
	}
	saNS := d.GetNamespace()
	if Find(objs, "ServiceAccount", saName) == nil {
		return nil, fmt.Errorf("deployment %s runs as ServiceAccount %s, which the manifests do not create", d.GetName(), saName)
	}
	isManager := func(subjects []rbacv1.Subject, bindingNS string) bool {
		for _, s := range subjects {
			ns := s.Namespace
			if ns == "" {
				ns = bindingNS
			}
			if s.Kind == rbacv1.ServiceAccountKind && s.Name == saName && ns == saNS {
				return true
			}
		}
		return false
	}

	clusterRoles := map[string]rbacv1.ClusterRole{}
	for _, o := range OfKind(objs, "ClusterRole") {
		var r rbacv1.ClusterRole
		if err := Into(o, &r); err != nil {
			return nil, err
		}
		clusterRoles[r.Name] = r
	}
	roles := map[string]rbacv1.Role{}
	for _, o := range OfKind(objs, "Role") {
		var r rbacv1.Role
		if err := Into(o, &r); err != nil {
			return nil, err
		}
		roles[r.Namespace+"/"+r.Name] = r
	}

	p := &Permissions{ServiceAccount: saNS + "/" + saName, Namespaced: map[string][]rbacv1.PolicyRule{}}
	bound := map[string]bool{}
	for _, o := range OfKind(objs, "ClusterRoleBinding") {
		var b rbacv1.ClusterRoleBinding
		if err := Into(o, &b); err != nil {
			return nil, err
		}
		if !isManager(b.Subjects, "") {
			return nil, fmt.Errorf("ClusterRoleBinding %s binds %s to %v, not to the manager's ServiceAccount %s", b.Name, b.RoleRef.Name, b.Subjects, p.ServiceAccount)
		}
		r, ok := clusterRoles[b.RoleRef.Name]
		if b.RoleRef.Kind != "ClusterRole" || !ok {
			return nil, fmt.Errorf("ClusterRoleBinding %s refers to %s %s, which the manifests do not hold", b.Name, b.RoleRef.Kind, b.RoleRef.Name)
		}
		bound["ClusterRole/"+r.Name] = true
		p.Cluster = append(p.Cluster, r.Rules...)
	}
	for _, o := range OfKind(objs, "RoleBinding") {
		var b rbacv1.RoleBinding
		if err := Into(o, &b); err != nil {
			return nil, err
		}
		if !isManager(b.Subjects, b.Namespace) {
			return nil, fmt.Errorf("RoleBinding %s/%s binds %s to %v, not to the manager's ServiceAccount %s", b.Namespace, b.Name, b.RoleRef.Name, b.Subjects, p.ServiceAccount)
		}
		var rules []rbacv1.PolicyRule
		switch b.RoleRef.Kind {
		case "Role":
			r, ok := roles[b.Namespace+"/"+b.RoleRef.Name]
			if !ok {
				return nil, fmt.Errorf("RoleBinding %s/%s refers to Role %s, which the manifests do not hold", b.Namespace, b.Name, b.RoleRef.Name)
			}
			bound["Role/"+r.Namespace+"/"+r.Name] = true
			rules = r.Rules
		case "ClusterRole":
			r, ok := clusterRoles[b.RoleRef.Name]
			if !ok {
				return nil, fmt.Errorf("RoleBinding %s/%s refers to ClusterRole %s, which the manifests do not hold", b.Namespace, b.Name, b.RoleRef.Name)
			}
			bound["ClusterRole/"+r.Name] = true
			rules = r.Rules
		}
		p.Namespaced[b.Namespace] = append(p.Namespaced[b.Namespace], rules...)
	}
	for name := range clusterRoles {
		if !bound["ClusterRole/"+name] {
			return nil, fmt.Errorf("ClusterRole %s is bound to no one: bind it to the manager's ServiceAccount (config/rbac)", name)
		}
	}
	for key := range roles {
		if !bound["Role/"+key] {
			return nil, fmt.Errorf("Role %s is bound to no one: add a RoleBinding to the manager's ServiceAccount in config/rbac", key)
		}
	}
	return p, nil
}

// Atoms expands rules into sorted, unique atomic grants ("group resource name verb" or
// "url verb"), so that rule sets can be compared whatever their grouping and order.
func Atoms(rules []rbacv1.PolicyRule) []string {
	var out []string
	orAny := func(s []string) []string {
		if len(s) == 0 {
			return []string{"*"}
		}
		return s
	}
	for _, r := range rules {
		for _, v := range r.Verbs {
			for _, u := range r.NonResourceURLs {
				out = append(out, "url="+u+" verb="+v)
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, n := range orAny(r.ResourceNames) {
						out = append(out, fmt.Sprintf("group=%q resource=%s name=%s verb=%s", g, res, n, v))
					}
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// DiffAtoms describes how two rule sets differ, or returns "" when they grant the same.
func DiffAtoms(want, got []rbacv1.PolicyRule) string {
	w, g := Atoms(want), Atoms(got)
	var b strings.Builder
	for _, a := range w {
		if _, found := slices.BinarySearch(g, a); !found {
			fmt.Fprintf(&b, "missing: %s\n", a)
		}
	}
	for _, a := range g {
		if _, found := slices.BinarySearch(w, a); !found {
			fmt.Fprintf(&b, "extra:   %s\n", a)
		}
	}
	return b.String()
}

// GeneratedRules returns the cluster-wide rules of config/rbac/role.yaml and its namespaced
// rules by namespace.
func (g *GeneratedRoles) GeneratedRules() (cluster []rbacv1.PolicyRule, namespaced map[string][]rbacv1.PolicyRule) {
	namespaced = map[string][]rbacv1.PolicyRule{}
	for _, r := range g.ClusterRoles {
		cluster = append(cluster, r.Rules...)
	}
	for _, r := range g.Roles {
		namespaced[r.Namespace] = append(namespaced[r.Namespace], r.Rules...)
	}
	return cluster, namespaced
}

// CompareManagerRBAC compares what two sets of manifests (say config/default and the Helm
// chart) grant their manager's ServiceAccount, rule by atomic rule. It returns "" when the
// grants are the same, and otherwise what differs.
func CompareManagerRBAC(want, got []*unstructured.Unstructured) string {
	pw, err := ManagerPermissions(want)
	if err != nil {
		return "first manifests: " + err.Error()
	}
	pg, err := ManagerPermissions(got)
	if err != nil {
		return "second manifests: " + err.Error()
	}
	var b strings.Builder
	if d := DiffAtoms(pw.Cluster, pg.Cluster); d != "" {
		fmt.Fprintf(&b, "cluster-wide grants differ (run make helm):\n%s", d)
	}
	namespaces := map[string]bool{}
	for ns := range pw.Namespaced {
		namespaces[ns] = true
	}
	for ns := range pg.Namespaced {
		namespaces[ns] = true
	}
	for ns := range namespaces {
		// The manager's own namespace may be named differently (a Helm release namespace).
		w, g := pw.Namespaced[ns], pg.Namespaced[ns]
		if d := DiffAtoms(w, g); d != "" {
			fmt.Fprintf(&b, "grants in namespace %s differ (run make helm):\n%s", ns, d)
		}
	}
	return b.String()
}
