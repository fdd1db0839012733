package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/flotilla-io/flotilla/internal/agentauth"
	"github.com/flotilla-io/flotilla/internal/hostguard"
	"github.com/flotilla-io/flotilla/internal/join"
	"github.com/flotilla-io/flotilla/internal/testing/golden"
)

// repoRoot is the repository root, two levels up from this package.
func repoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func render(t *testing.T, overlay string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := RenderObjects(filepath.Join(repoRoot(t), overlay))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func managerDeployment(t *testing.T, objs []*unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	u, err := ManagerDeploymentOf(objs)
	if err != nil {
		t.Fatal(err)
	}
	d := &appsv1.Deployment{}
	if err := Into(u, d); err != nil {
		t.Fatal(err)
	}
	return d
}

func managerContainer(t *testing.T, d *appsv1.Deployment) corev1.Container {
	t.Helper()
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == ManagerContainer {
			return c
		}
	}
	t.Fatalf("deployment %s has no container %s", d.Name, ManagerContainer)
	return corev1.Container{}
}

// TestDefaultOverlay checks what dist/install.yaml holds: the namespace, every CRD of
// config/crd/bases, the generated ClusterRole bound to the manager's ServiceAccount, and a
// manager Deployment that is hardened as promised.
func TestDefaultOverlay(t *testing.T) {
	root := repoRoot(t)
	objs := render(t, DefaultOverlay)

	bases, err := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(OfKind(objs, "CustomResourceDefinition")); got != len(bases) || got == 0 {
		t.Errorf("install renders %d CRDs, config/crd/bases holds %d", got, len(bases))
	}
	if Find(objs, "Namespace", Namespace) == nil {
		t.Errorf("no Namespace %s", Namespace)
	}
	for _, o := range objs {
		switch o.GetKind() {
		case "Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding",
			"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
		default:
			if o.GetNamespace() != Namespace {
				t.Errorf("%s %s is in namespace %q, want %s", o.GetKind(), o.GetName(), o.GetNamespace(), Namespace)
			}
		}
	}

	// RBAC: exactly the generated roles, all bound to the manager.
	perms, err := ManagerPermissions(objs)
	if err != nil {
		t.Fatal(err)
	}
	if perms.ServiceAccount != Namespace+"/"+ManagerServiceAccount {
		t.Errorf("manager runs as %s", perms.ServiceAccount)
	}
	// The guard watches the identity the manager runs as.
	checkGuard(t, objs, hostguard.Username(Namespace, ManagerServiceAccount))
	roles, err := ReadGeneratedRoles(root)
	if err != nil {
		t.Fatal(err)
	}
	cluster, namespaced := roles.GeneratedRules()
	if d := DiffAtoms(cluster, perms.Cluster); d != "" {
		t.Errorf("the manager's cluster-wide grants differ from %s:\n%s", RolePath, d)
	}
	for ns, rules := range namespaced {
		if d := DiffAtoms(rules, perms.Namespaced[ns]); d != "" {
			t.Errorf("the manager's grants in %s differ from %s:\n%s", ns, RolePath, d)
		}
	}

	d := managerDeployment(t, objs)
	if d.Name != ManagerDeployment || d.Namespace != Namespace {
		t.Errorf("deployment %s/%s", d.Namespace, d.Name)
	}
	c := managerContainer(t, d)
	if c.Image != DefaultImageRepository+":latest" {
		t.Errorf("image %s", c.Image)
	}
	wantArgs := []string{"--leader-elect", "--metrics-bind-address=:8080", "--health-probe-bind-address=:8081"}
	if diff := cmp.Diff(wantArgs, c.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	for name, p := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != name || p.HTTPGet.Port.String() != "health" {
			t.Errorf("probe %s: %+v", name, p)
		}
	}
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "health" && p.ContainerPort == 8081 }) {
		t.Errorf("no health port 8081: %+v", c.Ports)
	}
	checkHardened(t, d)
	for res, want := range map[string]corev1.ResourceList{
		"requests": {corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		"limits":   {corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")},
	} {
		got := c.Resources.Requests
		if res == "limits" {
			got = c.Resources.Limits
		}
		if !equalResources(want, got) {
			t.Errorf("%s: %v, want %v", res, got, want)
		}
	}
}

// checkHardened checks the security settings of the manager pod.
func checkHardened(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	ps := d.Spec.Template.Spec.SecurityContext
	if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.SeccompProfile == nil || ps.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext: %+v", ps)
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		sc := c.SecurityContext
		switch {
		case sc == nil:
			t.Errorf("container %s has no securityContext", c.Name)
		case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation,
			sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem,
			sc.Privileged != nil && *sc.Privileged,
			sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
			t.Errorf("container %s securityContext: %+v", c.Name, sc)
		}
		if c.Resources.Limits.Memory().IsZero() || c.Resources.Requests.Cpu().IsZero() {
			t.Errorf("container %s: set requests and limits", c.Name)
		}
	}
	if d.Spec.Template.Spec.HostNetwork || d.Spec.Template.Spec.HostPID {
		t.Errorf("the manager must not use host namespaces")
	}
}

