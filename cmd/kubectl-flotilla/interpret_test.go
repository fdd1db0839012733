package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// The customization of Karmada's karmadactl interpret example, with a componentResource
// script added, and the objects it runs on.
const testCustomization = `apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterCustomization
metadata:
  name: deployments
spec:
  target:
    apiVersion: apps/v1
    kind: Deployment
  customizations:
    replicaResource:
      luaScript: |
        local kube = require("kube")
        function GetReplicas(obj)
          return obj.spec.replicas, kube.accuratePodRequirements(obj.spec.template)
        end
    componentResource:
      luaScript: |
        local kube = require("kube")
        function GetComponents(obj)
          return {{name = "main", replicas = obj.spec.replicas,
                   replicaRequirements = kube.accuratePodRequirements(obj.spec.template)}}
        end
    replicaRevision:
      luaScript: |
        function ReviseReplica(obj, desiredReplica)
          obj.spec.replicas = desiredReplica
          return obj
        end
    retention:
      luaScript: |
        function Retain(desiredObj, observedObj)
          desiredObj.spec.paused = observedObj.spec.paused
          return desiredObj
        end
    statusAggregation:
      luaScript: |
        function AggregateStatus(desiredObj, statusItems)
          if statusItems == nil then
            return desiredObj
          end
          desiredObj.status = {replicas = 0}
          for i = 1, #statusItems do
            desiredObj.status.replicas = desiredObj.status.replicas + statusItems[i].status.replicas
          end
          return desiredObj
        end
    statusReflection:
      luaScript: |
        function ReflectStatus(observedObj)
          return observedObj.status
        end
    healthInterpretation:
      luaScript: |
        function InterpretHealth(observedObj)
          return observedObj.status.readyReplicas == observedObj.spec.replicas
        end
    dependencyInterpretation:
      luaScript: |
        local kube = require("kube")
        function GetDependencies(desiredObj)
          return kube.getPodDependencies(desiredObj.spec.template, desiredObj.metadata.namespace)
        end
`

const testDesired = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx
  namespace: shop
spec:
  replicas: 3
  paused: false
  template:
    spec:
      serviceAccountName: runner
      containers:
      - name: nginx
        image: nginx
        resources:
          requests: {cpu: 100m}
`

const testObserved = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx
  namespace: shop
spec:
  replicas: 3
  paused: true
status:
  replicas: 3
  readyReplicas: 3
`

const testStatus = `applied: true
clusterName: member1
health: Healthy
status:
  replicas: 1
---
applied: true
clusterName: member2
health: Healthy
status:
  replicas: 2
`

// files writes name=content pairs into a temporary directory and returns their paths by name.
func files(t *testing.T, pairs ...string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	paths := map[string]string{}
	for i := 0; i+1 < len(pairs); i += 2 {
		p := filepath.Join(dir, pairs[i])
		if err := os.WriteFile(p, []byte(pairs[i+1]), 0o600); err != nil {
			t.Fatal(err)
		}
		paths[pairs[i]] = p
	}
	return paths
}

// yamlOf decodes YAML output for comparison.
func yamlOf(t *testing.T, out string) any {
	t.Helper()
	var x any
	if err := yaml.Unmarshal([]byte(out), &x); err != nil {
		t.Fatalf("output is not YAML: %v\n%s", err, out)
	}
	return x
}

