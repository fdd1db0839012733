package interpreter

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

// fuzzKinds are the kinds the fuzzer picks from: every built-in kind and a custom one.
var fuzzKinds = [][2]string{
	{"apps/v1", "Deployment"}, {"apps/v1", "StatefulSet"}, {"apps/v1", "ReplicaSet"}, {"apps/v1", "DaemonSet"},
	{"batch/v1", "Job"}, {"batch/v1", "CronJob"}, {"v1", "Pod"}, {"v1", "Service"},
	{"networking.k8s.io/v1", "Ingress"}, {"v1", "ConfigMap"}, {"v1", "Secret"}, {"v1", "PersistentVolumeClaim"},
	{"policy/v1", "PodDisruptionBudget"}, {"example.com/v1", "App"},
}

// jsonValue decodes s as JSON the way the apiserver would; text that is not JSON becomes a
// string, which is as odd a value as any.
func jsonValue(s string) any {
	var v any
	if err := utiljson.Unmarshal([]byte(s), &v); err != nil {
		return s
	}
	return v
}

// FuzzInterpreter builds objects of every kind with arbitrary spec and status values and
// calls every method: none may panic, and the invariants below must hold.
func FuzzInterpreter(f *testing.F) {
	f.Add(uint8(0), `{"replicas":"3"}`, `{"readyReplicas":1.5}`, int64(2), "2", int64(1))
	f.Add(uint8(4), `{"parallelism":2,"completions":5,"template":{"spec":{"containers":[{"resources":{"requests":{"cpu":"x"}}}]}}}`, `{"conditions":[1]}`, int64(1), "x", int64(3))
	f.Add(uint8(7), `{"type":"NodePort","clusterIP":1,"ports":[{"port":"a","nodePort":{}}]}`, `{"loadBalancer":{"ingress":"x"}}`, int64(0), "", int64(0))
	f.Add(uint8(13), `{"replicas":9}`, `{"observedGeneration":"1","conditions":[{"type":"Ready","status":true}]}`, int64(5), "5", int64(2))
	f.Add(uint8(6), `"spec"`, `[]`, int64(-1), "-1", int64(-5))
	f.Add(uint8(5), `{"jobTemplate":{"spec":{"template":{"spec":{"initContainers":[{"restartPolicy":"Always"}]}}}}}`, `{"lastScheduleTime":"yesterday"}`, int64(1), "1", int64(1))
	f.Fuzz(func(t *testing.T, kind uint8, spec, status string, generation int64, templateGeneration string, replicas int64) {
		gvk := fuzzKinds[int(kind)%len(fuzzKinds)]
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": gvk[0],
			"kind":       gvk[1],
			"metadata": map[string]any{
				"name": "x", "namespace": "ns", "generation": generation,
				"labels":      map[string]any{wellknown.RetainReplicasLabel: "true"},
				"annotations": map[string]any{wellknown.ResourceTemplateGenerationAnnotation: templateGeneration},
			},
			"spec":   jsonValue(spec),
			"status": jsonValue(status),
		}}
		pristine := obj.DeepCopy()
		var in Interpreter

		if n, _, err := in.GetReplicas(obj); err == nil && n < 0 {
			t.Fatalf("GetReplicas() = %d", n)
		}
		if out, err := in.ReviseReplicas(obj, replicas); (err == nil) == (out == nil) {
			t.Fatalf("ReviseReplicas() = %v, %v: want exactly one of them", out, err)
		}
		if pruned := in.Prune(obj); pruned.Object["status"] != nil || pruned.GetUID() != "" {
			t.Fatalf("Prune() left host fields: %v", pruned.Object)
		}
		if out, err := in.Retain(obj, pristine); (err == nil) == (out == nil) {
			t.Fatalf("Retain() = %v, %v: want exactly one of them", out, err)
		}
		in.Health(obj)
		raw, err := in.ReflectStatus(obj)
		if err != nil {
			raw = nil
		}
		items := []workv1alpha2.AggregatedStatusItem{{ClusterName: "m1", Applied: true, Status: raw}, {ClusterName: "m2"}}
		if _, err := in.AggregateStatus(obj, items); err != nil && raw != nil {
			t.Fatalf("AggregateStatus() rejected a status ReflectStatus produced: %v", err)
		}
		if !equalJSON(pristine.Object, obj.Object) {
			t.Fatalf("a method changed its input:\nbefore %v\nafter  %v", pristine.Object, obj.Object)
		}
	})
}

func equalJSON(a, b map[string]any) bool {
	ja, errA := utiljson.Marshal(a)
	jb, errB := utiljson.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}
