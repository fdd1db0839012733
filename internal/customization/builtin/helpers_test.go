package builtin

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/customization"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// store is a customization store with every built-in in use.
func store(t testing.TB) *customization.Store {
	t.Helper()
	s := customization.NewStore(customization.Options{})
	if err := Load(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// object decodes a YAML object as the apiserver's JSON would: integers as int64.
func object(t testing.TB, text string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(text), &m); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(m)
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		t.Fatal(err)
	}
	return u
}

// builtinFor is the built-in customization of obj's kind.
func builtinFor(t testing.TB, obj *unstructured.Unstructured) interpreter.Customization {
	t.Helper()
	c, ok := store(t).Lookup(obj.GroupVersionKind())
	if !ok {
		t.Fatalf("%s has no built-in", obj.GroupVersionKind())
	}
	return c
}

// ops checks which operations c serves.
func ops(t testing.TB, c interpreter.Customization, want ...interpreter.Operation) {
	t.Helper()
	for _, op := range interpreter.Operations {
		if c.Has(op) != slices.Contains(want, op) {
			t.Errorf("Has(%s) = %v", op, c.Has(op))
		}
	}
}

// items are member statuses as ReflectStatus makes them, by cluster name; a nil object has no
// status.
func items(t testing.TB, c interpreter.Customization, members map[string]*unstructured.Unstructured) []workv1alpha2.AggregatedStatusItem {
	t.Helper()
	var names []string
	for name := range members {
		names = append(names, name)
	}
	slices.Sort(names)
	var out []workv1alpha2.AggregatedStatusItem
	for _, name := range names {
		item := workv1alpha2.AggregatedStatusItem{ClusterName: name, Applied: true, Health: workv1alpha1.ResourceHealthy}
		if obj := members[name]; obj != nil {
			raw, err := c.ReflectStatus(obj)
			if err != nil {
				t.Fatal(err)
			}
			item.Status = raw
		}
		out = append(out, item)
	}
	return out
}

// members is a shorthand for items' map.
type members = map[string]*unstructured.Unstructured

// reflected is ReflectStatus's result, decoded.
func reflected(t testing.TB, c interpreter.Customization, obj *unstructured.Unstructured) map[string]any {
	t.Helper()
	raw, err := c.ReflectStatus(obj)
	if err != nil {
		t.Fatal(err)
	}
	if raw == nil {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw.Raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func quantities(q map[string]string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range q {
		out[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return out
}

// deps are references written "apiVersion kind namespace name" ("-" for no namespace).
func deps(refs ...string) []configv1alpha1.DependentObjectReference {
	var out []configv1alpha1.DependentObjectReference
	for _, r := range refs {
		f := strings.Fields(r)
		if f[2] == "-" {
			f[2] = ""
		}
		out = append(out, configv1alpha1.DependentObjectReference{APIVersion: f[0], Kind: f[1], Namespace: f[2], Name: f[3]})
	}
	return out
}

var quantityEqual = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

// healthCase changes a copy of an object and says whether it is then healthy.
type healthCase struct {
	name   string
	change func(u *unstructured.Unstructured)
	want   bool
}

func checkHealth(t *testing.T, c interpreter.Customization, obj *unstructured.Unstructured, cases []healthCase) {
	t.Helper()
	for _, h := range cases {
		o := obj.DeepCopy()
		if h.change != nil {
			h.change(o)
		}
		if got, err := c.InterpretHealth(o); err != nil || got != h.want {
			t.Errorf("InterpretHealth(%s) = %v, %v; want %v", h.name, got, err, h.want)
		}
	}
}

// set sets a field of u at a dotted path ("status.phase"); v nil removes it.
func set(u *unstructured.Unstructured, path string, v any) {
	f := strings.Split(path, ".")
	if v == nil {
		unstructured.RemoveNestedField(u.Object, f...)
		return
	}
	if err := unstructured.SetNestedField(u.Object, v, f...); err != nil {
		panic(err)
	}
}

// with returns a copy of u with fields set (path, value, path, value...).
func with(u *unstructured.Unstructured, kv ...any) *unstructured.Unstructured {
	o := u.DeepCopy()
	for i := 0; i < len(kv); i += 2 {
		set(o, kv[i].(string), kv[i+1])
	}
	return o
}

// condition returns the condition of the type in a status, nil if there is none.
func condition(status map[string]any, typ string) map[string]any {
	list, _ := status["conditions"].([]any)
	for _, c := range list {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}