func equalResources(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

// allGeneratedRules are every rule of config/rbac/role.yaml, cluster-wide and namespaced.
func allGeneratedRules(t *testing.T) []rbacv1.PolicyRule {
	t.Helper()
	roles, err := ReadGeneratedRoles(repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	cluster, namespaced := roles.GeneratedRules()
	all := slices.Clone(cluster)
	for _, r := range namespaced {
		all = append(all, r...)
	}
	return all
}

// TestLeastPrivilege holds the generated ClusterRole to least privilege: the only wildcards
// are the detector's read grant on template kinds (controllers/detector/detector.go) and the
// binding-status controller's patch of templates' status (the fleet's status,
// controllers/workstatus/aggregate.go), and nothing may escalate, bind (but the Pull agent's
// two ClusterRoles, by name), impersonate or read tokens.
func TestLeastPrivilege(t *testing.T) {
	all := allGeneratedRules(t)
	wildcards := []rbacv1.PolicyRule{
		{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"*"}, Resources: []string{"*/status"}, Verbs: []string{"patch"}},
	}
	allowed := Atoms(wildcards)
	for _, r := range all {
		wild := slices.Contains(r.APIGroups, "*") || slices.Contains(r.Resources, "*") || slices.Contains(r.Resources, "*/status")
		for _, a := range Atoms([]rbacv1.PolicyRule{r}) {
			if _, found := slices.BinarySearch(allowed, a); wild && !found {
				t.Errorf("wildcard grant beyond the detector's and the template status writer's %v: %s", wildcards, a)
			}
		}
		for _, v := range r.Verbs {
			if v == "bind" && agentRolesOnly(r) {
				continue // the Pull agent's two roles, which the manager binds in execution namespaces
			}
			if slices.Contains([]string{"*", "escalate", "bind", "impersonate"}, v) {
				t.Errorf("rule %v grants %q", r, v)
			}
		}
		if slices.Contains(r.Resources, "serviceaccounts/token") || len(r.NonResourceURLs) > 0 {
			t.Errorf("rule %v: not needed by the manager", r)
		}
	}
}

// checkGuard checks that objs hold the manager's guard, bound, for user.
func checkGuard(t *testing.T, objs []*unstructured.Unstructured, user string) {
	t.Helper()
	policy := Find(objs, "ValidatingAdmissionPolicy", hostguard.Name)
	if policy == nil || Find(objs, "ValidatingAdmissionPolicyBinding", hostguard.Name) == nil {
		t.Errorf("no guard %s and its binding", hostguard.Name)
		return
	}
	conds, _, _ := unstructured.NestedSlice(policy.Object, "spec", "matchConditions")
	if len(conds) != 1 || !strings.Contains(fmt.Sprint(conds[0]), fmt.Sprintf("%q", user)) {
		t.Errorf("the guard matches %v, want the manager's identity %s", conds, user)
	}
}

// writeVerbs are the verbs that change the host.
var writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection", "*"}

// TestNoWriteWildcard derives the manager's write rights from the generated role and fails on
// any write that a wildcard grants, but the status subresource of every kind: templates are
// the user's, and Flotilla writes nothing of them but their status. Before the claim moved to
// the binding, the detector held patch on every resource of the host.
func TestNoWriteWildcard(t *testing.T) {
	all := allGeneratedRules(t)
	for _, r := range all {
		writes := slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return !slices.Contains(writeVerbs, v) })
		if len(writes) == 0 {
			continue
		}
		for _, res := range r.Resources {
			if slices.Contains(r.APIGroups, "*") && res != "*/status" {
				t.Errorf("write %v on %s in every API group: only */status may be written in every group", writes, res)
			}
			if res == "*" || (strings.HasPrefix(res, "*/") && res != "*/status") {
				t.Errorf("write %v on every resource (%s) of groups %v", writes, res, r.APIGroups)
			}
		}
	}
}

