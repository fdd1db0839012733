package cachetrim

import (
	"encoding/json"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/applied"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

func mustUnstructured(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(y)); err != nil {
		t.Fatal(err)
	}
	return u
}

const memberDeployment = `{"apiVersion":"apps/v1","kind":"Deployment",
 "metadata":{"name":"web","namespace":"default","uid":"u1","resourceVersion":"7","generation":2,
  "labels":{"app":"web","` + wellknown.ManagedLabel + `":"` + wellknown.ManagedLabelValue + `"},
  "annotations":{"` + wellknown.WorkNameAnnotation + `":"w","` + wellknown.WorkNamespaceAnnotation + `":"ns","` + wellknown.ResourceTemplateGenerationAnnotation + `":"3"},
  "managedFields":[{"manager":"flotilla","operation":"Apply","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}}}]},
 "spec":{"replicas":3,"paused":false,"selector":{"matchLabels":{"app":"web"}},"strategy":{"type":"RollingUpdate"},
  "template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"app","image":"nginx:1.27"}]}}},
 "status":{"observedGeneration":2,"replicas":3,"updatedReplicas":3,"readyReplicas":3,"availableReplicas":3,
  "conditions":[{"type":"Available","status":"True","reason":"MinimumReplicasAvailable","message":"ok"}]}}`

func TestMemberObjectDropsTemplatesKeepsWhatReadersRead(t *testing.T) {
	in := mustUnstructured(t, memberDeployment)
	whole := in.DeepCopy()
	out, err := MemberObject(in)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*unstructured.Unstructured)
	for _, f := range []string{"template", "selector", "strategy"} {
		if _, found, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", f); found {
			t.Errorf("spec.%s kept", f)
		}
	}
	if len(got.GetManagedFields()) != 0 {
		t.Error("managedFields kept")
	}
	// What the readers read is the same on the trimmed and the whole object: metadata, the
	// spec's scalars, the status, and the interpreter's health, reflected status and
	// retained fields.
	for _, path := range [][]string{{"metadata", "labels"}, {"metadata", "annotations"}, {"metadata", "uid"},
		{"metadata", "resourceVersion"}, {"metadata", "generation"}, {"spec", "replicas"}, {"spec", "paused"}, {"status"}} {
		a, _, _ := unstructured.NestedFieldNoCopy(whole.Object, path...)
		b, _, _ := unstructured.NestedFieldNoCopy(got.Object, path...)
		if !equality.Semantic.DeepEqual(a, b) {
			t.Errorf("%v: %v, want %v", path, b, a)
		}
	}
	var i interpreter.Interpreter
	if a, b := i.Health(whole), i.Health(got); a != b {
		t.Errorf("health %s, whole %s", b, a)
	}
	sa, err := i.ReflectStatus(whole)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := i.ReflectStatus(got)
	if err != nil {
		t.Fatal(err)
	}
	if string(sa.Raw) != string(sb.Raw) {
		t.Errorf("reflected status %s, whole %s", sb.Raw, sa.Raw)
	}
	desired := mustUnstructured(t, memberDeployment)
	desired.SetLabels(map[string]string{wellknown.RetainReplicasLabel: "true"})
	unstructured.SetNestedField(desired.Object, int64(5), "spec", "replicas")
	ra, err := i.Retain(desired, whole)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := i.Retain(desired, got)
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(ra.Object, rb.Object) {
		t.Errorf("retained %v, whole %v", rb.Object, ra.Object)
	}
}

func TestMemberObjectKinds(t *testing.T) {
	for _, tc := range []struct {
		apiVersion, kind string
		kept             []string // the maps and lists of the spec kept
	}{
		{"apps/v1", "Deployment", nil},
		{"apps/v1", "ReplicaSet", nil},
		{"apps/v1", "DaemonSet", []string{"updateStrategy"}},
		{"apps/v1", "StatefulSet", []string{"updateStrategy"}},
		{"batch/v1", "Job", nil},
		{"batch/v1", "CronJob", nil},
	} {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
			"replicas": int64(2), "schedule": "* * * * *", "template": map[string]any{}, "volumeClaimTemplates": []any{},
			"jobTemplate": map[string]any{}, "selector": map[string]any{"matchLabels": map[string]any{"a": "b"}},
			"updateStrategy": map[string]any{"type": "RollingUpdate"}}}}
		u.SetAPIVersion(tc.apiVersion)
		u.SetKind(tc.kind)
		if !Trimmed(u.GroupVersionKind().GroupKind()) {
			t.Errorf("%s: not Trimmed", tc.kind)
		}
		if _, err := MemberObject(u); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"replicas": int64(2), "schedule": "* * * * *"}
		for _, k := range tc.kept {
			want[k] = map[string]any{"type": "RollingUpdate"}
		}
		if got := u.Object["spec"]; !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("%s: spec %v, want %v", tc.kind, got, want)
		}
	}
}

