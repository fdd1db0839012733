package join

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
)

func TestValidateName(t *testing.T) {
	for _, name := range []string{"member1", "a", strings.Repeat("a", MaxNameLength)} {
		if err := ValidateName(name); err != nil {
			t.Errorf("ValidateName(%q) = %v", name, err)
		}
	}
	for _, name := range []string{"", "Member1", "member_1", "-m", strings.Repeat("a", MaxNameLength+1)} {
		if err := ValidateName(name); !errors.Is(err, ErrInvalidName) {
			t.Errorf("ValidateName(%q) = %v, want ErrInvalidName", name, err)
		}
	}
}

func TestCheckJoinable(t *testing.T) {
	cluster := func(name, id string) clusterv1alpha1.Cluster {
		return clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1alpha1.ClusterSpec{ID: id}}
	}
	deleting := cluster("m1", "id-1")
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	fleet := []clusterv1alpha1.Cluster{cluster("m1", "id-1"), cluster("m2", "id-2"), cluster("by-hand", "")}

	tests := []struct {
		name, join, id string
		clusters       []clusterv1alpha1.Cluster
		wantErr        error
		wantExisting   string
		wantMessage    string
	}{
		{name: "a new member", clusters: fleet, join: "m3", id: "id-3"},
		{name: "re-join rotates", clusters: fleet, join: "m1", id: "id-1", wantExisting: "m1"},
		{name: "a Cluster made by hand without id is taken over", clusters: fleet, join: "by-hand", id: "id-9", wantExisting: "by-hand"},
		{name: "same member, second name", clusters: fleet, join: "m1-again", id: "id-1", wantErr: ErrAlreadyJoined, wantMessage: `already joined as Cluster "m1"`},
		{name: "name of another member", clusters: fleet, join: "m2", id: "id-1", wantErr: ErrNameTaken, wantMessage: "choose another name"},
		{name: "name being deleted", clusters: []clusterv1alpha1.Cluster{deleting}, join: "m1", id: "id-1", wantErr: ErrNameTaken, wantMessage: "being deleted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			existing, err := CheckJoinable(tt.clusters, tt.join, tt.id)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), tt.wantMessage) {
				t.Errorf("message %q does not say %q", err, tt.wantMessage)
			}
			got := ""
			if existing != nil {
				got = existing.Name
			}
			if got != tt.wantExisting {
				t.Errorf("existing = %q, want %q", got, tt.wantExisting)
			}
		})
	}
}

func TestExplain(t *testing.T) {
	s := side{role: "member", endpoint: "https://127.0.0.1:6443", flag: "--cluster-kubeconfig"}
	tests := []struct {
		name    string
		err     error
		want    error
		message string
	}{
		{"refused", &url.Error{Op: "Get", URL: "https://127.0.0.1:6443", Err: syscall.ECONNREFUSED}, ErrUnreachable, "cannot reach the member apiserver"},
		{"unknown CA", &url.Error{Op: "Get", URL: "https://127.0.0.1:6443", Err: x509.UnknownAuthorityError{}}, ErrUnreachable, "certificate-authority-data"},
		{"401", apierrors.NewUnauthorized("Unauthorized"), ErrUnauthorized, "wrong or has expired"},
		{"403", apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "kube-system", errors.New("RBAC")), ErrForbidden, "needs cluster-admin in the member"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := s.explain(fmt.Errorf("wrapped: %w", tt.err), "read the kube-system namespace")
			if !errors.Is(got, tt.want) || !strings.Contains(got.Error(), tt.message) {
				t.Errorf("got %v; want %v saying %q", got, tt.want, tt.message)
			}
		})
	}
	other := apierrors.NewConflict(schema.GroupResource{Resource: "secrets"}, "m1", errors.New("changed"))
	if got := s.explain(other, "write Secret"); !apierrors.IsConflict(got) || errors.Is(got, ErrUnreachable) {
		t.Errorf("an ordinary API error should pass through wrapped, got %v", got)
	}
}