// agentRolesOnly reports whether r is limited, by resourceNames, to the ClusterRoles the
// cluster controller binds for Pull agents (internal/agentauth): bind on those, and those only.
func agentRolesOnly(r rbacv1.PolicyRule) bool {
	allowed := []string{agentauth.AgentRole, agentauth.ExchangeRole}
	if len(r.ResourceNames) == 0 || !slices.Equal(r.Resources, []string{"clusterroles"}) || !slices.Equal(r.Verbs, []string{"bind"}) {
		return false
	}
	for _, n := range r.ResourceNames {
		if !slices.Contains(allowed, n) {
			return false
		}
	}
	return true
}

// TestInstaller checks dist/install.yaml's rendering and its image override.
func TestInstaller(t *testing.T) {
	root := repoRoot(t)
	data, err := Installer(root, "")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := DecodeObjects(data)
	if err != nil {
		t.Fatal(err)
	}
	if want := render(t, DefaultOverlay); len(objs) != len(want) {
		t.Fatalf("install.yaml holds %d objects, config/default renders %d", len(objs), len(want))
	}
	if objs[0].GetKind() != "Namespace" {
		t.Errorf("the namespace must come first, got %s", objs[0].GetKind())
	}
	for _, img := range []string{"registry.example.internal:5000/flotilla:v1.2.3", "ghcr.io/flotilla-io/flotilla@sha256:" + strings.Repeat("a", 64)} {
		data, err := Installer(root, img)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := DecodeObjects(data)
		if err != nil {
			t.Fatal(err)
		}
		if c := managerContainer(t, managerDeployment(t, objs)); c.Image != img {
			t.Errorf("image override %s: got %s", img, c.Image)
		}
	}
}

// TestSamples checks that config/samples holds one example of every kind config/crd serves.
func TestSamples(t *testing.T) {
	kinds := map[string]bool{}
	for _, crd := range render(t, CRDOverlay) {
		g, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		k, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		kinds[g+"/"+k] = false
	}
	for _, s := range render(t, "config/samples") {
		key := s.GroupVersionKind().Group + "/" + s.GetKind()
		seen, ok := kinds[key]
		switch {
		case !ok:
			t.Errorf("sample %s %s is of no kind config/crd serves", key, s.GetName())
		case seen:
			t.Errorf("two samples of %s", key)
		}
		kinds[key] = true
	}
	for k, seen := range kinds {
		if !seen {
			t.Errorf("no sample of %s in config/samples", k)
		}
	}
}

// parseArgs turns --flag=value and --flag into a map.
func parseArgs(args []string) map[string]string {
	out := map[string]string{}
	for _, a := range args {
		k, v, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !ok {
			v = "true"
		}
		out[k] = v
	}
	return out
}

