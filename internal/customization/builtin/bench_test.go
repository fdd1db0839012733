package builtin

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/customization"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// rollouts are n distinct Argo Rollouts: names, replicas, requests, environment, phases and
// counts all vary.
func rollouts(b *testing.B, n int) []*unstructured.Unstructured {
	base := object(b, rolloutYAML)
	out := make([]*unstructured.Unstructured, n)
	for i := range out {
		o := base.DeepCopy()
		o.SetName(fmt.Sprintf("web-%d", i))
		_ = unstructured.SetNestedField(o.Object, int64(i%20+1), "spec", "replicas")
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		c := containers[0].(map[string]any)
		c["resources"] = map[string]any{"requests": map[string]any{"cpu": fmt.Sprintf("%dm", 100+i), "memory": fmt.Sprintf("%dMi", 64+i%512)}}
		c["env"] = append(c["env"].([]any), map[string]any{"name": fmt.Sprintf("SHARD_%d", i), "value": fmt.Sprint(i)})
		_ = unstructured.SetNestedSlice(o.Object, containers, "spec", "template", "spec", "containers")
		_ = unstructured.SetNestedField(o.Object, int64(i%20), "status", "readyReplicas")
		_ = unstructured.SetNestedField(o.Object, []string{"Healthy", "Progressing", "Paused"}[i%3], "status", "phase")
		out[i] = o
	}
	return out
}

// interpretations runs fn on the i-th of the objects, round robin, and reports the time of
// one interpretation in µs.
func interpretations(b *testing.B, objs []*unstructured.Unstructured, fn func(*unstructured.Unstructured) error) {
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if err := fn(objs[i%len(objs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "µs/interpretation")
}

// BenchmarkGetReplicas: the built-in Argo Rollout customization's GetReplicas (with
// kube.accuratePodRequirements) over 1,000 distinct Rollouts.
func BenchmarkGetReplicas(b *testing.B) {
	objs := rollouts(b, 1000)
	c := builtinFor(b, objs[0])
	interpretations(b, objs, func(o *unstructured.Unstructured) error {
		_, _, err := c.GetReplicas(o)
		return err
	})
}

// BenchmarkInterpretHealth: the Rollout customization's InterpretHealth, same objects.
func BenchmarkInterpretHealth(b *testing.B) {
	objs := rollouts(b, 1000)
	c := builtinFor(b, objs[0])
	interpretations(b, objs, func(o *unstructured.Unstructured) error {
		_, err := c.InterpretHealth(o)
		return err
	})
}

// BenchmarkReflectStatus: the Rollout customization's ReflectStatus, same objects.
func BenchmarkReflectStatus(b *testing.B) {
	objs := rollouts(b, 1000)
	c := builtinFor(b, objs[0])
	interpretations(b, objs, func(o *unstructured.Unstructured) error {
		_, err := c.ReflectStatus(o)
		return err
	})
}

// BenchmarkGetReplicasMinimal: a one-line script on the same objects, to show the cost of a
// call apart from the script's work.
func BenchmarkGetReplicasMinimal(b *testing.B) {
	objs := rollouts(b, 1000)
	store := customization.NewStore(customization.Options{})
	ric := &configv1alpha1.ResourceInterpreterCustomization{Spec: configv1alpha1.ResourceInterpreterCustomizationSpec{
		Target: configv1alpha1.CustomizationTarget{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout"},
		Customizations: configv1alpha1.CustomizationRules{ReplicaResource: &configv1alpha1.ReplicaResourceRequirement{
			LuaScript: `function GetReplicas(o) return o.spec.replicas end`}},
	}}
	ric.Name = "min"
	if err := store.Apply(ric); err != nil {
		b.Fatal(err)
	}
	c, _ := store.Lookup(objs[0].GroupVersionKind())
	interpretations(b, objs, func(o *unstructured.Unstructured) error {
		_, _, err := c.GetReplicas(o)
		return err
	})
}

// BenchmarkGetReplicasNative: the interpreter's own GetReplicas of the same objects made
// Deployments, for comparison.
func BenchmarkGetReplicasNative(b *testing.B) {
	objs := rollouts(b, 1000)
	for _, o := range objs {
		o.SetAPIVersion("apps/v1")
		o.SetKind("Deployment")
	}
	var in interpreter.Interpreter
	interpretations(b, objs, func(o *unstructured.Unstructured) error {
		_, _, err := in.GetReplicas(o)
		return err
	})
}
