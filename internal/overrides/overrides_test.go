package overrides

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
)

func member(name string, lbls map[string]string) *clusterv1alpha1.Cluster {
	return &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}
}

func op(ns, name string, spec policyv1alpha1.OverrideSpec) policyv1alpha1.OverridePolicy {
	return policyv1alpha1.OverridePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
}

func cop(name string, spec policyv1alpha1.OverrideSpec) policyv1alpha1.ClusterOverridePolicy {
	return policyv1alpha1.ClusterOverridePolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
}

const nginxYAML = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx
  namespace: default
  labels:
    app: nginx
spec:
  replicas: 2
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: docker.io/library/nginx:1.27
`

// nginxOverride is the OverridePolicy of the nginx-override scenario.
func nginxOverride() policyv1alpha1.OverridePolicy {
	return op("default", "nginx-override", policyv1alpha1.OverrideSpec{
		ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: "nginx"}},
		OverrideRules: []policyv1alpha1.RuleWithCluster{{
			TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1"}},
			Overriders: policyv1alpha1.Overriders{
				ImageOverrider:  []policyv1alpha1.ImageOverrider{{Component: policyv1alpha1.Registry, Operator: policyv1alpha1.OverriderOpReplace, Value: "registry.example.internal"}},
				LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{{Operator: policyv1alpha1.OverriderOpAdd, Value: map[string]string{"site": "primary"}}},
			},
		}},
	})
}

func TestApplyNginxScenario(t *testing.T) {
	template := fromYAML(t, nginxYAML)
	pristine := template.DeepCopy()

	got, annotations, err := Apply(template, member("member1", nil), nil, []policyv1alpha1.OverridePolicy{nginxOverride()})
	if err != nil {
		t.Fatal(err)
	}
	want := fromYAML(t, nginxYAML)
	set(t, want, "registry.example.internal/library/nginx:1.27", "spec", "template", "spec", "containers", 0, "image")
	set(t, want, map[string]any{"app": "nginx", "site": "primary"}, "metadata", "labels")
	if diff := cmp.Diff(want.Object, got.Object); diff != "" {
		t.Errorf("member1 object mismatch (-want +got):\n%s", diff)
	}
	wantAnnotations := map[string]string{
		wellknown.AppliedOverridesAnnotation: `[{"policyName":"nginx-override","overriders":{"imageOverrider":[{"component":"Registry","operator":"replace","value":"registry.example.internal"}],"labelsOverrider":[{"operator":"add","value":{"site":"primary"}}]}}]`,
	}
	if diff := cmp.Diff(wantAnnotations, annotations); diff != "" {
		t.Errorf("member1 annotations mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(pristine.Object, template.Object); diff != "" {
		t.Errorf("Apply changed the template (-before +after):\n%s", diff)
	}

	got, annotations, err = Apply(template, member("member2", nil), nil, []policyv1alpha1.OverridePolicy{nginxOverride()})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(pristine.Object, got.Object); diff != "" {
		t.Errorf("member2 object changed (-want +got):\n%s", diff)
	}
	if annotations != nil {
		t.Errorf("member2 annotations = %v, want none", annotations)
	}
}

// addArg is a rule that appends one arg to the nginx container: the args record the order
// in which rules applied.
func addArg(arg string) policyv1alpha1.Overriders {
	return policyv1alpha1.Overriders{ArgsOverrider: []policyv1alpha1.CommandArgsOverrider{{ContainerName: "nginx", Operator: policyv1alpha1.OverriderOpAdd, Value: []string{arg}}}}
}

func argsOf(t *testing.T, u *unstructured.Unstructured) []string {
	t.Helper()
	args, _, err := unstructured.NestedFieldNoCopy(u.Object, "spec", "template", "spec", "containers")
	if err != nil {
		t.Fatal(err)
	}
	out, err := stringList(args.([]any)[0].(map[string]any), "args")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestApplyOrder(t *testing.T) {
	byName := []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: "nginx"}}
	byLabel := []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}}}}
	byKind := []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment"}}
	rules := func(args ...string) policyv1alpha1.OverrideSpec {
		var s policyv1alpha1.OverrideSpec
		for _, a := range args {
			s.OverrideRules = append(s.OverrideRules, policyv1alpha1.RuleWithCluster{Overriders: addArg(a)})
		}
		return s
	}
	with := func(sels []policyv1alpha1.ResourceSelector, s policyv1alpha1.OverrideSpec) policyv1alpha1.OverrideSpec {
		s.ResourceSelectors = sels
		return s
	}
	// Given in the reverse of the order they must apply in.
	cops := []policyv1alpha1.ClusterOverridePolicy{
		cop("c-name", with(byName, rules("cop-name"))),
		cop("c-label", with(byLabel, rules("cop-label"))),
		cop("c-kind-b", with(byKind, rules("cop-kind-b"))),
		cop("c-kind-a", with(byKind, rules("cop-kind-a"))),
		cop("c-all", rules("cop-all-1", "cop-all-2")),
	}
	ops := []policyv1alpha1.OverridePolicy{
		op("default", "o-name", with(byName, rules("op-name"))),
		op("default", "o-label", with(byLabel, rules("op-label"))),
		op("default", "o-all", rules("op-all")),
		op("other", "o-other-namespace", rules("never")),
	}
	got, annotations, err := Apply(fromYAML(t, nginxYAML), member("member1", nil), cops, ops)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"cop-all-1", "cop-all-2", "cop-kind-a", "cop-kind-b", "cop-label", "cop-name", "op-all", "op-label", "op-name"}
	if diff := cmp.Diff(want, argsOf(t, got)); diff != "" {
		t.Errorf("apply order mismatch (-want +got):\n%s", diff)
	}
	policyNames := func(key string) []string {
		var entries []AppliedOverrider
		if err := json.Unmarshal([]byte(annotations[key]), &entries); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.PolicyName)
		}
		return names
	}
	if diff := cmp.Diff([]string{"c-all", "c-all", "c-kind-a", "c-kind-b", "c-label", "c-name"}, policyNames(wellknown.AppliedClusterOverridesAnnotation)); diff != "" {
		t.Errorf("applied cluster overrides mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"o-all", "o-label", "o-name"}, policyNames(wellknown.AppliedOverridesAnnotation)); diff != "" {
		t.Errorf("applied overrides mismatch (-want +got):\n%s", diff)
	}
}

func TestApplyOverriderOrderWithinRule(t *testing.T) {
	// Image applies before plaintext, so plaintext has the last word on the image; labels
	// apply before annotations before field before plaintext.
	p := op("default", "p", policyv1alpha1.OverrideSpec{OverrideRules: []policyv1alpha1.RuleWithCluster{{Overriders: policyv1alpha1.Overriders{
		Plaintext: []policyv1alpha1.PlaintextOverrider{
			{Path: "/spec/template/spec/containers/0/image", Operator: policyv1alpha1.OverriderOpReplace, Value: raw(`"final.io/nginx:9"`)},
			{Path: "/spec/template/spec/containers/0/args/-", Operator: policyv1alpha1.OverriderOpAdd, Value: raw(`"from-plaintext"`)},
			{Path: "/metadata/labels/seen", Operator: policyv1alpha1.OverriderOpReplace, Value: raw(`"plaintext"`)},
		},
		ImageOverrider:  []policyv1alpha1.ImageOverrider{{Component: policyv1alpha1.Tag, Operator: policyv1alpha1.OverriderOpReplace, Value: "1.28"}},
		ArgsOverrider:   []policyv1alpha1.CommandArgsOverrider{{ContainerName: "nginx", Operator: policyv1alpha1.OverriderOpAdd, Value: []string{"from-args"}}},
		LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{{Operator: policyv1alpha1.OverriderOpAdd, Value: map[string]string{"seen": "labels"}}},
	}}}})
	got, _, err := Apply(fromYAML(t, nginxYAML), member("member1", nil), nil, []policyv1alpha1.OverridePolicy{p})
	if err != nil {
		t.Fatal(err)
	}
	want := fromYAML(t, nginxYAML)
	set(t, want, "final.io/nginx:9", "spec", "template", "spec", "containers", 0, "image")
	set(t, want, strs("from-args", "from-plaintext"), "spec", "template", "spec", "containers", 0, "args")
	set(t, want, map[string]any{"app": "nginx", "seen": "plaintext"}, "metadata", "labels")
	if diff := cmp.Diff(want.Object, got.Object); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestApplyTargetClusters(t *testing.T) {
	spec := policyv1alpha1.OverrideSpec{OverrideRules: []policyv1alpha1.RuleWithCluster{
		{TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1"}}, Overriders: addArg("member1-only")},
		{TargetCluster: &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}, Overriders: addArg("prod")},
		{Overriders: addArg("everywhere")},
		{TargetCluster: &policyv1alpha1.ClusterAffinity{Exclude: []string{"member2"}}, Overriders: addArg("not-member2")},
	}}
	deprecated := policyv1alpha1.OverrideSpec{
		TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member2"}},
		Overriders:    &policyv1alpha1.Overriders{ArgsOverrider: addArg("deprecated-member2").ArgsOverrider},
	}
	ops := []policyv1alpha1.OverridePolicy{op("default", "a", spec), op("default", "b", deprecated)}
	tests := []struct {
		cluster *clusterv1alpha1.Cluster
		want    []string
	}{
		{member("member1", nil), []string{"member1-only", "everywhere", "not-member2"}},
		{member("member2", map[string]string{"env": "prod"}), []string{"prod", "everywhere", "deprecated-member2"}},
		{member("member3", nil), []string{"everywhere", "not-member2"}},
	}
	for _, tt := range tests {
		t.Run(tt.cluster.Name, func(t *testing.T) {
			got, _, err := Apply(fromYAML(t, nginxYAML), tt.cluster, nil, ops)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, argsOf(t, got)); diff != "" {
				t.Errorf("args mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestApplySelection(t *testing.T) {
	labelSel := func(v string) []policyv1alpha1.ResourceSelector {
		return []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": v}}}}
	}
	tests := []struct {
		name string
		cops []policyv1alpha1.ClusterOverridePolicy
		ops  []policyv1alpha1.OverridePolicy
		want []string
	}{
		{"no policies", nil, nil, nil},
		{"labels miss", nil, []policyv1alpha1.OverridePolicy{op("default", "a", policyv1alpha1.OverrideSpec{ResourceSelectors: labelSel("redis"), OverrideRules: []policyv1alpha1.RuleWithCluster{{Overriders: addArg("x")}}})}, nil},
		{"labels hit", nil, []policyv1alpha1.OverridePolicy{op("default", "a", policyv1alpha1.OverrideSpec{ResourceSelectors: labelSel("nginx"), OverrideRules: []policyv1alpha1.RuleWithCluster{{Overriders: addArg("x")}}})}, []string{"x"}},
		{"OverridePolicy of another namespace", nil, []policyv1alpha1.OverridePolicy{op("prod", "a", policyv1alpha1.OverrideSpec{OverrideRules: []policyv1alpha1.RuleWithCluster{{Overriders: addArg("x")}}})}, nil},
		{"ClusterOverridePolicy with namespace selector", []policyv1alpha1.ClusterOverridePolicy{
			cop("a", policyv1alpha1.OverrideSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default"}}, OverrideRules: []policyv1alpha1.RuleWithCluster{{Overriders: addArg("x")}}}),
			cop("b", policyv1alpha1.OverrideSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "prod"}}, OverrideRules: []policyv1alpha1.RuleWithCluster{{Overriders: addArg("y")}}}),
		}, nil, []string{"x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := Apply(fromYAML(t, nginxYAML), member("member1", nil), tt.cops, tt.ops)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, argsOf(t, got)); diff != "" {
				t.Errorf("args mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestApplyErrors(t *testing.T) {
	rule := func(o policyv1alpha1.Overriders) policyv1alpha1.OverrideSpec {
		return policyv1alpha1.OverrideSpec{OverrideRules: []policyv1alpha1.RuleWithCluster{{Overriders: addArg("ok")}, {Overriders: o}}}
	}
	tests := []struct {
		name string
		cops []policyv1alpha1.ClusterOverridePolicy
		ops  []policyv1alpha1.OverridePolicy
		want string
	}{
		{
			name: "malformed image",
			ops: []policyv1alpha1.OverridePolicy{op("default", "nginx-override", rule(policyv1alpha1.Overriders{ImageOverrider: []policyv1alpha1.ImageOverrider{
				{Component: policyv1alpha1.Tag, Operator: policyv1alpha1.OverriderOpReplace, Value: "1.28"},
				{Component: policyv1alpha1.Registry, Operator: policyv1alpha1.OverriderOpReplace, Value: "no_dots"},
			}}))},
			want: `OverridePolicy default/nginx-override rule 1 imageOverrider[1]: /spec/template/spec/containers/0/image: overriding image "docker.io/library/nginx:1.28": invalid registry "no_dots"`,
		},
		{
			name: "plaintext path missing in a ClusterOverridePolicy",
			cops: []policyv1alpha1.ClusterOverridePolicy{cop("global", rule(policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{
				{Path: "/spec/nope", Operator: policyv1alpha1.OverriderOpRemove},
			}}))},
			want: "ClusterOverridePolicy global rule 1 plaintext[0]: remove /spec/nope: the path does not exist",
		},
		{
			name: "deprecated form",
			ops: []policyv1alpha1.OverridePolicy{op("default", "old", policyv1alpha1.OverrideSpec{Overriders: &policyv1alpha1.Overriders{
				LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{{Operator: policyv1alpha1.OverriderOpAdd, Value: map[string]string{"bad key!": "x"}}},
			}})},
			want: `OverridePolicy default/old spec.overriders labelsOverrider[0]: invalid labels key "bad key!"`,
		},
		{
			name: "invalid targetCluster",
			ops: []policyv1alpha1.OverridePolicy{op("default", "p", policyv1alpha1.OverrideSpec{OverrideRules: []policyv1alpha1.RuleWithCluster{{
				TargetCluster: &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}},
			}}})},
			want: "OverridePolicy default/p rule 0 targetCluster: labelSelector:",
		},
		{
			name: "invalid resourceSelector",
			cops: []policyv1alpha1.ClusterOverridePolicy{cop("c", policyv1alpha1.OverrideSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{{
				APIVersion: "apps/v1", Kind: "Deployment", LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}},
			}}})},
			want: "ClusterOverridePolicy c: resourceSelectors[0]: labelSelector:",
		},
		{
			name: "identity change",
			ops: []policyv1alpha1.OverridePolicy{op("default", "p", rule(policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{
				{Path: "/metadata/name", Operator: policyv1alpha1.OverriderOpReplace, Value: raw(`"other"`)},
			}}))},
			want: `overrides changed metadata.name from "nginx" to "other"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			template := fromYAML(t, nginxYAML)
			pristine := template.DeepCopy()
			got, annotations, err := Apply(template, member("member1", nil), tt.cops, tt.ops)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error = %v\nwant one starting %q", err, tt.want)
			}
			if got != nil || annotations != nil {
				t.Errorf("Apply returned %v, %v with an error; want nothing", got, annotations)
			}
			if diff := cmp.Diff(pristine.Object, template.Object); diff != "" {
				t.Errorf("Apply changed the template (-before +after):\n%s", diff)
			}
		})
	}
}
