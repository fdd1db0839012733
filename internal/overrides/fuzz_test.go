package overrides

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// applyOne runs Apply with one OverridePolicy holding the overriders, and checks the
// contract that holds whatever the input: no panic, the template unchanged, and either an
// error and nothing else, or an object.
func applyOne(t *testing.T, template *unstructured.Unstructured, o policyv1alpha1.Overriders) {
	t.Helper()
	pristine := template.DeepCopy()
	p := op(template.GetNamespace(), "fuzz", policyv1alpha1.OverrideSpec{OverrideRules: []policyv1alpha1.RuleWithCluster{{Overriders: o}}})
	got, annotations, err := Apply(template, member("m", nil), nil, []policyv1alpha1.OverridePolicy{p})
	if diff := cmp.Diff(pristine.Object, template.Object); diff != "" {
		t.Fatalf("Apply changed the template (-before +after):\n%s", diff)
	}
	if err != nil {
		if got != nil || annotations != nil {
			t.Fatalf("Apply returned an object with error %v", err)
		}
		return
	}
	if got == nil || got.Object == nil {
		t.Fatal("Apply returned no object and no error")
	}
}

// FuzzPlaintextOverrider feeds arbitrary paths, operators and values to the plaintext
// overrider.
func FuzzPlaintextOverrider(f *testing.F) {
	f.Add("/spec/replicas", "replace", "3")
	f.Add("/spec/template/spec/containers/0/args/-", "add", `"x"`)
	f.Add("/metadata/labels/app", "remove", "")
	f.Add("", "replace", `{"kind":"Deployment"}`)
	f.Add("/spec/template/spec/containers/-1", "remove", "")
	f.Add("/a~1b/~0", "add", "null")
	f.Add("/spec", "move", "{")
	f.Fuzz(func(t *testing.T, path, operator, value string) {
		applyOne(t, fromYAML(t, deploymentYAML), policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{
			{Path: path, Operator: policyv1alpha1.OverriderOperator(operator), Value: raw(value)},
		}})
	})
}

// FuzzFieldOverrider feeds arbitrary field content, sub-paths, operators and values to the
// field overrider, as JSON and as YAML.
func FuzzFieldOverrider(f *testing.F) {
	f.Add("server:\n  port: 80\n", false, "/server/port", "replace", "8080")
	f.Add(`{"a":[1,2]}`, true, "/a/0", "remove", "")
	f.Add("- a\n- b\n", false, "/-", "add", `"c"`)
	f.Add("a: 1\n---\nb: 2", false, "/a", "remove", "")
	f.Add("", false, "", "replace", `{}`)
	f.Add("&a [*a]", false, "/0", "add", "1")
	f.Fuzz(func(t *testing.T, content string, asJSON bool, subPath, operator, value string) {
		template := fromYAML(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: default}, data: {}}")
		template.Object["data"].(map[string]any)["k"] = content
		fo := policyv1alpha1.FieldOverrider{FieldPath: "/data/k"}
		if asJSON {
			fo.JSON = []policyv1alpha1.JSONPatchOperation{{SubPath: subPath, Operator: policyv1alpha1.OverriderOperator(operator), Value: raw(value)}}
		} else {
			fo.YAML = []policyv1alpha1.YAMLPatchOperation{{SubPath: subPath, Operator: policyv1alpha1.OverriderOperator(operator), Value: raw(value)}}
		}
		applyOne(t, template, policyv1alpha1.Overriders{FieldOverrider: []policyv1alpha1.FieldOverrider{fo}})
	})
}

// FuzzImageOverriderPath feeds arbitrary predicate paths and images to the image overrider.
func FuzzImageOverriderPath(f *testing.F) {
	f.Add("/spec/template/spec/containers/0/image", "nginx:1", "Tag", "replace", "2")
	f.Add("/spec/template/spec/containers/9/image", "a", "Registry", "add", "x.io")
	f.Add("", "", "Repository", "remove", "")
	f.Fuzz(func(t *testing.T, path, image, component, operator, value string) {
		template := fromYAML(t, deploymentYAML)
		set(t, template, image, at("containers", 0, "image")...)
		o := policyv1alpha1.ImageOverrider{Component: policyv1alpha1.ImageComponent(component), Operator: policyv1alpha1.OverriderOperator(operator), Value: value}
		applyOne(t, template, policyv1alpha1.Overriders{ImageOverrider: []policyv1alpha1.ImageOverrider{o}})
		o.Predicate = &policyv1alpha1.ImagePredicate{Path: path}
		applyOne(t, template, policyv1alpha1.Overriders{ImageOverrider: []policyv1alpha1.ImageOverrider{o}})
	})
}

// FuzzPointer checks that parsing and following arbitrary pointers never panics, and that a
// replace at a pointer that resolves puts the value there.
func FuzzPointer(f *testing.F) {
	for _, s := range []string{"", "/", "/a", "/a/0", "/a/-", "/~", "/~01", "//", "/a/00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		doc := map[string]any{"a": []any{map[string]any{"": "x"}, "y"}, "": map[string]any{"": 1}}
		p, err := parsePointer(s)
		if err != nil {
			return
		}
		if _, err := p.get(doc); err != nil {
			return
		}
		if err := p.replace(doc, "new"); err != nil {
			if len(p.tokens) == 0 {
				return
			}
			t.Fatalf("replace(%q) after a successful get: %v", s, err)
		}
		if v, err := p.get(doc); err != nil || v != "new" {
			t.Fatalf("get(%q) after replace = %v, %v", s, v, err)
		}
	})
}