func TestInterpretOperations(t *testing.T) {
	f := files(t, "ric.yaml", testCustomization, "desired.yaml", testDesired, "observed.yaml", testObserved, "status.yaml", testStatus)
	base := []string{"interpret", "-f", f["ric.yaml"]}
	tests := []struct {
		name string
		args []string
		want string // YAML
	}{{
		name: "InterpretReplica",
		args: []string{"--operation", "InterpretReplica", "--desired-file", f["desired.yaml"]},
		want: `{replicas: 3, replicaRequirements: {namespace: shop, resourceRequest: {cpu: 100m}}}`,
	}, {
		name: "the function's name, in any case, and the observed object when there is no desired one",
		args: []string{"--operation", "getreplicas", "--observed-file", f["desired.yaml"]},
		want: `{replicas: 3, replicaRequirements: {namespace: shop, resourceRequest: {cpu: 100m}}}`,
	}, {
		name: "InterpretComponent",
		args: []string{"--operation", "InterpretComponent", "--desired", f["desired.yaml"]},
		want: `[{name: main, replicas: 3, replicaRequirements: {resourceRequest: {cpu: 100m}}}]`,
	}, {
		name: "ReviseReplica",
		args: []string{"--operation", "replicaRevision", "--desired", f["desired.yaml"], "--desired-replica", "2"},
		want: strings.Replace(testDesired, "replicas: 3", "replicas: 2", 1),
	}, {
		name: "Retain",
		args: []string{"--operation", "retain", "--desired", f["desired.yaml"], "--observed", f["observed.yaml"]},
		want: strings.Replace(testDesired, "paused: false", "paused: true", 1),
	}, {
		name: "InterpretStatus",
		args: []string{"--operation", "InterpretStatus", "--observed", f["observed.yaml"]},
		want: `{status: {replicas: 3, readyReplicas: 3}}`,
	}, {
		name: "InterpretHealth",
		args: []string{"--operation", "InterpretHealth", "--observed", f["observed.yaml"]},
		want: `{healthy: true}`,
	}, {
		name: "InterpretDependency",
		args: []string{"--operation", "InterpretDependency", "--desired", f["desired.yaml"]},
		want: `[{apiVersion: v1, kind: ServiceAccount, namespace: shop, name: runner}]`,
	}, {
		name: "AggregateStatus",
		args: []string{"--operation", "AggregateStatus", "--desired", f["desired.yaml"], "--status-file", f["status.yaml"]},
		want: `{status: {replicas: 3}}`,
	}, {
		name: "AggregateStatus without items: the script gets nil",
		args: []string{"--operation", "AggregateStatus", "--desired", f["desired.yaml"]},
		want: `{status: null}`,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(t, append(base, tc.args...)...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if diff := cmp.Diff(yamlOf(t, tc.want), yamlOf(t, out)); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInterpretAll(t *testing.T) {
	f := files(t, "ric.yaml", testCustomization, "desired.yaml", testDesired, "observed.yaml", testObserved)
	out, err := run(t, "interpret", "-f", f["ric.yaml"], "--desired", f["desired.yaml"], "--observed", f["observed.yaml"])
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{
		`# InterpretReplica (GetReplicas), customization "deployments"`,
		`# InterpretComponent (GetComponents), customization "deployments"`,
		"# ReviseReplica (ReviseReplica), customization \"deployments\"\n# skipped: needs --desired-replica",
		`# Retain (Retain)`, `# InterpretStatus (ReflectStatus)`, `# InterpretHealth (InterpretHealth)`,
		`# InterpretDependency (GetDependencies)`, `# AggregateStatus (AggregateStatus)`,
		"healthy: true",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n---\n"); n != 7 {
		t.Errorf("%d documents, want 8:\n%s", n+1, out)
	}

	// JSON: a list of results.
	out, err = run(t, "interpret", "-f", f["ric.yaml"], "--desired", f["desired.yaml"], "--observed", f["observed.yaml"], "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var results []interpretResult
	if err := json.Unmarshal([]byte(out), &results); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var ops []string
	for _, r := range results {
		ops = append(ops, r.Operation+"/"+r.Skipped)
	}
	want := []string{"InterpretReplica/", "InterpretComponent/", "ReviseReplica/needs --desired-replica",
		"Retain/", "InterpretStatus/", "InterpretHealth/",
		"InterpretDependency/", "AggregateStatus/"}
	if diff := cmp.Diff(want, ops); diff != "" {
		t.Errorf("JSON results (-want +got):\n%s", diff)
	}
}

// A failing script: the error names the customization, the operation and the line; running
// every operation prints the others and exits non-zero.
func TestInterpretFailures(t *testing.T) {
	failing := strings.Replace(testCustomization, "return observedObj.status.readyReplicas == observedObj.spec.replicas",
		"return observedObj.status.missing.ready", 1)
	f := files(t, "ric.yaml", failing, "desired.yaml", testDesired, "observed.yaml", testObserved)
	_, err := run(t, "interpret", "-f", f["ric.yaml"], "--operation", "InterpretHealth", "--observed", f["observed.yaml"])
	wantError(t, err, `customization "deployments", healthInterpretation (InterpretHealth)`, "line 2:", "attempt to index")

	out, err := run(t, "interpret", "-f", f["ric.yaml"], "--desired", f["desired.yaml"], "--observed", f["observed.yaml"])
	wantError(t, err, "InterpretHealth failed (see above)")
	if !strings.Contains(out, "# error: customization \"deployments\", healthInterpretation (InterpretHealth)") || !strings.Contains(out, "readyReplicas: 3") {
		t.Errorf("output:\n%s", out)
	}
}

func TestInterpretCheck(t *testing.T) {
	bad := `apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterCustomization
metadata:
  name: broken
spec:
  target: {apiVersion: example.com/v1, kind: App}
  customizations:
    healthInterpretation:
      luaScript: |
        function InterpretHealth(obj)
          return obj.status.ready ==
        end
    retention:
      luaScript: |
        function Retained(d, o) return d end
`
	shadow := `apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterCustomization
metadata:
  name: zz-second
spec:
  target: {apiVersion: apps/v1, kind: Deployment}
  customizations:
    retention:
      luaScript: "function Retain(d, o) return d end"
`
	f := files(t, "good.yaml", testCustomization, "bad.yaml", bad, "both.yaml", testCustomization+"---\n"+shadow)

	out, err := run(t, "interpret", "-f", f["good.yaml"], "--check")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := `customization "deployments" (apps/v1 Deployment): OK: replicaResource (GetReplicas), componentResource (GetComponents), replicaRevision (ReviseReplica), retention (Retain), statusReflection (ReflectStatus), healthInterpretation (InterpretHealth), dependencyInterpretation (GetDependencies), statusAggregation (AggregateStatus)
  warning: replicaResource and componentResource are both set; Karmada documents them as mutually exclusive
`
	if out != want {
		t.Errorf("--check output:\n%s\nwant:\n%s", out, want)
	}

	out, err = run(t, "interpret", "-f", f["bad.yaml"], "--check")
	wantError(t, err, "1 of 1 customizations failed the check")
	for _, w := range []string{
		`customization "broken" (example.com/v1 App): errors:`,
		"retention: the script does not define function Retain",
		"healthInterpretation: line 3 (column 3) near 'end': syntax error",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("--check output lacks %q:\n%s", w, out)
		}
	}

	out, err = run(t, "interpret", "-f", f["both.yaml"], "-f", f["bad.yaml"], "--check")
	wantError(t, err, "1 of 3 customizations failed the check")
	if !strings.Contains(out, `customization "zz-second" (apps/v1 Deployment): OK: retention (Retain)
  warning: retention is also scripted by "deployments", which serves it (the first by name)`) {
		t.Errorf("--check output lacks the shadowing warning:\n%s", out)
	}

	// A customization from stdin.
	root := newRootCommand()
	var buf bytes.Buffer
	root.SetOut(&buf)
	root.SetErr(&buf)
	root.SetIn(strings.NewReader(testCustomization))
	root.SetArgs([]string{"interpret", "-f", "-", "--check"})
	if err := root.Execute(); err != nil || !strings.HasPrefix(buf.String(), `customization "deployments"`) {
		t.Errorf("--check from stdin: %v\n%s", err, buf.String())
	}
}

func TestInterpretArgumentErrors(t *testing.T) {
	f := files(t, "ric.yaml", testCustomization, "desired.yaml", testDesired, "pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n",
		"two.yaml", testDesired+"---\n"+testObserved, "notric.yaml", testDesired)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"interpret", "-f", f["ric.yaml"], "--operation", "Explode", "--desired", f["desired.yaml"]}, `unknown operation "Explode"`},
		{[]string{"interpret", "-f", f["ric.yaml"]}, "give the object to interpret: --desired-file or --observed-file"},
		{[]string{"interpret", "-f", f["ric.yaml"], "--desired", f["pod.yaml"]}, "no customization in " + f["ric.yaml"] + " targets v1 Pod"},
		{[]string{"interpret", "-f", f["ric.yaml"], "--desired", f["two.yaml"]}, "want one object, found 2 documents"},
		{[]string{"interpret", "-f", f["notric.yaml"], "--check"}, "is a apps/v1 Deployment, not a config.karmada.io/v1alpha1 ResourceInterpreterCustomization"},
		{[]string{"interpret", "-f", f["ric.yaml"], "--check", "--operation", "Retain"}, "--check takes only the customizations"},
		{[]string{"interpret", "-f", f["ric.yaml"], "--desired", f["desired.yaml"], "-o", "table"}, `unknown output format "table"`},
		{[]string{"interpret", "-f", f["ric.yaml"], "--operation", "ReviseReplica", "--desired", f["desired.yaml"]}, "ReviseReplica: needs --desired-replica"},
		{[]string{"interpret", "-f", f["ric.yaml"], "--operation", "Retain", "--desired", f["desired.yaml"]}, "Retain: needs --desired-file and --observed-file"},
		{[]string{"interpret", "-f", f["ric.yaml"], "--operation", "AggregateStatus", "--desired", f["desired.yaml"], "--status", f["desired.yaml"]}, "--status-file"},
		{[]string{"interpret", "-f", filepath.Join(t.TempDir(), "missing.yaml"), "--check"}, "no such file"},
		{[]string{"interpret", "-f", "-", "--desired", "-"}, "only one file can be - (stdin)"},
		{[]string{"interpret", "extra"}, `unknown command "extra"`},
	} {
		_, err := run(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.args[1:], err, tc.want)
		}
	}
}