// TestHelmMatchesKustomize renders the chart with its default values as release flotilla in
// flotilla-system and compares it with config/default: the same CRDs, the same grants to the
// manager, and the same manager (arguments, probes, ports, security, resources, scheduling).
func TestHelmMatchesKustomize(t *testing.T) {
	root := repoRoot(t)
	kust := render(t, DefaultOverlay)
	helm, err := RenderChart(filepath.Join(root, ChartDir), "flotilla", Namespace, nil)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("CRDs", func(t *testing.T) {
		hc := OfKind(helm, "CustomResourceDefinition")
		kc := OfKind(kust, "CustomResourceDefinition")
		if len(hc) != len(kc) {
			t.Fatalf("chart holds %d CRDs, kustomize %d: run make helm", len(hc), len(kc))
		}
		for _, k := range kc {
			h := Find(hc, k.GetKind(), k.GetName())
			if h == nil {
				t.Errorf("chart lacks CRD %s: run make helm", k.GetName())
				continue
			}
			if diff := cmp.Diff(k.Object["spec"], h.Object["spec"]); diff != "" {
				t.Errorf("CRD %s differs (-kustomize +helm), run make helm:\n%s", k.GetName(), diff)
			}
		}
	})

	t.Run("RBAC", func(t *testing.T) {
		if diff := CompareManagerRBAC(kust, helm); diff != "" {
			t.Error(diff)
		}
	})

	t.Run("Deployment", func(t *testing.T) {
		kd, hd := managerDeployment(t, kust), managerDeployment(t, helm)
		checkHardened(t, hd)
		kc, hc := managerContainer(t, kd), managerContainer(t, hd)
		ka, ha := parseArgs(kc.Args), parseArgs(hc.Args)
		if ha["zap-log-level"] == "info" { // the manager's default
			delete(ha, "zap-log-level")
		}
		if diff := cmp.Diff(ka, ha); diff != "" {
			t.Errorf("args (-kustomize +helm):\n%s", diff)
		}
		if kr, _, _ := splitImage(kc.Image); kr != DefaultImageRepository {
			t.Errorf("kustomize image %s", kc.Image)
		}
		if hr, tag, _ := splitImage(hc.Image); hr != DefaultImageRepository || tag == "" {
			t.Errorf("image %s vs %s", kc.Image, hc.Image)
		}
		type view struct {
			Name, ServiceAccount, Container    string
			Replicas                           *int32
			Grace                              *int64
			Liveness, Readiness                *corev1.Probe
			Ports                              []corev1.ContainerPort
			PodSecurity                        *corev1.PodSecurityContext
			Security                           *corev1.SecurityContext
			PullPolicy                         corev1.PullPolicy
			Affinity                           *corev1.Affinity
			NodeSelector                       map[string]string
			Tolerations                        []corev1.Toleration
			Volumes                            []corev1.Volume
			Mounts                             []corev1.VolumeMount
			Env                                []corev1.EnvVar
			DefaultContainerAnnotation         string
			HostNetwork, AutomountServiceToken bool
		}
		v := func(d *appsv1.Deployment, c corev1.Container) view {
			s := d.Spec.Template.Spec
			return view{
				Name: d.Name, ServiceAccount: s.ServiceAccountName, Container: c.Name,
				Replicas: d.Spec.Replicas, Grace: s.TerminationGracePeriodSeconds,
				Liveness: c.LivenessProbe, Readiness: c.ReadinessProbe, Ports: c.Ports,
				PodSecurity: s.SecurityContext, Security: c.SecurityContext, PullPolicy: c.ImagePullPolicy,
				Affinity: s.Affinity, NodeSelector: s.NodeSelector, Tolerations: s.Tolerations,
				Volumes: s.Volumes, Mounts: c.VolumeMounts, Env: c.Env,
				DefaultContainerAnnotation: d.Spec.Template.Annotations["kubectl.kubernetes.io/default-container"],
				HostNetwork:                s.HostNetwork,
			}
		}
		if diff := cmp.Diff(v(kd, kc), v(hd, hc)); diff != "" {
			t.Errorf("manager Deployment (-kustomize +helm):\n%s", diff)
		}
		if !equalResources(kc.Resources.Requests, hc.Resources.Requests) || !equalResources(kc.Resources.Limits, hc.Resources.Limits) {
			t.Errorf("resources: kustomize %v, helm %v", kc.Resources, hc.Resources)
		}
		if len(hd.Spec.Template.Spec.Containers) != len(kd.Spec.Template.Spec.Containers) {
			t.Errorf("containers: kustomize %d, helm %d", len(kd.Spec.Template.Spec.Containers), len(hd.Spec.Template.Spec.Containers))
		}
	})

	t.Run("MetricsService", func(t *testing.T) {
		for name, objs := range map[string][]*unstructured.Unstructured{"kustomize": kust, "helm": helm} {
			svcs := OfKind(objs, "Service")
			if len(svcs) != 1 {
				t.Fatalf("%s: %d Services", name, len(svcs))
			}
			svc := &corev1.Service{}
			if err := Into(svcs[0], svc); err != nil {
				t.Fatal(err)
			}
			d := managerDeployment(t, objs)
			for k, v := range svc.Spec.Selector {
				if d.Spec.Template.Labels[k] != v {
					t.Errorf("%s: the metrics Service selects %v, not the manager's pods %v", name, svc.Spec.Selector, d.Spec.Template.Labels)
				}
			}
			if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 8080 || svc.Spec.Ports[0].TargetPort.String() != "metrics" {
				t.Errorf("%s: metrics Service ports %+v", name, svc.Spec.Ports)
			}
		}
	})

	t.Run("Names", func(t *testing.T) {
		for _, k := range kust {
			if k.GetKind() == "Namespace" {
				continue // helm install --create-namespace
			}
			h := Find(helm, k.GetKind(), k.GetName())
			if h == nil {
				t.Errorf("the chart has no %s %s", k.GetKind(), k.GetName())
			} else if h.GetNamespace() != k.GetNamespace() {
				t.Errorf("%s %s: namespace %q vs %q", k.GetKind(), k.GetName(), h.GetNamespace(), k.GetNamespace())
			}
		}
	})
}

