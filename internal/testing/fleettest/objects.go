package fleettest

import (
	"context"
	"reflect"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers/detector"
	"github.com/flotilla-io/flotilla/internal/bindings"
)

// Image is the container image of the test workloads.
const Image = "registry.k8s.io/pause:3.10"

// Deployment returns a Deployment of one container that requests 250m CPU and 64Mi memory
// per replica.
func Deployment(ns, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: Image,
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
					}}}}},
			},
		},
	}
}

// ConfigMap returns a ConfigMap holding data.
func ConfigMap(ns, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data:       data,
	}
}

// Work returns the Work that carries obj (which must have its TypeMeta set) to cluster, as
// the binding controller renders it: named after the object in the cluster's execution
// namespace, the manifest labelled karmada.io/managed=true and annotated with the Work's
// name, and with the execution controller's finalizer, which the binding controller sets on
// create.
func Work(cluster string, obj client.Object) *workv1alpha1.Work {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	Expect(err).NotTo(HaveOccurred())
	m := &unstructured.Unstructured{Object: u}
	unstructured.RemoveNestedField(m.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(m.Object, "status")
	w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{
		Namespace: wellknown.ExecutionNamespace(cluster),
		Name:      bindings.WorkName(m.GetKind(), m.GetNamespace(), m.GetName()),
		Labels:    map[string]string{wellknown.ManagedLabel: wellknown.ManagedLabelValue},
	}}
	controllerutil.AddFinalizer(w, wellknown.ExecutionControllerFinalizer)
	SetManifest(w, m)
	return w
}

// SetManifest makes m the Work's only manifest, labelled karmada.io/managed=true and
// annotated with the Work's namespace and name.
func SetManifest(w *workv1alpha1.Work, m *unstructured.Unstructured) {
	m = m.DeepCopy()
	labels := m.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[wellknown.ManagedLabel] = wellknown.ManagedLabelValue
	m.SetLabels(labels)
	ann := m.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[wellknown.WorkNamespaceAnnotation] = w.Namespace
	ann[wellknown.WorkNameAnnotation] = w.Name
	m.SetAnnotations(ann)
	raw, err := m.MarshalJSON()
	Expect(err).NotTo(HaveOccurred())
	w.Spec.Workload.Manifests = []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}
}

// Manifest decodes the Work's i-th manifest.
func Manifest(g Gomega, w *workv1alpha1.Work, i int) *unstructured.Unstructured {
	g.Expect(len(w.Spec.Workload.Manifests)).To(BeNumerically(">", i))
	u := &unstructured.Unstructured{}
	g.Expect(u.UnmarshalJSON(w.Spec.Workload.Manifests[i].Raw)).To(Succeed())
	return u
}

// Binding returns the binding the detector writes for a typed template: a ResourceBinding,
// or a ClusterResourceBinding for a cluster-scoped template, named <name>-<kind>, with a new
// permanent id and the binding controller's finalizer; and scheduled to clusters, as the
// scheduler would.
func (e *Env) Binding(tmpl client.Object, replicas int32, clusters ...workv1alpha2.TargetCluster) client.Object {
	gvk, err := apiutil.GVKForObject(tmpl, e.Scheme)
	Expect(err).NotTo(HaveOccurred())
	spec := workv1alpha2.ResourceBindingSpec{
		Resource: workv1alpha2.ObjectReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind,
			Namespace: tmpl.GetNamespace(), Name: tmpl.GetName(), UID: tmpl.GetUID()},
		Replicas: replicas,
		Clusters: clusters,
	}
	om := metav1.ObjectMeta{Namespace: tmpl.GetNamespace(), Name: detector.BindingName(gvk.Kind, tmpl.GetName()),
		Finalizers: []string{wellknown.BindingControllerFinalizer}}
	var rb client.Object
	if tmpl.GetNamespace() == "" {
		rb = &workv1alpha2.ClusterResourceBinding{ObjectMeta: om, Spec: spec}
	} else {
		rb = &workv1alpha2.ResourceBinding{ObjectMeta: om, Spec: spec}
	}
	rb.SetLabels(map[string]string{bindings.PermanentIDLabel(rb): string(uuid.NewUUID())})
	return rb
}

// Scheduled returns spec.clusters from cluster names and replicas: name, replicas, ...
func Scheduled(kv ...any) []workv1alpha2.TargetCluster {
	var out []workv1alpha2.TargetCluster
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, workv1alpha2.TargetCluster{Name: kv[i].(string), Replicas: int32(kv[i+1].(int))})
	}
	return out
}

// BindWork labels and annotates a Work as its binding's, as the binding controller does.
func BindWork(w *workv1alpha1.Work, rb client.Object) {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[bindings.WorkBindingLabel(rb)] = bindings.PermanentID(rb)
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	if rb.GetNamespace() == "" {
		w.Annotations[wellknown.ClusterResourceBindingNameAnnotation] = rb.GetName()
	} else {
		w.Annotations[wellknown.ResourceBindingNamespaceAnnotation] = rb.GetNamespace()
		w.Annotations[wellknown.ResourceBindingNameAnnotation] = rb.GetName()
	}
}

// PinnedClient reads Pinned, a copy each time, for its type and key, and everything else
// through Client: it stands in for a cache that has not caught up with a later change, or
// for one that holds an object the host does not.
type PinnedClient struct {
	client.Client
	Pinned client.Object
}

// Get reads Pinned for its type and key.
func (p *PinnedClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if reflect.TypeOf(obj) == reflect.TypeOf(p.Pinned) && key == client.ObjectKeyFromObject(p.Pinned) {
		reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(p.Pinned.DeepCopyObject()).Elem())
		return nil
	}
	return p.Client.Get(ctx, key, obj, opts...)
}