func TestInterpretHelp(t *testing.T) {
	out, err := run(t, "interpret", "--help")
	for _, want := range []string{"kubectl flotilla interpret -f customization.yaml --check", "--operation string",
		"--desired-file string", "--observed-file string", "--status-file string", "--desired-replica int", "--check", "InterpretComponent (GetComponents)"} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("interpret --help lacks %q: %v", want, err)
		}
	}
}

func TestInterpretCompletion(t *testing.T) {
	out, err := run(t, "__complete", "interpret", "--operation", "")
	if err != nil || !strings.Contains(out, "InterpretComponent\tGetComponents") || !strings.Contains(out, "AggregateStatus") {
		t.Errorf("__complete interpret --operation: %v\n%s", err, out)
	}
}

func TestParseOperation(t *testing.T) {
	for _, tc := range []struct {
		name string
		want interpreter.Operation
	}{
		{"InterpretReplica", interpreter.OperationGetReplicas},
		{"interpretreplica", interpreter.OperationGetReplicas},
		{"GetReplicas", interpreter.OperationGetReplicas},
		{"replicaResource", interpreter.OperationGetReplicas},
		{"InterpretComponent", interpreter.OperationGetComponents},
		{"GetComponents", interpreter.OperationGetComponents},
		{"componentResource", interpreter.OperationGetComponents},
		{"ReviseReplica", interpreter.OperationReviseReplica},
		{"Retain", interpreter.OperationRetain},
		{"retention", interpreter.OperationRetain},
		{"InterpretStatus", interpreter.OperationReflectStatus},
		{"ReflectStatus", interpreter.OperationReflectStatus},
		{"InterpretHealth", interpreter.OperationInterpretHealth},
		{"InterpretDependency", interpreter.OperationInterpretDependency},
		{"GetDependencies", interpreter.OperationInterpretDependency},
		{"AggregateStatus", interpreter.OperationAggregateStatus},
		{"statusAggregation", interpreter.OperationAggregateStatus},
	} {
		got, err := parseOperation(tc.name)
		if err != nil || got.op != tc.want {
			t.Errorf("parseOperation(%q) = %v, %v; want %s", tc.name, got.op, err, tc.want)
		}
	}
	for _, bad := range []string{"", "Interpret", "Replica", "GetReplica"} {
		if _, err := parseOperation(bad); err == nil {
			t.Errorf("parseOperation(%q) found an operation", bad)
		}
	}
	// Every operation the engine knows can be named.
	for _, op := range interpreter.Operations {
		if _, err := parseOperation(string(op)); err != nil {
			t.Errorf("operation %s cannot be named: %v", op, err)
		}
	}
}

