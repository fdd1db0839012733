package interpreter

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
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
		in.HasReplicas(obj)
		if deps, err := in.GetDependencies(obj); err == nil {
			for _, d := range deps {
				if d.Name == "" || d.Namespace != "ns" {
					t.Fatalf("GetDependencies() = %+v: a dependency without a name or in another namespace", d)
				}
			}
		}
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

// fuzzStatusKinds are the kinds whose aggregated status FuzzAggregateStatus checks against
// the apiserver's rules, with the smallest spec that decodes.
var fuzzStatusKinds = []struct{ apiVersion, kind, spec string }{
	{"apps/v1", "Deployment", `{replicas: 3}`},
	{"apps/v1", "StatefulSet", `{replicas: 3}`},
	{"apps/v1", "ReplicaSet", `{replicas: 3}`},
	{"apps/v1", "DaemonSet", `{}`},
	{"policy/v1", "PodDisruptionBudget", `{}`},
	{"batch/v1", "Job", `{managedBy: flotilla.io/template}`},
	{"batch/v1", "CronJob", `{schedule: "* * * * *"}`},
	{"v1", "PersistentVolumeClaim", `{accessModes: [ReadWriteOnce]}`},
}

// FuzzAggregateStatus aggregates arbitrary member statuses. It must not panic; it may fail
// only on a status that is not a JSON object; the same input must give the same output; and
// the output must be a status the apiserver accepts, written first on a new object and then
// again with the members' statuses rotated, aggregated onto the first (as the controller
// passes a Job's current status), and aggregating onto that must not change it.
func FuzzAggregateStatus(f *testing.F) {
	f.Add(uint8(0), int64(2), `{"generation":3,"observedGeneration":3,"resourceTemplateGeneration":2,"replicas":2,"readyReplicas":2,"availableReplicas":2,"updatedReplicas":2,"conditions":[{"type":"Available","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"}]}`,
		`{"replicas":-1,"readyReplicas":9,"conditions":[{"type":"Progressing","reason":"ProgressDeadlineExceeded"}]}`, ``, uint8(5), "denied")
	f.Add(uint8(5), int64(1), `{"active":2,"ready":3,"startTime":"2026-01-01T00:05:00Z"}`,
		`{"failed":3,"conditions":[{"type":"FailureTarget","status":"True","reason":"BackoffLimitExceeded","lastTransitionTime":"2026-01-01T00:06:00Z"},{"type":"Failed","status":"True"}]}`,
		`{"succeeded":2,"completionTime":"2026-01-01T00:01:00Z","conditions":[{"type":"SuccessCriteriaMet","status":"True"},{"type":"Complete","status":"True"}]}`, uint8(7), "")
	f.Add(uint8(5), int64(1), `{"succeeded":1,"startTime":"2026-01-01T00:09:00+02:00","completionTime":"2026-01-01T00:01:00.5Z","conditions":[{"type":"Complete","status":"True","lastTransitionTime":"x"}]}`,
		`{"terminating":2147483647,"conditions":[{"type":"SuccessCriteriaMet","status":"True"}]}`, `{"terminating":2147483647,"active":"1"}`, uint8(3), "")
	f.Add(uint8(4), int64(1), `{"conditions":[{"type":"DisruptionAllowed","status":"False","reason":"SyncFailed","lastTransitionTime":"2026-01-01T00:00:00Z"}]}`,
		`{"conditions":[{"type":"DisruptionAllowed","status":"True","reason":"!","lastTransitionTime":"2026-01-01T00:00:00Z"}]}`, `[]`, uint8(7), "")
	f.Add(uint8(6), int64(0), `{"lastScheduleTime":"2026-01-01T00:00:00-05:00","lastSuccessfulTime":"bad"}`, `{"phase":"Lost"}`, `{}`, uint8(1), "")
	f.Fuzz(func(t *testing.T, kind uint8, generation int64, s1, s2, s3 string, applied uint8, appliedMessage string) {
		k := fuzzStatusKinds[int(kind)%len(fuzzStatusKinds)]
		template := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": k.apiVersion, "kind": k.kind,
			"metadata": map[string]any{"name": "x", "uid": "t1", "generation": generation},
		}}
		full := template.DeepCopy()
		full.Object["spec"] = fromYAML(t, k.spec).Object
		itemsOf := func(statuses ...string) []workv1alpha2.AggregatedStatusItem {
			var items []workv1alpha2.AggregatedStatusItem
			for i, s := range statuses {
				it := workv1alpha2.AggregatedStatusItem{ClusterName: fmt.Sprintf("m%d", i), Applied: applied&(1<<i) != 0, AppliedMessage: appliedMessage}
				if s != "" {
					it.Status = &runtime.RawExtension{Raw: []byte(s)}
				}
				items = append(items, it)
			}
			return items
		}
		aggregate := func(prev map[string]any, items []workv1alpha2.AggregatedStatusItem) (map[string]any, bool) {
			tmpl := template.DeepCopy()
			if prev != nil {
				tmpl.Object["status"] = runtime.DeepCopyJSON(prev)
			}
			got, err := Interpreter{}.AggregateStatus(tmpl, items)
			if err != nil {
				for _, it := range items {
					var m map[string]any
					if it.Status != nil && utiljson.Unmarshal(it.Status.Raw, &m) != nil {
						return nil, false
					}
				}
				t.Fatalf("AggregateStatus failed on statuses that are JSON objects: %v", err)
			}
			again, _ := Interpreter{}.AggregateStatus(tmpl, items)
			if !equalJSON(got, again) {
				t.Fatalf("not deterministic:\n%v\n%v", got, again)
			}
			return got, true
		}
		first, ok := aggregate(nil, itemsOf(s1, s2, s3))
		if !ok {
			return
		}
		for _, e := range statusUpdateErrors(t, full, nil, first) {
			t.Fatalf("first status rejected: %s\n%v", e, first)
		}
		rotated := itemsOf(s2, s3, s1)
		second, _ := aggregate(first, rotated)
		for _, e := range statusUpdateErrors(t, full, first, second) {
			t.Fatalf("second status rejected: %s\nfirst:  %v\nsecond: %v", e, first, second)
		}
		if third, _ := aggregate(second, rotated); !equalJSON(second, third) {
			t.Fatalf("aggregating onto the result changed it:\n%v\n%v", second, third)
		}
	})
}
