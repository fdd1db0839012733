package join

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/localcluster"
)

// refusedCore are the core resources of the member that the credential is refused
// deliberately (see MemberRules); with coreWritable, coreReadable and coreLogs they must be
// every core resource the member serves, so that one Kubernetes adds is looked at.
var refusedCore = []string{
	"bindings", "componentstatuses", "namespaces/finalize", "namespaces/status", "nodes/proxy", "nodes/status",
	"persistentvolumeclaims/status", "persistentvolumes/status", "pods/attach", "pods/binding", "pods/ephemeralcontainers",
	"pods/eviction", "pods/exec", "pods/portforward", "pods/proxy", "pods/resize", "pods/status",
	"replicationcontrollers/scale", "replicationcontrollers/status", "resourcequotas/status", "serviceaccounts/token",
	"services/proxy", "services/status",
}

// memberEnv is a host with the CRDs and one apiserver-only member, member1, joined.
type memberEnv struct {
	fleet  *localcluster.Fleet
	member *localcluster.Cluster
	// admin is an admin client of the member, host one of the host.
	admin     client.Client
	adminKube kubernetes.Interface
	host      client.Client
}

// TestMemberCredential joins a member and checks, against its real apiserver, what the
// credential join made may and may not do there: nothing that takes the member over.
func TestMemberCredential(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a host and a member apiserver")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	fleet, err := localcluster.StartFleet(ctx, localcluster.FleetOptions{
		CRDDir:  filepath.Join("..", "..", "config", "crd", "bases"),
		Host:    localcluster.Options{Name: "join-host"},
		Members: localcluster.DefaultMembers(1, false),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := fleet.Stop(); err != nil {
			t.Error(err)
		}
	})
	e := &memberEnv{fleet: fleet, member: fleet.Members[0]}
	scheme := flotillascheme.New()
	if e.admin, err = client.New(e.member.RESTConfig(), client.Options{Scheme: scheme}); err != nil {
		t.Fatal(err)
	}
	e.adminKube = kubernetes.NewForConfigOrDie(e.member.RESTConfig())
	if e.host, err = client.New(fleet.Host.RESTConfig(), client.Options{Scheme: scheme}); err != nil {
		t.Fatal(err)
	}

	// What a plain member serves, before anything is added to it.
	groups, err := ServedGroups(ctx, e.adminKube.Discovery())
	if err != nil {
		t.Fatal(err)
	}
	t.Run("KubernetesGroups are a plain member's groups", func(t *testing.T) {
		if diff := slices.Compare(groups, sortedGroups(KubernetesGroups)); diff != 0 {
			t.Errorf("the member serves %v; KubernetesGroups are %v", groups, KubernetesGroups)
		}
	})
	t.Run("every core resource is granted or refused deliberately", func(t *testing.T) {
		list, err := e.adminKube.Discovery().ServerResourcesForGroupVersion("v1")
		if err != nil {
			t.Fatal(err)
		}
		known := slices.Concat(coreWritable, coreReadable, []string{coreLogs}, refusedCore)
		for _, r := range list.APIResources {
			if !slices.Contains(known, r.Name) {
				t.Errorf("core resource %s is new: grant it in MemberRules or list it in refusedCore", r.Name)
			}
		}
	})

	// The member's users: a ServiceAccount and a pod of a team, and a kind of a CRD.
	e.must(t, e.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}))
	for _, sa := range []string{"default", "victim"} {
		e.must(t, e.admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: sa}}))
	}
	e.must(t, e.admin.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}}))
	e.createCRD(ctx, t, "example.com", "Widget")

	e.join(ctx, t, false)
	cred := e.credential(ctx, t)
	credKube := kubernetes.NewForConfigOrDie(e.credentialConfig(ctx, t))

	t.Run("refuses what would take the member over", func(t *testing.T) {
		_, err := credKube.CoreV1().ServiceAccounts("team").CreateToken(ctx, "victim", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		expectForbidden(t, "a TokenRequest for another ServiceAccount", err, "")
		err = credKube.CoreV1().RESTClient().Post().Namespace("team").Resource("pods").Name("web").SubResource("exec").
			Param("command", "sh").Param("container", "web").Param("stdout", "true").Do(ctx).Error()
		expectForbidden(t, "pods/exec", err, "")
		err = credKube.CoreV1().RESTClient().Get().Resource("nodes").Name("node-1").SubResource("proxy").Suffix("configz").Do(ctx).Error()
		expectForbidden(t, "nodes/proxy", err, "")
		err = credKube.CoreV1().RESTClient().Get().Namespace("default").Resource("services").Name("kubernetes").SubResource("proxy").Do(ctx).Error()
		expectForbidden(t, "services/proxy", err, "")
		_, err = credKube.CoreV1().Pods("team").Patch(ctx, "web", types.StrategicMergePatchType,
			[]byte(`{"spec":{"ephemeralContainers":[{"name":"debug","image":"busybox"}]}}`), metav1.PatchOptions{}, "ephemeralcontainers")
		expectForbidden(t, "pods/ephemeralcontainers", err, "")
		for _, sub := range []string{"exec", "attach", "portforward", "proxy"} {
			expectDenied(ctx, t, credKube, authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Subresource: sub, Namespace: "team", Name: "web"})
		}
		expectDenied(ctx, t, credKube, authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "users", Name: "admin"})
		impersonating := e.credentialConfig(ctx, t)
		impersonating.Impersonate = rest.ImpersonationConfig{UserName: "system:admin", Groups: []string{"system:masters"}}
		_, err = kubernetes.NewForConfigOrDie(impersonating).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		expectForbidden(t, "impersonation", err, "")

		// The guard, which the member enforces a moment after it is created.
		eventually(t, "a ConfigMap in kube-system", func() error {
			return cred.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "takeover"}})
		}, "may not write in the namespaces kube-system")
		expectForbidden(t, "a Lease in kube-node-lease", cred.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: "node-1"}}), "may not write in the namespaces")
		expectForbidden(t, "a label on kube-public", cred.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: metav1.NamespacePublic}},
			client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`))), "may not write in the namespaces")
		expectForbidden(t, "a ServiceAccount token Secret", cred.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "victim-token", Annotations: map[string]string{corev1.ServiceAccountNameKey: "victim"}},
			Type:       corev1.SecretTypeServiceAccountToken}), "kubernetes.io/service-account-token")
		policy, _ := MemberGuard(wellknown.MemberAccessName("member1"), nil, false)
		expectForbidden(t, "deleting its own guard", cred.Delete(ctx, policy), "")
		_, role, _ := MemberAccessObjects(wellknown.MemberAccessName("member1"), nil, nil, false)
		expectForbidden(t, "deleting its own ClusterRole", cred.Delete(ctx, role), "nor delete it")
		e.must(t, cred.Get(ctx, client.ObjectKeyFromObject(role), role))
		for what, rule := range map[string]rbacv1.PolicyRule{
			"the core group":   {APIGroups: []string{""}, Resources: []string{"*"}, Verbs: []string{"create"}},
			"every group":      {APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get"}},
			"RBAC":             {APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"*"}, Verbs: []string{"escalate"}},
			"admission":        {APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"*"}, Verbs: []string{"delete"}},
			"impersonate":      {APIGroups: []string{"example.com"}, Resources: []string{"*"}, Verbs: []string{"impersonate"}},
			"non-resource URL": {NonResourceURLs: []string{"/*"}, Verbs: []string{"get"}},
		} {
			widened := role.DeepCopy()
			widened.Rules = append(widened.Rules, rule)
			expectForbidden(t, "adding "+what+" to its own ClusterRole", cred.Update(ctx, widened), "may not change its own ClusterRole")
		}
		aggregating := role.DeepCopy()
		aggregating.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"a": "b"}}}}
		expectForbidden(t, "an aggregationRule on its own ClusterRole", cred.Update(ctx, aggregating), "may not change its own ClusterRole")
		expectForbidden(t, "a ClusterRoleBinding", cred.Create(ctx, clusterRoleBinding("team-view", "view")), "")
		aggregated := clusterRole("aggregated", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}})
		aggregated.Labels = map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}
		expectForbidden(t, "a ClusterRole aggregated into view", cred.Create(ctx, aggregated), "aggregate-to-")
	})

	t.Run("writes what templates are", func(t *testing.T) {
		for _, obj := range []client.Object{
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "settings"}, Data: map[string]string{"a": "b"}},
			deployment("shop", "web"),
			custom("example.com", "Widget", "shop", "w1"),
			clusterRole("reader", rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list"}}),
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "reader"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "reader"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "shop", Name: "default"}}},
		} {
			if err := cred.Create(ctx, obj); err != nil {
				t.Errorf("create %T %s: %v", obj, client.ObjectKeyFromObject(obj), err)
			}
		}
		if err := cred.Delete(ctx, deployment("shop", "web")); err != nil {
			t.Errorf("delete the Deployment: %v", err)
		}
	})

	t.Run("a ClusterRole granting rights the credential lacks needs --allow-rbac-escalation", func(t *testing.T) {
		execRole := clusterRole("debugger", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create"}})
		err := cred.Create(ctx, execRole.DeepCopy())
		expectForbidden(t, "a ClusterRole granting pods/exec", err, "")
		msg := ExplainForbidden(Member{Cluster: "member1"}, rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), err)
		if want := "member1's credential may not grant rights it does not hold; join it with --allow-rbac-escalation to propagate this ClusterRole"; !strings.Contains(msg, want) {
			t.Errorf("the Work would say %q, not %q", msg, want)
		}
		if e.cluster(ctx, t).Annotations[wellknown.AllowRBACEscalationAnnotation] != "" {
			t.Error("the Cluster records an opt-in it was not given")
		}

		e.join(ctx, t, true)
		escalating := e.credential(ctx, t)
		if err := escalating.Create(ctx, execRole.DeepCopy()); err != nil {
			t.Errorf("with --allow-rbac-escalation: %v", err)
		}
		if err := escalating.Create(ctx, clusterRoleBinding("debuggers", "debugger")); err != nil {
			t.Errorf("a ClusterRoleBinding with --allow-rbac-escalation: %v", err)
		}
		if got := e.cluster(ctx, t).Annotations[wellknown.AllowRBACEscalationAnnotation]; got != "true" {
			t.Errorf("the Cluster's %s is %q, want true", wellknown.AllowRBACEscalationAnnotation, got)
		}

		// Joining again without the flag takes the rights back.
		e.join(ctx, t, false)
		cred = e.credential(ctx, t)
		expectForbidden(t, "a ClusterRole granting pods/exec after joining again without the flag",
			cred.Create(ctx, clusterRole("debugger2", execRole.Rules...)), "attempting to grant RBAC permissions not currently held")
		if e.cluster(ctx, t).Annotations[wellknown.AllowRBACEscalationAnnotation] != "" {
			t.Error("the Cluster still records the opt-in")
		}
	})

	t.Run("an API group served after the join is added by the credential itself, or by joining again", func(t *testing.T) {
		e.createCRD(ctx, t, "late.example.com", "Gadget")
		gadget := custom("late.example.com", "Gadget", "shop", "g1")
		err := cred.Create(ctx, gadget.DeepCopy())
		expectForbidden(t, "a kind of a group served since the join", err, "")
		msg := ExplainForbidden(Member{Cluster: "member1"}, gadget.GroupVersionKind(), err)
		if want := "run `kubectl flotilla join member1 --cluster-kubeconfig FILE`"; !strings.Contains(msg, want) {
			t.Errorf("the Work would say %q, not %q", msg, want)
		}
		for _, group := range []string{"", "rbac.authorization.k8s.io", "admissionregistration.k8s.io"} {
			if granted, added, err := GrantGroup(ctx, cred, wellknown.MemberAccessName("member1"), group); granted || added || err != nil {
				t.Errorf("GrantGroup(%q) = %v, %v, %v; want nothing done", group, granted, added, err)
			}
		}
		if !RefusedByRBAC(err) {
			t.Errorf("RefusedByRBAC(%v) = false", err)
		}
		granted, added, err := GrantGroup(ctx, cred, wellknown.MemberAccessName("member1"), "late.example.com")
		if err != nil || !granted || !added {
			t.Fatalf("GrantGroup with the credential's own client = %v, %v, %v", granted, added, err)
		}
		if granted, added, err := GrantGroup(ctx, cred, wellknown.MemberAccessName("member1"), "late.example.com"); !granted || added || err != nil {
			t.Errorf("GrantGroup again = %v, %v, %v; want granted, nothing added", granted, added, err)
		}
		eventuallyOK(t, "a Gadget once the credential added its group", func() error { return cred.Create(ctx, gadget.DeepCopy()) })

		e.createCRD(ctx, t, "later.example.com", "Gizmo")
		gizmo := custom("later.example.com", "Gizmo", "shop", "z1")
		expectForbidden(t, "a kind of another group served since", cred.Create(ctx, gizmo.DeepCopy()), "")
		e.join(ctx, t, false)
		cred = e.credential(ctx, t)
		if err := cred.Create(ctx, gizmo.DeepCopy()); err != nil {
			t.Errorf("after joining again: %v", err)
		}
	})

	t.Run("a wider binding added later does not lift the guard", func(t *testing.T) {
		wide := clusterRoleBinding("wide", ClusterAdminRole)
		wide.Subjects = []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: wellknown.SystemNamespace, Name: wellknown.MemberAccessName("member1")}}
		e.must(t, e.admin.Create(ctx, wide))
		defer func() { e.must(t, e.admin.Delete(ctx, wide)) }()
		eventually(t, "a TokenRequest with cluster-admin bound too", func() error {
			_, err := credKube.CoreV1().ServiceAccounts("team").CreateToken(ctx, "victim", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
			return err
		}, "may not create ServiceAccount tokens")
		err := credKube.CoreV1().RESTClient().Post().Namespace("team").Resource("pods").Name("web").SubResource("exec").
			Param("command", "sh").Param("container", "web").Param("stdout", "true").Do(ctx).Error()
		expectForbidden(t, "pods/exec with cluster-admin bound too", err, "may not exec, attach, port-forward or proxy")
	})

	t.Run("unjoin removes the credential and its guard", func(t *testing.T) {
		res, err := Unjoin(ctx, UnjoinOptions{Name: "member1", Host: fleet.Host.RESTConfig(), Member: e.member.RESTConfig(), Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"ValidatingAdmissionPolicy flotilla-member1-guard (member)", "ValidatingAdmissionPolicyBinding flotilla-member1-guard (member)",
			"ClusterRole flotilla-member1 (member)"} {
			if !slices.Contains(res.Removed, want) {
				t.Errorf("unjoin removed %v, not %s", res.Removed, want)
			}
		}
	})
}

func (e *memberEnv) must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// join joins member1, with or without --allow-rbac-escalation.
func (e *memberEnv) join(ctx context.Context, t *testing.T, allowRBACEscalation bool) {
	t.Helper()
	if _, err := Join(ctx, Options{Name: "member1", Host: e.fleet.Host.RESTConfig(), Member: e.member.RESTConfig(),
		AllowRBACEscalation: allowRBACEscalation}); err != nil {
		t.Fatal(err)
	}
}

func (e *memberEnv) cluster(ctx context.Context, t *testing.T) *clusterv1alpha1.Cluster {
	t.Helper()
	c := &clusterv1alpha1.Cluster{}
	e.must(t, e.host.Get(ctx, client.ObjectKey{Name: "member1"}, c))
	return c
}

// credentialConfig is a REST config of the member with the token the host Secret holds.
func (e *memberEnv) credentialConfig(ctx context.Context, t *testing.T) *rest.Config {
	t.Helper()
	s := &corev1.Secret{}
	e.must(t, e.host.Get(ctx, client.ObjectKey{Namespace: wellknown.SystemNamespace, Name: "member1"}, s))
	return &rest.Config{Host: e.member.Endpoint, BearerToken: string(s.Data[wellknown.SecretKeyToken]),
		TLSClientConfig: rest.TLSClientConfig{CAData: s.Data[wellknown.SecretKeyCABundle]}}
}

func (e *memberEnv) credential(ctx context.Context, t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(e.credentialConfig(ctx, t), client.Options{Scheme: flotillascheme.New()})
	e.must(t, err)
	return c
}

// createCRD creates a namespaced CRD of kind in group, version v1, and waits until it is
// served.
func (e *memberEnv) createCRD(ctx context.Context, t *testing.T, group, kind string) {
	t.Helper()
	plural := strings.ToLower(kind) + "s"
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + "." + group},
		"spec": map[string]any{
			"group": group, "scope": "Namespaced",
			"names": map[string]any{"kind": kind, "plural": plural, "singular": strings.ToLower(kind), "listKind": kind + "List"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}}
	e.must(t, e.admin.Create(ctx, crd))
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := e.adminKube.Discovery().ServerResourcesForGroupVersion(group + "/v1")
		return err == nil, nil
	})
	e.must(t, err)
}

func custom(group, kind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: "v1", Kind: kind})
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func deployment(ns, name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: "nginx"}}}},
	}}
}

func clusterRole(name string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
}

func clusterRoleBinding(name, role string) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "team", Name: "victim"}}}
}

// expectForbidden fails unless err is a 403 whose message says say.
func expectForbidden(t *testing.T, what string, err error, say string) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Errorf("%s: got %v, want Forbidden", what, err)
		return
	}
	if !strings.Contains(err.Error(), say) {
		t.Errorf("%s: %v does not say %q", what, err, say)
	}
}

// eventually retries do until it is refused saying say: the member enforces an admission
// policy a moment after it is created or its binding changes.
func eventually(t *testing.T, what string, do func() error, say string) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if err = do(); apierrors.IsForbidden(err) && strings.Contains(err.Error(), say) {
			return
		}
	}
	t.Errorf("%s: got %v, want Forbidden saying %q", what, err, say)
}

// eventuallyOK retries do until it succeeds: the member's RBAC sees a changed role a moment
// after the change.
func eventuallyOK(t *testing.T, what string, do func() error) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if err = do(); err == nil {
			return
		}
	}
	t.Errorf("%s: %v", what, err)
}

// expectDenied asks the member whether the credential may do attrs, and fails if it may.
func expectDenied(ctx context.Context, t *testing.T, kube kubernetes.Interface, attrs authorizationv1.ResourceAttributes) {
	t.Helper()
	review, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
		&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if review.Status.Allowed {
		t.Errorf("the credential may %s %s/%s", attrs.Verb, attrs.Resource, attrs.Subresource)
	}
}