func TestDecodeCustomizations(t *testing.T) {
	list := `apiVersion: v1
kind: List
items:
- apiVersion: config.karmada.io/v1alpha1
  kind: ResourceInterpreterCustomization
  metadata: {name: a}
  spec: {target: {apiVersion: v1, kind: Pod}, customizations: {retention: {luaScript: "function Retain(d, o) return d end"}}}
- apiVersion: config.karmada.io/v1alpha1
  kind: ResourceInterpreterCustomization
  metadata: {name: b}
  spec: {target: {apiVersion: v1, kind: Pod}, customizations: {retention: {luaScript: "function Retain(d, o) return d end"}}}
`
	for _, tc := range []struct {
		name, in  string
		wantNames []string
		wantErr   string
	}{
		{name: "one", in: testCustomization, wantNames: []string{"deployments"}},
		{name: "documents, empty ones skipped", in: "---\n" + testCustomization + "---\n---\n" + strings.Replace(testCustomization, "name: deployments", "name: other", 1), wantNames: []string{"deployments", "other"}},
		{name: "a List", in: list, wantNames: []string{"a", "b"}},
		{name: "JSON", in: `{"apiVersion":"config.karmada.io/v1alpha1","kind":"ResourceInterpreterCustomization","metadata":{"name":"j"},"spec":{"target":{"apiVersion":"v1","kind":"Pod"},"customizations":{}}}`, wantNames: []string{"j"}},
		{name: "nothing", in: "# just a comment\n", wantErr: "no ResourceInterpreterCustomization in it"},
		{name: "another kind", in: testDesired, wantErr: "document 1 is a apps/v1 Deployment"},
		{name: "a misspelt field", in: strings.Replace(testCustomization, "luaScript", "luaScripts", 1), wantErr: `document 1: error unmarshaling JSON: while decoding JSON: json: unknown field "luaScripts"`},
		{name: "no name", in: strings.Replace(testCustomization, "name: deployments", "labels: {}", 1), wantErr: "document 1: the customization has no name"},
		{name: "not YAML", in: "a: [", wantErr: "document 1"},
		{name: "a List of something else", in: "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: p}}\n", wantErr: "document 1, item 1 is a v1 Pod"},
	} {
		got, err := decodeCustomizations([]byte(tc.in))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var names []string
		for _, r := range got {
			names = append(names, r.Name)
		}
		if diff := cmp.Diff(tc.wantNames, names); diff != "" {
			t.Errorf("%s: names (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestDecodeStatusItems(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string // clusterName/raw status
		wantErr  string
	}{
		{name: "documents", in: testStatus, want: []string{`member1/{"replicas":1}`, `member2/{"replicas":2}`}},
		{name: "a list", in: "- {clusterName: a, status: {ready: true}}\n- {clusterName: b}\n", want: []string{`a/{"ready":true}`, "b/"}},
		{name: "a JSON list", in: `[{"clusterName":"a","applied":true}]`, want: []string{"a/"}},
		{name: "none", in: "", want: nil},
		{name: "no clusterName", in: "status: {a: 1}\n", wantErr: "item 1 has no clusterName"},
		{name: "a status that is not an object", in: "clusterName: a\nstatus: [1]\n", wantErr: "item 1 (a): the status is not an object"},
		{name: "a misspelt field", in: "clusterName: a\nstatuses: {}\n", wantErr: `unknown field "statuses"`},
	} {
		got, err := decodeStatusItems([]byte(tc.in))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var items []string
		for _, it := range got {
			s := it.ClusterName + "/"
			if it.Status != nil {
				s += string(it.Status.Raw)
			}
			items = append(items, s)
		}
		if diff := cmp.Diff(tc.want, items); diff != "" {
			t.Errorf("%s: items (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestDecodeObject(t *testing.T) {
	obj, err := decodeObject([]byte(testDesired))
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := obj.Object["spec"].(map[string]any)["replicas"].(int64); !ok || r != 3 {
		t.Errorf("spec.replicas = %#v, want int64 3", obj.Object["spec"].(map[string]any)["replicas"])
	}
	for in, want := range map[string]string{
		"":                           "want one object, found 0 documents",
		"kind: Pod\n":                "the object has no apiVersion or kind",
		"apiVersion: a/b/c\nkind: X": "unexpected GroupVersion string",
		"[1, 2]":                     "cannot unmarshal",
	} {
		if _, err := decodeObject([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("decodeObject(%q) = %v, want an error containing %q", in, err, want)
		}
	}
}

// FuzzInterpretDecoders: the decoders of the interpret command's files never panic.
func FuzzInterpretDecoders(f *testing.F) {
	for _, seed := range []string{testCustomization, testDesired, testStatus, "- {clusterName: a}\n", "apiVersion: v1\nkind: List\nitems: [1]\n", "---\n---", "a: [", "{}"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		_, _ = decodeCustomizations([]byte(in))
		_, _ = decodeObject([]byte(in))
		_, _ = decodeStatusItems([]byte(in))
	})
}

// testInterpretFromHost runs interpret with the customizations of the shared host (see
// TestFleetCommands).
func testInterpretFromHost(t *testing.T) {
	ctx := context.Background()
	var ric configv1alpha1.ResourceInterpreterCustomization
	if err := yaml.UnmarshalStrict([]byte(testCustomization), &ric); err != nil {
		t.Fatal(err)
	}
	ric.ObjectMeta = metav1.ObjectMeta{Name: "from-host"}
	if err := hostC.Create(ctx, &ric); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hostC.Delete(ctx, &ric) })
	f := files(t, "desired.yaml", testDesired)

	out, err := runHost(t, "interpret", "--operation", "InterpretReplica", "--desired", f["desired.yaml"])
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if diff := cmp.Diff(yamlOf(t, `{replicas: 3, replicaRequirements: {namespace: shop, resourceRequest: {cpu: 100m}}}`), yamlOf(t, out)); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	out, err = runHost(t, "interpret", "--check")
	if err != nil || !strings.Contains(out, `customization "from-host" (apps/v1 Deployment): OK`) {
		t.Errorf("--check of the host's customizations: %v\n%s", err, out)
	}
}

func wantError(t *testing.T, err error, wants ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one saying %q", wants)
	}
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}

func TestInterpretBuiltin(t *testing.T) {
	out, err := run(t, "interpret", "--builtin", "--check")
	if err != nil {
		t.Fatalf("the built-in interpreters fail their check: %v\n%s", err, out)
	}
	if !strings.Contains(out, `"flotilla-builtin-kruise-cloneset" (apps.kruise.io/v1alpha1 CloneSet): OK`) {
		t.Errorf("no CloneSet in the built-ins' check:\n%s", out)
	}
	cloneSet := files(t, "cs.yaml", `apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata: {name: web, namespace: shop}
spec:
  replicas: 5
  template:
    spec:
      containers: [{name: app, image: nginx, resources: {requests: {cpu: 100m}}}]
`)
	out, err = run(t, "interpret", "--builtin", "--operation", "GetReplicas", "--desired-file", cloneSet["cs.yaml"])
	if err != nil || !strings.Contains(out, "replicas: 5") {
		t.Errorf("GetReplicas of a CloneSet with the built-ins: %v\n%s", err, out)
	}
	if _, err := run(t, "interpret", "--builtin", "-f", cloneSet["cs.yaml"], "--check"); err == nil || !strings.Contains(err.Error(), "give one") {
		t.Errorf("--builtin with -f: %v", err)
	}
}