func TestMemberRulesAreLeast(t *testing.T) {
	for _, escalation := range []bool{false, true} {
		for _, r := range MemberRules("flotilla-member1", KubernetesGroups, escalation) {
			for _, v := range r.Verbs {
				if slices.Contains([]string{"impersonate", "deletecollection", "approve", "sign", rbacv1.VerbAll}, v) {
					t.Errorf("rule %+v grants %q", r, v)
				}
				ownRole := slices.Equal(r.ResourceNames, []string{"flotilla-member1"}) && slices.Equal(r.Resources, []string{"clusterroles"})
				if !escalation && (v == "bind" || v == "escalate" && !ownRole) {
					t.Errorf("rule %+v grants %q without the opt-in", r, v)
				}
			}
			if slices.Contains(r.APIGroups, rbacv1.APIGroupAll) {
				t.Errorf("rule %+v names every group, the core one included", r)
			}
			if slices.Contains(r.APIGroups, "") && slices.ContainsFunc(r.Resources, func(res string) bool { return strings.Contains(res, "*") }) {
				t.Errorf("rule %+v grants core resources by wildcard", r)
			}
		}
	}
}

// allows says whether rules grant verb on group/resource (resource "pods/exec" for a
// subresource), as RBAC matches them, for an object named name ("" for a list or create).
func allows(rules []rbacv1.PolicyRule, verb, group, resource, name string) bool {
	for _, r := range rules {
		if len(r.NonResourceURLs) > 0 || len(r.ResourceNames) > 0 && !slices.Contains(r.ResourceNames, name) {
			continue
		}
		matches := func(list []string, v string) bool { return slices.Contains(list, v) || slices.Contains(list, "*") }
		if !matches(r.Verbs, verb) || !matches(r.APIGroups, group) {
			continue
		}
		_, sub, isSub := strings.Cut(resource, "/")
		if slices.Contains(r.Resources, resource) || slices.Contains(r.Resources, "*") || (isSub && slices.Contains(r.Resources, "*/"+sub)) {
			return true
		}
	}
	return false
}

