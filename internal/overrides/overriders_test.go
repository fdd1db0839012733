package overrides

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// overriderCase applies one overrider to a base object; want is the base changed by edit.
type overriderCase struct {
	name  string
	base  string // YAML; deploymentYAML when empty
	apply func(*unstructured.Unstructured) error
	edit  func(t testing.TB, want *unstructured.Unstructured)
}

func runOverriderCases(t *testing.T, cases []overriderCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			base := tt.base
			if base == "" {
				base = deploymentYAML
			}
			got := fromYAML(t, base)
			want := got.DeepCopy()
			if tt.edit != nil {
				tt.edit(t, want)
			}
			if err := tt.apply(got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.Object, got.Object); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// set sets a field of want, reaching into lists by index: set(t, want, v, "spec", "x", 0, "y").
func set(t testing.TB, obj *unstructured.Unstructured, value any, path ...any) {
	t.Helper()
	var cur any = obj.Object
	for i, p := range path {
		last := i == len(path)-1
		switch k := p.(type) {
		case string:
			m := cur.(map[string]any)
			if last {
				if value == nil {
					delete(m, k)
				} else {
					m[k] = value
				}
				return
			}
			cur = m[k]
		case int:
			l := cur.([]any)
			if last {
				l[k] = value
				return
			}
			cur = l[k]
		}
	}
}

func strs(ss ...string) []any { return toAnySlice(ss) }

var containerSpec = []any{"spec", "template", "spec"}

func at(path ...any) []any { return append(append([]any(nil), containerSpec...), path...) }

func TestImageOverrider(t *testing.T) {
	image := func(o policyv1alpha1.ImageOverrider) func(*unstructured.Unstructured) error {
		return func(u *unstructured.Unstructured) error { return applyImageOverrider(u, o) }
	}
	runOverriderCases(t, []overriderCase{
		{
			name:  "registry replaced in every container and init container",
			apply: image(policyv1alpha1.ImageOverrider{Component: policyv1alpha1.Registry, Operator: policyv1alpha1.OverriderOpReplace, Value: "registry.example.internal"}),
			edit: func(t testing.TB, w *unstructured.Unstructured) {
				set(t, w, "registry.example.internal/busybox:1.36", at("initContainers", 0, "image")...)
				set(t, w, "registry.example.internal/library/nginx:1.27", at("containers", 0, "image")...)
				set(t, w, "registry.example.internal/proxy/envoy:v1@"+digest, at("containers", 1, "image")...)
			},
		},
		{
			name: "predicate picks one image",
			apply: image(policyv1alpha1.ImageOverrider{
				Predicate: &policyv1alpha1.ImagePredicate{Path: "/spec/template/spec/containers/0/image"},
				Component: policyv1alpha1.Tag, Operator: policyv1alpha1.OverriderOpReplace, Value: "1.28",
			}),
			edit: func(t testing.TB, w *unstructured.Unstructured) {
				set(t, w, "docker.io/library/nginx:1.28", at("containers", 0, "image")...)
			},
		},
		{
			name: "predicate works on any kind",
			base: "{apiVersion: example.com/v1, kind: App, metadata: {name: a}, spec: {image: nginx}}",
			apply: image(policyv1alpha1.ImageOverrider{
				Predicate: &policyv1alpha1.ImagePredicate{Path: "/spec/image"},
				Component: policyv1alpha1.Registry, Operator: policyv1alpha1.OverriderOpAdd, Value: "quay.io",
			}),
			edit: func(t testing.TB, w *unstructured.Unstructured) { set(t, w, "quay.io/nginx", "spec", "image") },
		},
		{
			name:  "CronJob",
			base:  "{apiVersion: batch/v1, kind: CronJob, metadata: {name: c}, spec: {jobTemplate: {spec: {template: {spec: {containers: [{name: c, image: 'alpine:3'}]}}}}}}",
			apply: image(policyv1alpha1.ImageOverrider{Component: policyv1alpha1.Tag, Operator: policyv1alpha1.OverriderOpReplace, Value: "3.20"}),
			edit: func(t testing.TB, w *unstructured.Unstructured) {
				set(t, w, "alpine:3.20", "spec", "jobTemplate", "spec", "template", "spec", "containers", 0, "image")
			},
		},
		{
			name:  "Pod",
			base:  "{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: c, image: 'alpine:3'}]}}",
			apply: image(policyv1alpha1.ImageOverrider{Component: policyv1alpha1.Registry, Operator: policyv1alpha1.OverriderOpReplace, Value: "mirror.local"}),
			edit: func(t testing.TB, w *unstructured.Unstructured) {
				set(t, w, "mirror.local/alpine:3", "spec", "containers", 0, "image")
			},
		},
		{
			name:  "container without image is left to config management",
			base:  "{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: s}, spec: {template: {spec: {containers: [{name: c}]}}}}",
			apply: image(policyv1alpha1.ImageOverrider{Component: policyv1alpha1.Registry, Operator: policyv1alpha1.OverriderOpReplace, Value: "mirror.local"}),
		},
		{
			name:  "kind without pod spec unchanged",
			base:  "{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {image: nginx}}",
			apply: image(policyv1alpha1.ImageOverrider{Component: policyv1alpha1.Registry, Operator: policyv1alpha1.OverriderOpReplace, Value: "mirror.local"}),
		},
		{
			name:  "custom Deployment kind in another group unchanged",
			base:  "{apiVersion: example.com/v1, kind: Deployment, metadata: {name: d}, spec: {template: {spec: {containers: [{name: c, image: nginx}]}}}}",
			apply: image(policyv1alpha1.ImageOverrider{Component: policyv1alpha1.Registry, Operator: policyv1alpha1.OverriderOpReplace, Value: "mirror.local"}),
		},
	})
}

func TestCommandArgsOverrider(t *testing.T) {
	cmd := func(field string, o policyv1alpha1.CommandArgsOverrider) func(*unstructured.Unstructured) error {
		return func(u *unstructured.Unstructured) error { return applyCommandArgsOverrider(u, field, o) }
	}
	add, rm := policyv1alpha1.OverriderOpAdd, policyv1alpha1.OverriderOpRemove
	runOverriderCases(t, []overriderCase{
		{
			name:  "add args appends",
			apply: cmd("args", policyv1alpha1.CommandArgsOverrider{ContainerName: "web", Operator: add, Value: []string{"--verbose"}}),
			edit: func(t testing.TB, w *unstructured.Unstructured) {
				set(t, w, strs("--port", "8080", "--verbose"), at("containers", 0, "args")...)
			},
		},
		{
			name:  "add command creates the list",
			apply: cmd("command", policyv1alpha1.CommandArgsOverrider{ContainerName: "sidecar", Operator: add, Value: []string{"envoy", "-c", "/etc/envoy.yaml"}}),
			edit: func(t testing.TB, w *unstructured.Unstructured) {
				set(t, w, strs("envoy", "-c", "/etc/envoy.yaml"), at("containers", 1, "command")...)
			},
		},
		{
			name:  "init container by name",
			apply: cmd("command", policyv1alpha1.CommandArgsOverrider{ContainerName: "init", Operator: rm, Value: []string{"-c"}}),
			edit: func(t testing.TB, w *unstructured.Unstructured) {
				set(t, w, strs("sh", "true"), at("initContainers", 0, "command")...)
			},
		},
		{
			name:  "remove every match; an emptied list is dropped",
			apply: cmd("args", policyv1alpha1.CommandArgsOverrider{ContainerName: "web", Operator: rm, Value: []string{"8080", "--port", "absent"}}),
			edit:  func(t testing.TB, w *unstructured.Unstructured) { set(t, w, nil, at("containers", 0, "args")...) },
		},
		{
			name:  "remove from a container without the field",
			apply: cmd("command", policyv1alpha1.CommandArgsOverrider{ContainerName: "web", Operator: rm, Value: []string{"x"}}),
		},
		{
			name:  "unknown container is a no-op",
			apply: cmd("args", policyv1alpha1.CommandArgsOverrider{ContainerName: "nope", Operator: add, Value: []string{"x"}}),
		},
		{
			name:  "kind without containers is a no-op",
			base:  "{apiVersion: v1, kind: Service, metadata: {name: s}}",
			apply: cmd("args", policyv1alpha1.CommandArgsOverrider{ContainerName: "web", Operator: add, Value: []string{"x"}}),
		},
	})
}

func TestMetadataOverrider(t *testing.T) {
	meta := func(field string, op policyv1alpha1.OverriderOperator, kv map[string]string) func(*unstructured.Unstructured) error {
		return func(u *unstructured.Unstructured) error {
			return applyMetadataOverrider(u, field, policyv1alpha1.LabelAnnotationOverrider{Operator: op, Value: kv})
		}
	}
	add, rep, rm := policyv1alpha1.OverriderOpAdd, policyv1alpha1.OverriderOpReplace, policyv1alpha1.OverriderOpRemove
	runOverriderCases(t, []overriderCase{
		{
			name:  "add sets new and existing labels",
			apply: meta("labels", add, map[string]string{"site": "primary", "tier": "edge"}),
			edit: func(t testing.TB, w *unstructured.Unstructured) {
				set(t, w, map[string]any{"app": "web", "tier": "edge", "site": "primary"}, "metadata", "labels")
			},
		},
		{
			name:  "replace changes existing keys only",
			apply: meta("labels", rep, map[string]string{"tier": "back", "absent": "x"}),
			edit: func(t testing.TB, w *unstructured.Unstructured) {
				set(t, w, map[string]any{"app": "web", "tier": "back"}, "metadata", "labels")
			},
		},
		{
			name:  "remove deletes keys whatever the value",
			apply: meta("labels", rm, map[string]string{"tier": "", "absent": ""}),
			edit: func(t testing.TB, w *unstructured.Unstructured) {
				set(t, w, map[string]any{"app": "web"}, "metadata", "labels")
			},
		},
		{
			name:  "removing the last annotation drops the field",
			apply: meta("annotations", rm, map[string]string{"owner": ""}),
			edit:  func(t testing.TB, w *unstructured.Unstructured) { set(t, w, nil, "metadata", "annotations") },
		},
		{
			name:  "annotations add creates the map",
			base:  "{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}",
			apply: meta("annotations", add, map[string]string{"example.com/note": "any value: even / and spaces"}),
			edit: func(t testing.TB, w *unstructured.Unstructured) {
				set(t, w, map[string]any{"example.com/note": "any value: even / and spaces"}, "metadata", "annotations")
			},
		},
		{
			name:  "replace on an object without labels",
			base:  "{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}",
			apply: meta("labels", rep, map[string]string{"a": "b"}),
		},
	})
}

func TestFieldOverrider(t *testing.T) {
	const cm = `
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
data:
  config.yaml: |
    # comments are not kept
    server:
      port: 80
      hosts: [a, b]
  config.json: '{"log": {"level": "info"}, "workers": 4}'
`
	field := func(o policyv1alpha1.FieldOverrider) func(*unstructured.Unstructured) error {
		return func(u *unstructured.Unstructured) error { return applyFieldOverrider(u, o) }
	}
	runOverriderCases(t, []overriderCase{
		{
			name: "yaml ops, written back as YAML",
			base: cm,
			apply: field(policyv1alpha1.FieldOverrider{FieldPath: "/data/config.yaml", YAML: []policyv1alpha1.YAMLPatchOperation{
				{SubPath: "/server/port", Operator: policyv1alpha1.OverriderOpReplace, Value: raw("8080")},
				{SubPath: "/server/hosts/-", Operator: policyv1alpha1.OverriderOpAdd, Value: raw(`"c"`)},
				{SubPath: "/server/tls", Operator: policyv1alpha1.OverriderOpAdd, Value: raw(`{"enabled": true}`)},
			}}),
			edit: func(t testing.TB, w *unstructured.Unstructured) {
				set(t, w, "server:\n  hosts:\n  - a\n  - b\n  - c\n  port: 8080\n  tls:\n    enabled: true\n", "data", "config.yaml")
			},
		},
		{
			name: "json ops, written back as compact JSON",
			base: cm,
			apply: field(policyv1alpha1.FieldOverrider{FieldPath: "/data/config.json", JSON: []policyv1alpha1.JSONPatchOperation{
				{SubPath: "/log/level", Operator: policyv1alpha1.OverriderOpReplace, Value: raw(`"debug"`)},
				{SubPath: "/workers", Operator: policyv1alpha1.OverriderOpRemove},
				{SubPath: "/html", Operator: policyv1alpha1.OverriderOpAdd, Value: raw(`"<b>&</b>"`)},
			}}),
			edit: func(t testing.TB, w *unstructured.Unstructured) {
				set(t, w, `{"log":{"level":"debug"},"html":"<b>&</b>"}`, "data", "config.json")
			},
		},
		{
			name: "escaped pointer to a key with a slash",
			base: "{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {'a/b.json': '[1]'}}",
			apply: field(policyv1alpha1.FieldOverrider{FieldPath: "/data/a~1b.json", JSON: []policyv1alpha1.JSONPatchOperation{
				{SubPath: "/0", Operator: policyv1alpha1.OverriderOpAdd, Value: raw(`0`)},
			}}),
			edit: func(t testing.TB, w *unstructured.Unstructured) { set(t, w, "[0,1]", "data", "a/b.json") },
		},
	})
}

func TestPlaintextOverrider(t *testing.T) {
	plain := func(op policyv1alpha1.OverriderOperator, path, value string) func(*unstructured.Unstructured) error {
		return func(u *unstructured.Unstructured) error {
			return applyPlaintextOverrider(u, policyv1alpha1.PlaintextOverrider{Path: path, Operator: op, Value: raw(value)})
		}
	}
	runOverriderCases(t, []overriderCase{
		{
			name:  "replace keeps integers int64",
			apply: plain(policyv1alpha1.OverriderOpReplace, "/spec/replicas", "5"),
			edit:  func(t testing.TB, w *unstructured.Unstructured) { set(t, w, int64(5), "spec", "replicas") },
		},
		{
			name:  "add a new field",
			apply: plain(policyv1alpha1.OverriderOpAdd, "/spec/paused", "true"),
			edit:  func(t testing.TB, w *unstructured.Unstructured) { set(t, w, true, "spec", "paused") },
		},
		{
			name:  "add inserts into a list",
			apply: plain(policyv1alpha1.OverriderOpAdd, "/spec/template/spec/containers/0/args/0", `"--first"`),
			edit: func(t testing.TB, w *unstructured.Unstructured) {
				set(t, w, strs("--first", "--port", "8080"), at("containers", 0, "args")...)
			},
		},
		{
			name:  "add without a value sets null",
			apply: plain(policyv1alpha1.OverriderOpAdd, "/spec/strategy", ""),
			edit:  func(t testing.TB, w *unstructured.Unstructured) { w.Object["spec"].(map[string]any)["strategy"] = nil },
		},
		{
			name:  "remove",
			apply: plain(policyv1alpha1.OverriderOpRemove, "/metadata/annotations/owner", ""),
			edit: func(t testing.TB, w *unstructured.Unstructured) {
				set(t, w, map[string]any{}, "metadata", "annotations")
			},
		},
	})
}

func TestOverriderErrors(t *testing.T) {
	tests := []struct {
		name  string
		base  string
		apply func(*unstructured.Unstructured) error
		want  string
	}{
		{
			name: "image predicate path missing",
			apply: func(u *unstructured.Unstructured) error {
				return applyImageOverrider(u, policyv1alpha1.ImageOverrider{Predicate: &policyv1alpha1.ImagePredicate{Path: "/spec/template/spec/containers/5/image"}, Component: policyv1alpha1.Tag, Operator: policyv1alpha1.OverriderOpReplace, Value: "x"})
			},
			want: "predicate: path /spec/template/spec/containers/5/image: /spec/template/spec/containers: index 5 is out of range (length 2)",
		},
		{
			name: "image predicate path not a string",
			apply: func(u *unstructured.Unstructured) error {
				return applyImageOverrider(u, policyv1alpha1.ImageOverrider{Predicate: &policyv1alpha1.ImagePredicate{Path: "/spec/replicas"}, Component: policyv1alpha1.Tag, Operator: policyv1alpha1.OverriderOpReplace, Value: "x"})
			},
			want: "predicate: path /spec/replicas is a number, not an image string",
		},
		{
			name: "malformed image names the container",
			base: "{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: c, image: 'UPPER:1'}]}}",
			apply: func(u *unstructured.Unstructured) error {
				return applyImageOverrider(u, policyv1alpha1.ImageOverrider{Component: policyv1alpha1.Tag, Operator: policyv1alpha1.OverriderOpReplace, Value: "2"})
			},
			want: `/spec/containers/0/image: image "UPPER:1": invalid repository`,
		},
		{
			name: "containers not a list",
			base: "{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: oops}}",
			apply: func(u *unstructured.Unstructured) error {
				return applyImageOverrider(u, policyv1alpha1.ImageOverrider{Component: policyv1alpha1.Tag, Operator: policyv1alpha1.OverriderOpReplace, Value: "2"})
			},
			want: "/spec/containers is a string, not an array",
		},
		{
			name: "args not a list of strings",
			base: "{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: c, args: [1]}]}}",
			apply: func(u *unstructured.Unstructured) error {
				return applyCommandArgsOverrider(u, "args", policyv1alpha1.CommandArgsOverrider{ContainerName: "c", Operator: policyv1alpha1.OverriderOpAdd})
			},
			want: "/spec/containers/0/args: element 0 is a number, not a string",
		},
		{
			name: "command replace unsupported",
			apply: func(u *unstructured.Unstructured) error {
				return applyCommandArgsOverrider(u, "command", policyv1alpha1.CommandArgsOverrider{ContainerName: "web", Operator: policyv1alpha1.OverriderOpReplace})
			},
			want: `unknown operator "replace": must be add or remove`,
		},
		{
			name: "invalid label value",
			apply: func(u *unstructured.Unstructured) error {
				return applyMetadataOverrider(u, "labels", policyv1alpha1.LabelAnnotationOverrider{Operator: policyv1alpha1.OverriderOpAdd, Value: map[string]string{"site": "not valid!"}})
			},
			want: `invalid value "not valid!" of label "site"`,
		},
		{
			name: "invalid annotation key",
			apply: func(u *unstructured.Unstructured) error {
				return applyMetadataOverrider(u, "annotations", policyv1alpha1.LabelAnnotationOverrider{Operator: policyv1alpha1.OverriderOpAdd, Value: map[string]string{"a b": "x"}})
			},
			want: `invalid annotations key "a b"`,
		},
		{
			name: "plaintext replace of a missing path",
			apply: func(u *unstructured.Unstructured) error {
				return applyPlaintextOverrider(u, policyv1alpha1.PlaintextOverrider{Path: "/spec/nope", Operator: policyv1alpha1.OverriderOpReplace, Value: raw("1")})
			},
			want: "replace /spec/nope: the path does not exist",
		},
		{
			name: "plaintext remove of a missing path",
			apply: func(u *unstructured.Unstructured) error {
				return applyPlaintextOverrider(u, policyv1alpha1.PlaintextOverrider{Path: "/metadata/labels/nope", Operator: policyv1alpha1.OverriderOpRemove})
			},
			want: "remove /metadata/labels/nope: the path does not exist",
		},
		{
			name: "plaintext add under a missing parent",
			apply: func(u *unstructured.Unstructured) error {
				return applyPlaintextOverrider(u, policyv1alpha1.PlaintextOverrider{Path: "/spec/a/b", Operator: policyv1alpha1.OverriderOpAdd, Value: raw("1")})
			},
			want: "add /spec/a/b: the parent of the path does not exist",
		},
		{
			name: "plaintext bad JSON value",
			apply: func(u *unstructured.Unstructured) error {
				return applyPlaintextOverrider(u, policyv1alpha1.PlaintextOverrider{Path: "/spec/replicas", Operator: policyv1alpha1.OverriderOpReplace, Value: raw("{nope")})
			},
			want: `value "{nope" is not valid JSON`,
		},
		{
			name: "plaintext path not a pointer",
			apply: func(u *unstructured.Unstructured) error {
				return applyPlaintextOverrider(u, policyv1alpha1.PlaintextOverrider{Path: "spec.replicas", Operator: policyv1alpha1.OverriderOpReplace, Value: raw("1")})
			},
			want: `path "spec.replicas": a JSON pointer must start with '/'`,
		},
		{
			name: "plaintext result not an object",
			apply: func(u *unstructured.Unstructured) error {
				return applyPlaintextOverrider(u, policyv1alpha1.PlaintextOverrider{Path: "", Operator: policyv1alpha1.OverriderOpReplace, Value: raw("[1]")})
			},
			want: "the result is an array, not an object",
		},
		{
			name: "field path missing",
			apply: func(u *unstructured.Unstructured) error {
				return applyFieldOverrider(u, policyv1alpha1.FieldOverrider{FieldPath: "/data/x", YAML: []policyv1alpha1.YAMLPatchOperation{{SubPath: "/a", Operator: policyv1alpha1.OverriderOpRemove}}})
			},
			want: `fieldPath: path /data/x: document root: has no field "data"`,
		},
		{
			name: "field not a string",
			apply: func(u *unstructured.Unstructured) error {
				return applyFieldOverrider(u, policyv1alpha1.FieldOverrider{FieldPath: "/spec/replicas", JSON: []policyv1alpha1.JSONPatchOperation{{SubPath: "/a", Operator: policyv1alpha1.OverriderOpRemove}}})
			},
			want: "fieldPath /spec/replicas is a number, not a string holding json",
		},
		{
			name: "field not JSON",
			base: "{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {k: 'a: b'}}",
			apply: func(u *unstructured.Unstructured) error {
				return applyFieldOverrider(u, policyv1alpha1.FieldOverrider{FieldPath: "/data/k", JSON: []policyv1alpha1.JSONPatchOperation{{SubPath: "/a", Operator: policyv1alpha1.OverriderOpRemove}}})
			},
			want: "fieldPath /data/k: content is not valid JSON",
		},
		{
			name: "field with several YAML documents",
			base: "{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {k: \"a: 1\\n---\\nb: 2\\n\"}}",
			apply: func(u *unstructured.Unstructured) error {
				return applyFieldOverrider(u, policyv1alpha1.FieldOverrider{FieldPath: "/data/k", YAML: []policyv1alpha1.YAMLPatchOperation{{SubPath: "/a", Operator: policyv1alpha1.OverriderOpRemove}}})
			},
			want: "content holds more than one YAML document",
		},
		{
			name: "field sub-path missing names the operation",
			base: "{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {k: 'a: 1'}}",
			apply: func(u *unstructured.Unstructured) error {
				return applyFieldOverrider(u, policyv1alpha1.FieldOverrider{FieldPath: "/data/k", YAML: []policyv1alpha1.YAMLPatchOperation{
					{SubPath: "/a", Operator: policyv1alpha1.OverriderOpReplace, Value: raw("2")},
					{SubPath: "/b", Operator: policyv1alpha1.OverriderOpReplace, Value: raw("2")},
				}})
			},
			want: "yaml[1]: replace /b: the path does not exist",
		},
		{
			name: "field with both json and yaml",
			apply: func(u *unstructured.Unstructured) error {
				return applyFieldOverrider(u, policyv1alpha1.FieldOverrider{FieldPath: "/data/k",
					JSON: []policyv1alpha1.JSONPatchOperation{{SubPath: "/a", Operator: policyv1alpha1.OverriderOpRemove}},
					YAML: []policyv1alpha1.YAMLPatchOperation{{SubPath: "/a", Operator: policyv1alpha1.OverriderOpRemove}}})
			},
			want: "set exactly one of json and yaml, not both",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := tt.base
			if base == "" {
				base = deploymentYAML
			}
			err := tt.apply(fromYAML(t, base))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestPointer(t *testing.T) {
	doc := map[string]any{"a/b": map[string]any{"~x": []any{"zero", "one"}}}
	tests := []struct {
		path    string
		want    any
		wantErr string
	}{
		{"", doc, ""},
		{"/a~1b/~0x/1", "one", ""},
		{"/a~1b/~0x/01", nil, `"01" is not an array index`},
		{"/a~1b/~0x/-", nil, `"-" is not an array index`},
		{"/a~1b/~0x/2", nil, "index 2 is out of range (length 2)"},
		{"/a~1b/~0x/0/deeper", nil, "/a~1b/~0x/0: is a string, not an object or array"},
		{"/a~2b", nil, "'~' must be followed by '0' or '1'"},
		{"/a~", nil, "'~' must be followed by '0' or '1'"},
		{"a", nil, "must start with '/'"},
	}
	for _, tt := range tests {
		p, err := parsePointer(tt.path)
		var got any
		if err == nil {
			got, err = p.get(doc)
		}
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q: error = %v, want one containing %q", tt.path, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.path, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%q: mismatch (-want +got):\n%s", tt.path, diff)
		}
	}
}
