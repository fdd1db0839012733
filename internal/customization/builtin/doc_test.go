package builtin

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// opOrder and opNames are the operations as docs/builtin-interpreters.md names them.
var opOrder = []interpreter.Operation{opReplicas, opRevise, opRetain, opReflect, opAgg, opHealth, opDeps}

var opNames = map[interpreter.Operation]string{
	opReplicas: "GetReplicas", opRevise: "ReviseReplica", opRetain: "Retain", opReflect: "ReflectStatus",
	opAgg: "AggregateStatus", opHealth: "InterpretHealth", opDeps: "GetDependencies",
}

// TestDocListsEveryBuiltin: docs/builtin-interpreters.md's table has a row for every
// built-in, "| apiVersion | Kind | operations | ... |", with the operations it serves.
func TestDocListsEveryBuiltin(t *testing.T) {
	raw, err := os.ReadFile("../../../docs/builtin-interpreters.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		key := strings.Trim(strings.TrimSpace(cells[1]), "`") + " " + strings.Trim(strings.TrimSpace(cells[2]), "`")
		documented[key] = strings.Join(strings.Fields(strings.ReplaceAll(cells[3], ",", " ")), " ")
	}
	rics, err := Customizations()
	if err != nil {
		t.Fatal(err)
	}
	s := store(t)
	served := map[string]string{}
	for _, r := range rics {
		c, _ := s.Lookup(schema.FromAPIVersionAndKind(r.Spec.Target.APIVersion, r.Spec.Target.Kind))
		var names []string
		for _, op := range opOrder {
			if c.Has(op) {
				names = append(names, opNames[op])
			}
		}
		served[r.Spec.Target.APIVersion+" "+r.Spec.Target.Kind] = strings.Join(names, " ")
	}
	if diff := cmp.Diff(served, documented); diff != "" {
		t.Errorf("docs/builtin-interpreters.md's table (+) differs from the built-ins (-):\n%s", diff)
	}
}

// TestEveryKindOfTheIssue: the kinds issue 35 asks for are all built in.
func TestEveryKindOfTheIssue(t *testing.T) {
	s := store(t)
	for _, k := range []string{
		"apps.kruise.io/v1alpha1 CloneSet", "apps.kruise.io/v1beta1 StatefulSet", "apps.kruise.io/v1alpha1 DaemonSet",
		"apps.kruise.io/v1alpha1 BroadcastJob", "apps.kruise.io/v1alpha1 AdvancedCronJob", "apps.kruise.io/v1alpha1 SidecarSet",
		"apps.kruise.io/v1alpha1 UnitedDeployment", "argoproj.io/v1alpha1 Workflow", "argoproj.io/v1alpha1 Rollout",
		"helm.toolkit.fluxcd.io/v2 HelmRelease", "kustomize.toolkit.fluxcd.io/v1 Kustomization", "source.toolkit.fluxcd.io/v1 GitRepository",
		"source.toolkit.fluxcd.io/v1 HelmRepository", "source.toolkit.fluxcd.io/v1 HelmChart", "source.toolkit.fluxcd.io/v1beta2 OCIRepository",
		"source.toolkit.fluxcd.io/v1beta2 Bucket", "kubeflow.org/v1 TFJob", "kubeflow.org/v1 PyTorchJob", "kubeflow.org/v2beta1 MPIJob",
		"kubeflow.org/v1 Notebook", "batch.volcano.sh/v1alpha1 Job", "flink.apache.org/v1beta1 FlinkDeployment", "ray.io/v1 RayCluster",
		"ray.io/v1 RayJob", "ray.io/v1 RayService", "sparkoperator.k8s.io/v1beta2 SparkApplication", "kyverno.io/v1 ClusterPolicy", "kyverno.io/v1 Policy",
	} {
		f := strings.Fields(k)
		if _, ok := s.Lookup(schema.FromAPIVersionAndKind(f[0], f[1])); !ok {
			t.Errorf("%s is not built in", k)
		}
	}
}

// TestDocOverrideExample: the doc's example customization loads and takes over the
// CloneSet's health from the built-in, and only that.
func TestDocOverrideExample(t *testing.T) {
	raw, err := os.ReadFile("../../../docs/builtin-interpreters.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	start := strings.Index(text, "```yaml\n")
	if start < 0 {
		t.Fatal("no YAML example in the doc")
	}
	text = text[start+len("```yaml\n"):]
	text = text[:strings.Index(text, "```")]
	ric := &configv1alpha1.ResourceInterpreterCustomization{}
	if err := yaml.UnmarshalStrict([]byte(text), ric); err != nil {
		t.Fatal(err)
	}
	s := store(t)
	cs := object(t, cloneSetYAML)
	set(cs, "status.updatedReplicas", int64(0)) // ready, not updated
	c, _ := s.Lookup(cs.GroupVersionKind())
	if h, _ := c.InterpretHealth(cs); h {
		t.Fatal("the built-in counts a CloneSet healthy whose replicas are not updated")
	}
	if err := s.Apply(ric); err != nil {
		t.Fatal(err)
	}
	c, _ = s.Lookup(cs.GroupVersionKind())
	if h, err := c.InterpretHealth(cs); err != nil || !h {
		t.Errorf("InterpretHealth with the example = %v, %v; want healthy", h, err)
	}
	if n, _, err := c.GetReplicas(cs); err != nil || n != 4 {
		t.Errorf("GetReplicas with the example = %v, %v; want the built-in's 4", n, err)
	}
}
