package cachetrim

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

// The samples in testdata are a binding, a Work and a member's Deployment as `make demo`
// left them (managedFields removed).
var samples = []string{"binding", "work", "member-deployment"}

func readSample(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var decoder = func() kruntime.Decoder {
	s := kruntime.NewScheme()
	_ = workv1alpha1.AddToScheme(s)
	_ = workv1alpha2.AddToScheme(s)
	return serializer.NewCodecFactory(s).UniversalDeserializer()
}()

// decode decodes a sample as its cache does: a member object as unstructured, the host's
// kinds typed.
func decode(t testing.TB, name string, raw []byte) client.Object {
	t.Helper()
	if name == "member-deployment" {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			t.Fatal(err)
		}
		return u
	}
	o, _, err := decoder.Decode(raw, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return o.(client.Object)
}

func transform(name string) func(any) (any, error) {
	if name == "member-deployment" {
		return MemberObject
	}
	return HostObject
}

// Interning changes no value: the transformed object equals the object trimmed alone.
func TestInterningChangesNoValue(t *testing.T) {
	for _, name := range samples {
		t.Run(name, func(t *testing.T) {
			raw := readSample(t, name)
			want := decode(t, name, raw)
			want.SetManagedFields(nil)
			if u, ok := want.(*unstructured.Unstructured); ok {
				trimSpec(u)
			}
			got, err := transform(name)(decode(t, name, raw))
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("the interned object differs:\n got %#v\nwant %#v", got, want)
			}
		})
	}
}

// Two objects decoded apart share the strings they repeat after the transform, and a copy a
// reader changes leaves the cached object alone.
func TestInternedStringsAreShared(t *testing.T) {
	raw := readSample(t, "work")
	a, _ := HostObject(decode(t, "work", raw))
	b, _ := HostObject(decode(t, "work", raw))
	wa, wb := a.(*workv1alpha1.Work), b.(*workv1alpha1.Work)
	same := func(what, x, y string) {
		t.Helper()
		if x != y || unsafe.StringData(x) != unsafe.StringData(y) {
			t.Errorf("%s: %q and %q are not one copy", what, x, y)
		}
	}
	for k := range wa.Labels {
		for k2 := range wb.Labels {
			if k == k2 {
				same("label key", k, k2)
			}
		}
		same("label "+k, wa.Labels[k], wb.Labels[k])
	}
	same("namespace", wa.Namespace, wb.Namespace)
	same("finalizer", wa.Finalizers[0], wb.Finalizers[0])
	same("condition message", wa.Status.Conditions[0].Message, wb.Status.Conditions[0].Message)
	same("manifest kind", wa.Status.ManifestStatuses[0].Identifier.Kind, wb.Status.ManifestStatuses[0].Identifier.Kind)

	u1, _ := MemberObject(decode(t, "member-deployment", readSample(t, "member-deployment")))
	u2, _ := MemberObject(decode(t, "member-deployment", readSample(t, "member-deployment")))
	m1, m2 := u1.(*unstructured.Unstructured), u2.(*unstructured.Unstructured)
	for k := range m1.Object {
		for k2 := range m2.Object {
			if k == k2 {
				same("field name", k, k2)
			}
		}
	}
	same("member annotation", m1.GetAnnotations()["flotilla.io/host-id"], m2.GetAnnotations()["flotilla.io/host-id"])

	c := wa.DeepCopy()
	c.Labels["karmada.io/managed"] = "false"
	c.Status.Conditions[0].Message = "changed"
	if wa.Labels["karmada.io/managed"] != "true" || wa.Status.Conditions[0].Message == "changed" {
		t.Error("changing a reader's copy changed the cached object")
	}
}

// Objects other than the ones interned field by field keep working: their metadata is
// interned, the rest left as decoded.
func TestHostObjectOtherKinds(t *testing.T) {
	p := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns",
		Labels: map[string]string{"a": "b"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}}
	out, err := HostObject(p)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*metav1.PartialObjectMetadata)
	if got.ManagedFields != nil || got.Labels["a"] != "b" || got.Namespace != "ns" {
		t.Errorf("got %+v", got.ObjectMeta)
	}
	if _, err := HostObject("not an object"); err != nil {
		t.Errorf("a value that is no object: %v", err)
	}
}

var uuid = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// variants returns n copies of raw that differ as objects of one fleet do: in their UIDs,
// permanent ids, names and resourceVersions.
func variants(raw []byte, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		j := 0
		b := uuid.ReplaceAllFunc(raw, func([]byte) []byte { j++; return fmt.Appendf(nil, "%08d-0000-4000-8000-%012d", i, j) })
		b = regexp.MustCompile(`"nginx([-a-z0-9]*)"`).ReplaceAll(b, fmt.Appendf(nil, `"nginx${1}-%d"`, i))
		out[i] = regexp.MustCompile(`"resourceVersion":"[0-9]+"`).ReplaceAll(b, fmt.Appendf(nil, `"resourceVersion":"%d"`, 1000+i))
	}
	return out
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkCachedBytes prints the heap a cached object takes, trimmed only and trimmed and
// interned, over 2,000 objects that differ in their ids and names. It also times the
// transform.
func BenchmarkCachedBytes(b *testing.B) {
	for _, name := range samples {
		raws := variants(readSample(b, name), 2000)
		for _, interned := range []bool{false, true} {
			label := "trimmed"
			if interned {
				label = "interned"
			}
			b.Run(name+"/"+label, func(b *testing.B) {
				var perObject uint64
				for b.Loop() {
					keep := make([]any, len(raws))
					before := liveHeap()
					for i, raw := range raws {
						o := decode(b, name, raw)
						switch {
						case interned:
							keep[i], _ = transform(name)(o)
						case name == "member-deployment":
							o.SetManagedFields(nil)
							trimSpec(o.(*unstructured.Unstructured))
							keep[i] = o
						default:
							o.SetManagedFields(nil)
							keep[i] = o
						}
					}
					perObject = (liveHeap() - before) / uint64(len(raws))
					runtime.KeepAlive(keep)
				}
				b.ReportMetric(float64(perObject), "B/cached-object")
			})
		}
	}
}

// BenchmarkTransform times the transforms on one object as a watch event brings it.
func BenchmarkTransform(b *testing.B) {
	for _, name := range samples {
		raw := readSample(b, name)
		b.Run(name, func(b *testing.B) {
			objs := make([]client.Object, 0, 1024)
			for b.Loop() {
				b.StopTimer()
				if len(objs) == 0 {
					for range cap(objs) {
						objs = append(objs, decode(b, name, raw))
					}
				}
				o := objs[len(objs)-1]
				objs = objs[:len(objs)-1]
				b.StartTimer()
				_, _ = transform(name)(o)
			}
		})
	}
}