// A StatefulSet's health reads its updateStrategy's partition: the trimmed object reads the
// same.
func TestMemberStatefulSetHealth(t *testing.T) {
	whole := mustUnstructured(t, `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"db","generation":4},
 "spec":{"replicas":3,"selector":{"matchLabels":{"app":"db"}},"serviceName":"db",
  "updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":2}},
  "template":{"metadata":{"labels":{"app":"db"}},"spec":{"containers":[{"name":"db","image":"postgres"}]}},
  "volumeClaimTemplates":[{"metadata":{"name":"data"}}]},
 "status":{"observedGeneration":4,"replicas":3,"readyReplicas":3,"availableReplicas":3,"updatedReplicas":1}}`)
	got, err := MemberObject(whole.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	var i interpreter.Interpreter
	if a, b := i.Health(whole), i.Health(got.(*unstructured.Unstructured)); a != b || a != "Healthy" {
		t.Errorf("health %s, whole %s (want Healthy: the partition holds the update back)", b, a)
	}
}

// Kinds other than the built-in workloads keep everything but managedFields: Services (the
// clusterIP and ports Retain keeps), claims, custom resources, and typed objects.
func TestMemberObjectLeavesOtherKinds(t *testing.T) {
	svc := mustUnstructured(t, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s","managedFields":[{"manager":"x"}]},
 "spec":{"type":"NodePort","clusterIP":"10.0.0.1","ports":[{"port":80,"nodePort":30080}],"template":{"x":1}}}`)
	want := svc.DeepCopy()
	want.SetManagedFields(nil)
	if _, err := MemberObject(svc); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(svc.Object, want.Object) {
		t.Errorf("Service changed: %v", svc.Object)
	}
	cr := mustUnstructured(t, `{"apiVersion":"example.io/v1","kind":"Deployment","metadata":{"name":"c"},"spec":{"template":{"a":1}}}`)
	if _, err := MemberObject(cr); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(cr.Object, "spec", "template"); !found {
		t.Error("a custom kind named Deployment lost its spec.template")
	}
	if Trimmed(schema.GroupKind{Group: "example.io", Kind: "Deployment"}) {
		t.Error("a custom kind is Trimmed")
	}
	typed := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "a"}}}}}}
	var obj runtime.Object = typed
	if _, err := MemberObject(obj); err != nil {
		t.Fatal(err)
	}
	if len(typed.Spec.Template.Spec.Containers) != 1 {
		t.Error("a typed object changed")
	}
}

func TestMemberObjectKeepsTheDigestOfFlotillasFields(t *testing.T) {
	const fields = `{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:replicas":{}}}`
	object := func(entries string) *unstructured.Unstructured {
		return mustUnstructured(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"app":"web"},
 "managedFields":[`+entries+`]},"spec":{"replicas":3}}`)
	}
	entry := func(manager, operation, apiVersion, subresource string) string {
		e := `{"manager":"` + manager + `","operation":"` + operation + `","apiVersion":"` + apiVersion + `","fieldsType":"FieldsV1","fieldsV1":` + fields
		if subresource != "" {
			e += `,"subresource":"` + subresource + `"`
		}
		return e + `}`
	}
	var v any
	if err := json.Unmarshal([]byte(fields), &v); err != nil {
		t.Fatal(err)
	}
	want := applied.OwnedDigest("apps/v1", v)
	cases := []struct {
		name, entries, want string
	}{
		{"Flotilla's apply, beside others", entry("kube-controller-manager", "Update", "apps/v1", "status") + "," + entry(wellknown.FieldManager, "Apply", "apps/v1", ""), want},
		{"Flotilla's update only", entry(wellknown.FieldManager, "Update", "apps/v1", ""), ""},
		{"Flotilla's apply of the status", entry(wellknown.FieldManager, "Apply", "apps/v1", "status"), ""},
		{"someone else's apply", entry("kubectl", "Apply", "apps/v1", ""), ""},
		{"no managedFields", "", ""},
	}
	for _, c := range cases {
		u := object(c.entries)
		if _, err := MemberObject(u); err != nil {
			t.Fatal(err)
		}
		if got := OwnedFields(u); got != c.want {
			t.Errorf("%s: OwnedFields = %q, want %q", c.name, got, c.want)
		}
		if len(u.GetManagedFields()) != 0 {
			t.Errorf("%s: managedFields kept", c.name)
		}
	}
}