// TestCompareManagerRBACCatchesDrift checks the comparison itself.
func TestCompareManagerRBACCatchesDrift(t *testing.T) {
	kust := render(t, DefaultOverlay)
	helm := make([]*unstructured.Unstructured, 0, len(kust))
	for _, o := range kust {
		o = o.DeepCopy()
		if o.GetKind() == "ClusterRole" {
			rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
			_ = unstructured.SetNestedSlice(o.Object, rules[1:], "rules")
		}
		helm = append(helm, o)
	}
	if diff := CompareManagerRBAC(kust, kust); diff != "" {
		t.Errorf("same manifests differ: %s", diff)
	}
	if diff := CompareManagerRBAC(kust, helm); !strings.Contains(diff, "missing") {
		t.Errorf("a dropped rule went unnoticed: %q", diff)
	}
}

// TestChartValues renders the chart with non-default values.
func TestChartValues(t *testing.T) {
	chart := filepath.Join(repoRoot(t), ChartDir)
	renderWith := func(t *testing.T, release string, values map[string]any) []*unstructured.Unstructured {
		t.Helper()
		objs, err := RenderChart(chart, release, "ops", values)
		if err != nil {
			t.Fatal(err)
		}
		return objs
	}
	t.Run("the guard watches the release's ServiceAccount", func(t *testing.T) {
		objs := renderWith(t, "fleet", map[string]any{"serviceAccount": map[string]any{"name": "robot"}})
		perms, err := ManagerPermissions(objs)
		if err != nil {
			t.Fatal(err)
		}
		if perms.ServiceAccount != "ops/robot" {
			t.Fatalf("manager runs as %s", perms.ServiceAccount)
		}
		checkGuard(t, objs, hostguard.Username("ops", "robot"))
	})
	t.Run("metrics off", func(t *testing.T) {
		objs := renderWith(t, "flotilla", map[string]any{"metrics": map[string]any{"enabled": false}})
		if len(OfKind(objs, "Service")) != 0 {
			t.Error("metrics Service rendered with metrics off")
		}
		c := managerContainer(t, managerDeployment(t, objs))
		if parseArgs(c.Args)["metrics-bind-address"] != "0" {
			t.Errorf("args %v", c.Args)
		}
	})
	t.Run("everything on", func(t *testing.T) {
		objs := renderWith(t, "fleet", map[string]any{
			"replicaCount": 2, "logLevel": "debug", "extraArgs": []any{"--concurrent-reconciles=16"},
			"image":        map[string]any{"tag": "v9.9.9"},
			"metrics":      map[string]any{"port": 9090, "serviceMonitor": map[string]any{"enabled": true}},
			"nodeSelector": map[string]any{"pool": "system"}, "tolerations": []any{map[string]any{"key": "system", "operator": "Exists"}},
		})
		if len(OfKind(objs, "ServiceMonitor")) != 1 {
			t.Error("no ServiceMonitor")
		}
		d := managerDeployment(t, objs)
		c := managerContainer(t, d)
		args := parseArgs(c.Args)
		for k, v := range map[string]string{"leader-elect": "true", "zap-log-level": "debug", "metrics-bind-address": ":9090", "concurrent-reconciles": "16"} {
			if args[k] != v {
				t.Errorf("--%s=%s missing from %v", k, v, c.Args)
			}
		}
		if c.Image != DefaultImageRepository+":v9.9.9" || *d.Spec.Replicas != 2 || d.Spec.Template.Spec.NodeSelector["pool"] != "system" || len(d.Spec.Template.Spec.Tolerations) != 1 {
			t.Errorf("values not applied: %s %d %v", c.Image, *d.Spec.Replicas, d.Spec.Template.Spec)
		}
		perms, err := ManagerPermissions(objs)
		if err != nil {
			t.Fatal(err)
		}
		if perms.ServiceAccount != "ops/fleet-flotilla-manager" {
			t.Errorf("manager runs as %s", perms.ServiceAccount)
		}
	})
	t.Run("replicas without leader election", func(t *testing.T) {
		_, err := RenderChart(chart, "flotilla", "ops", map[string]any{"replicaCount": 3, "leaderElection": map[string]any{"enabled": false}})
		if err == nil || !strings.Contains(err.Error(), "leaderElection") {
			t.Errorf("want a leaderElection error, got %v", err)
		}
	})
	t.Run("sharded", func(t *testing.T) {
		c := managerContainer(t, managerDeployment(t, renderWith(t, "flotilla", map[string]any{"replicaCount": 3, "shards": 6})))
		if args := parseArgs(c.Args); args["shards"] != "6" || args["leader-elect"] != "true" {
			t.Errorf("args %v", c.Args)
		}
		if args := parseArgs(managerContainer(t, managerDeployment(t, renderWith(t, "flotilla", nil))).Args); args["shards"] != "" {
			t.Errorf("unsharded by default, got --shards=%s", args["shards"])
		}
		_, err := RenderChart(chart, "flotilla", "ops", map[string]any{"shards": 4, "leaderElection": map[string]any{"enabled": false}})
		if err == nil || !strings.Contains(err.Error(), "leaderElection") {
			t.Errorf("want a leaderElection error, got %v", err)
		}
		if _, err := RenderChart(chart, "flotilla", "ops", map[string]any{"shards": 0}); err == nil {
			t.Error("values.schema.json let shards=0 through")
		}
	})
	t.Run("invalid values", func(t *testing.T) {
		if _, err := RenderChart(chart, "flotilla", "ops", map[string]any{"logLevel": "verbose"}); err == nil {
			t.Error("values.schema.json let logLevel=verbose through")
		}
	})
	t.Run("long release name", func(t *testing.T) {
		objs := renderWith(t, strings.Repeat("x", 53), nil)
		for _, o := range objs {
			if o.GetKind() == "CustomResourceDefinition" {
				continue
			}
			if errs := validation.IsDNS1123Label(o.GetName()); o.GetKind() == "Service" && len(errs) > 0 {
				t.Errorf("Service name %s: %v", o.GetName(), errs)
			}
			if errs := validation.IsDNS1123Subdomain(o.GetName()); len(errs) > 0 {
				t.Errorf("%s name %s: %v", o.GetKind(), o.GetName(), errs)
			}
		}
	})
}