func TestMemberRules(t *testing.T) {
	served := append(slices.Clone(KubernetesGroups), "example.com")
	tests := []struct {
		verb, group, resource, name string
		want, wantEscalation        bool
	}{
		// What a member credential must never do.
		{verb: "create", resource: "serviceaccounts/token"},
		{verb: "create", resource: "pods/exec"},
		{verb: "get", resource: "pods/exec"},
		{verb: "create", resource: "pods/attach"},
		{verb: "create", resource: "pods/portforward"},
		{verb: "get", resource: "pods/proxy"},
		{verb: "get", resource: "nodes/proxy"},
		{verb: "create", resource: "nodes/proxy"},
		{verb: "get", resource: "services/proxy"},
		{verb: "patch", resource: "pods/ephemeralcontainers"},
		{verb: "impersonate", resource: "users"},
		{verb: "impersonate", resource: "serviceaccounts"},
		{verb: "impersonate", group: "authentication.k8s.io", resource: "userextras/scopes"},
		{verb: "create", resource: "pods/binding"},
		{verb: "create", resource: "bindings"},
		{verb: "create", resource: "pods/eviction"},
		{verb: "patch", resource: "pods/status"},
		{verb: "patch", resource: "services/status"},
		{verb: "patch", resource: "nodes/status"},
		{verb: "patch", resource: "nodes"},
		{verb: "deletecollection", resource: "configmaps"},
		{verb: "create", group: "certificates.k8s.io", resource: "certificatesigningrequests/nodeclient"},
		{verb: "create", group: "certificates.k8s.io", resource: "certificatesigningrequests"},
		{verb: "create", group: "admissionregistration.k8s.io", resource: "validatingadmissionpolicies"},
		{verb: "delete", group: "admissionregistration.k8s.io", resource: "validatingadmissionpolicybindings"},
		{verb: "create", group: "apiregistration.k8s.io", resource: "apiservices"},
		{verb: "create", group: "authentication.k8s.io", resource: "tokenreviews"},
		{verb: "create", group: "flowcontrol.apiserver.k8s.io", resource: "flowschemas"},
		{verb: "create", group: "other.example.org", resource: "gadgets"}, // not served when joined
		// RBAC: what grants more than the credential holds needs the opt-in.
		{verb: "escalate", group: "rbac.authorization.k8s.io", resource: "clusterroles", wantEscalation: true},
		{verb: "escalate", group: "rbac.authorization.k8s.io", resource: "clusterroles", name: "cluster-admin", wantEscalation: true},
		// Its own rules, which the guard lets it add groups to.
		{verb: "escalate", group: "rbac.authorization.k8s.io", resource: "clusterroles", name: "flotilla-member1", want: true, wantEscalation: true},
		{verb: "bind", group: "rbac.authorization.k8s.io", resource: "clusterroles", wantEscalation: true},
		{verb: "bind", group: "rbac.authorization.k8s.io", resource: "roles", wantEscalation: true},
		{verb: "create", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings", wantEscalation: true},
		{verb: "patch", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings", wantEscalation: true},
		{verb: "delete", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings", want: true, wantEscalation: true},
		{verb: "create", group: "rbac.authorization.k8s.io", resource: "clusterroles", want: true, wantEscalation: true},
		{verb: "create", group: "rbac.authorization.k8s.io", resource: "rolebindings", want: true, wantEscalation: true},
		// What the control plane does in a member.
		{verb: "create", resource: "configmaps", want: true, wantEscalation: true},
		{verb: "patch", resource: "secrets", want: true, wantEscalation: true},
		{verb: "delete", resource: "services", want: true, wantEscalation: true},
		{verb: "create", resource: "namespaces", want: true, wantEscalation: true},
		{verb: "watch", resource: "pods", want: true, wantEscalation: true},
		{verb: "list", resource: "nodes", want: true, wantEscalation: true},
		{verb: "list", resource: "events", want: true, wantEscalation: true},
		{verb: "get", resource: "pods/log", want: true, wantEscalation: true},
		{verb: "patch", group: "apps", resource: "deployments", want: true, wantEscalation: true},
		{verb: "patch", group: "apps", resource: "deployments/scale", want: true, wantEscalation: true},
		{verb: "create", group: "apiextensions.k8s.io", resource: "customresourcedefinitions", want: true, wantEscalation: true},
		{verb: "create", group: "example.com", resource: "widgets", want: true, wantEscalation: true},
		{verb: "patch", group: "multicluster.x-k8s.io", resource: "serviceimports/status", want: true, wantEscalation: true},
		{verb: "create", group: "coordination.k8s.io", resource: "leases", want: true, wantEscalation: true},
		{verb: "list", group: "admissionregistration.k8s.io", resource: "validatingadmissionpolicies", want: true, wantEscalation: true},
	}
	for _, escalation := range []bool{false, true} {
		rules := MemberRules("flotilla-member1", served, escalation)
		for _, tt := range tests {
			want := tt.want
			if escalation {
				want = tt.wantEscalation
			}
			if got := allows(rules, tt.verb, tt.group, tt.resource, tt.name); got != want {
				t.Errorf("escalation %v: %s %s %q %s = %v, want %v", escalation, tt.verb, tt.resource, tt.group, tt.name, got, want)
			}
		}
	}
	// Groups come sorted and once each, whatever discovery answered.
	a := MemberRules("r", []string{"b.io", "", "a.io", "b.io"}, false)
	b := MemberRules("r", []string{"a.io", "b.io"}, false)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("rules depend on the order of the groups (-unsorted +sorted):\n%s", diff)
	}
}

func TestExplainForbidden(t *testing.T) {
	forbidden := func(resource, msg string) error {
		return fmt.Errorf("apply X ns/x: %w", apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "x", errors.New(msg)))
	}
	escalating := forbidden("clusterroles", `user "system:serviceaccount:flotilla-system:flotilla-member1" (groups=[]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["pods/exec"], Verbs:["create"]}`)
	rbac := func(resource, group string) error {
		return forbidden(resource, fmt.Sprintf(`User "system:serviceaccount:flotilla-system:flotilla-member1" cannot create resource %q in API group %q at the cluster scope`, resource, group))
	}
	guard := forbidden("configmaps", "ValidatingAdmissionPolicy 'flotilla-member1-guard' with binding 'flotilla-member1-guard' denied request: Flotilla's member credential flotilla-member1 may not write in the namespaces kube-system")
	push := Member{Cluster: "member1"}
	tests := []struct {
		name   string
		member Member
		gvk    schema.GroupVersionKind
		err    error
		want   []string
	}{
		{"ClusterRole granting more", push, rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), escalating,
			[]string{"member1's credential may not grant rights it does not hold; join it with --allow-rbac-escalation to propagate this ClusterRole",
				"kubectl flotilla join member1 --cluster-kubeconfig FILE --allow-rbac-escalation", "pods/exec"}},
		{"Pull: register again", Member{Cluster: "edge", Pull: true}, rbacv1.SchemeGroupVersion.WithKind("Role"), escalating,
			[]string{"edge's credential may not grant rights it does not hold; register it with --allow-rbac-escalation to propagate this Role",
				"kubectl flotilla register edge --refresh-rights --allow-rbac-escalation"}},
		{"ClusterRoleBinding", push, rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"), rbac("clusterrolebindings", "rbac.authorization.k8s.io"),
			[]string{"may not write ClusterRoleBindings", "--allow-rbac-escalation"}},
		{"a group served since the join", push, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, rbac("widgets", "example.com"),
			[]string{"no rights on the API group example.com", "join it again", "run `kubectl flotilla join member1 --cluster-kubeconfig FILE`)"}},
		{"a group served since, opted in", Member{Cluster: "member1", AllowRBACEscalation: true}, schema.GroupVersionKind{Group: "example.com", Kind: "Widget"},
			rbac("widgets", "example.com"), []string{"kubectl flotilla join member1 --cluster-kubeconfig FILE --allow-rbac-escalation"}},
		{"left out by design", push, schema.GroupVersionKind{Version: "v1", Kind: "Node"}, rbac("nodes", ""),
			[]string{"leave it out by design", "--cluster-admin"}},
		{"the guard says why itself", push, schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, guard, []string{guard.Error()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ExplainForbidden(tt.member, tt.gvk, tt.err)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("message %q does not say %q", got, w)
				}
			}
		})
	}
}

func TestMemberGuard(t *testing.T) {
	for _, escalation := range []bool{false, true} {
		policy, binding := MemberGuard("flotilla-member1", nil, escalation)
		if policy.Name != "flotilla-member1-guard" || binding.Spec.PolicyName != policy.Name {
			t.Errorf("guard %s bound by %s to %s", policy.Name, binding.Name, binding.Spec.PolicyName)
		}
		if got := policy.Spec.MatchConditions[0].Expression; got != `request.userInfo.username == "system:serviceaccount:flotilla-system:flotilla-member1"` {
			t.Errorf("the guard matches %s", got)
		}
		rbacRules := 0
		for _, v := range policy.Spec.Validations {
			if strings.Contains(v.Expression, "rbac.authorization.k8s.io") {
				rbacRules++
			}
		}
		if want := map[bool]int{false: 3, true: 1}[escalation]; rbacRules != want {
			t.Errorf("escalation %v: %d RBAC validations, want %d", escalation, rbacRules, want)
		}
	}
}

func TestPrintClusters(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	ready := clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "member1", CreationTimestamp: metav1.NewTime(now.Add(-3 * time.Hour))},
		Spec:       clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push},
		Status: clusterv1alpha1.ClusterStatus{
			KubernetesVersion: "v1.36.3",
			Conditions:        []metav1.Condition{{Type: wellknown.ClusterConditionReady, Status: metav1.ConditionTrue}},
			NodeSummary:       &clusterv1alpha1.NodeSummary{TotalNum: 3, ReadyNum: 2},
			ResourceSummary: &clusterv1alpha1.ResourceSummary{
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("24"), corev1.ResourceMemory: resource.MustParse("96Gi")},
				Allocated:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1750m"), corev1.ResourceMemory: resource.MustParse("1536Mi")},
			},
		},
	}
	fresh := clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "a-new-one", CreationTimestamp: metav1.NewTime(now.Add(-20 * time.Second)),
			Labels: map[string]string{wellknown.OriginLabel: wellknown.OriginClusterAPI}},
		Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push},
	}
	edge := clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "edge", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Spec:       clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull},
	}
	var out bytes.Buffer
	if err := PrintClusters(&out, []clusterv1alpha1.Cluster{ready, fresh, edge}, now); err != nil {
		t.Fatal(err)
	}
	want := `NAME        VERSION   MODE   ORIGIN        READY     NODES   CPU(alloc/total)   MEMORY(alloc/total)   AGE
a-new-one   -         Push   cluster-api   Unknown   -       -                  -                     20s
edge        -         Pull   registered    Unknown   -       -                  -                     60m
member1     v1.36.3   Push   joined        True      2/3     1.7/24             1.5Gi/96Gi            3h
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
}