// TestChartRBACWithNamespacedRole checks that a Role in role.yaml (a marker with namespace=)
// reaches the chart as a Role in the release namespace, bound to the manager.
func TestChartRBACWithNamespacedRole(t *testing.T) {
	roles := &GeneratedRoles{
		ClusterRoles: []rbacv1.ClusterRole{{Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get"}}}}},
		Roles:        []rbacv1.Role{{Rules: []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "update"}}}}},
	}
	roles.ClusterRoles[0].Name = "flotilla-manager-role"
	roles.Roles[0].Name, roles.Roles[0].Namespace = "flotilla-manager-role", Namespace
	tmpl, err := rbacTemplate(roles)
	if err != nil {
		t.Fatal(err)
	}
	chart := filepath.Join(t.TempDir(), "flotilla")
	if err := os.CopyFS(chart, os.DirFS(filepath.Join(repoRoot(t), ChartDir))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(chart, ChartRBACTemplate), tmpl, 0o644); err != nil {
		t.Fatal(err)
	}
	objs, err := RenderChart(chart, "flotilla", "ops", nil)
	if err != nil {
		t.Fatal(err)
	}
	perms, err := ManagerPermissions(objs)
	if err != nil {
		t.Fatal(err)
	}
	if d := DiffAtoms(roles.Roles[0].Rules, perms.Namespaced["ops"]); d != "" {
		t.Errorf("namespaced grants:\n%s", d)
	}
	if d := DiffAtoms(roles.ClusterRoles[0].Rules, perms.Cluster); d != "" {
		t.Errorf("cluster grants:\n%s", d)
	}
}

// TestSecurityDoc keeps docs/security.md's tables of rights what the RBAC and the guard
// policies say, and fails when a right of the manager has no reason. UPDATE_GOLDEN=1 rewrites
// the section.
func TestSecurityDoc(t *testing.T) {
	root := repoRoot(t)
	section, err := SecurityTables(root, join.MemberRules("flotilla-<cluster>", join.KubernetesGroups, false))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := ReadSecurityDoc(root)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ReplaceSecuritySection(doc, section)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join(root, SecurityDoc), []byte(want), "UPDATE_GOLDEN=1 go test ./internal/deploy/ -run TestSecurityDoc")
}
