package interpreter

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/flotilla-io/flotilla/api/wellknown"
)

// hostMetadataFields are filled in by the host apiserver; the member fills in its own.
var hostMetadataFields = []string{
	"uid", "resourceVersion", "generation", "managedFields", "ownerReferences", "finalizers",
	"creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink",
}

// hostAnnotations are written on the template by host tools and controllers, or by Flotilla
// when a policy claims the template.
var hostAnnotations = []string{
	"kubectl.kubernetes.io/last-applied-configuration",
	"deployment.kubernetes.io/revision",
	wellknown.PropagationPolicyNamespaceAnnotation,
	wellknown.PropagationPolicyNameAnnotation,
	wellknown.ClusterPropagationPolicyNameAnnotation,
}

// hostLabels are set on the template by Flotilla when a policy claims it.
var hostLabels = []string{
	wellknown.PropagationPolicyPermanentIDLabel,
	wellknown.ClusterPropagationPolicyPermanentIDLabel,
}

// pvcBinderAnnotations are written by the host's volume binder on a PersistentVolumeClaim.
var pvcBinderAnnotations = []string{
	"pv.kubernetes.io/bind-completed",
	"pv.kubernetes.io/bound-by-controller",
	"volume.beta.kubernetes.io/storage-provisioner",
	"volume.kubernetes.io/storage-provisioner",
	"volume.kubernetes.io/selected-node",
}

// JobManagedBy is the spec.managedBy the host gives held Jobs (a mutating admission policy
// sets it), so that the host's Job controller leaves them to Flotilla. Prune removes it: in a
// member the member's own Job controller must run the Job.
const JobManagedBy = wellknown.JobManagedBy

// jobGeneratedLabels are put on a Job's pod template with the selector the apiserver
// generates for it.
var jobGeneratedLabels = []string{
	"controller-uid", "batch.kubernetes.io/controller-uid", "job-name", "batch.kubernetes.io/job-name",
}

// Prune returns a copy of a template without the fields the host filled in, which must not
// reach a member: status; metadata uid, resourceVersion, generation, managedFields,
// ownerReferences, finalizers, creation and deletion timestamps, selfLink; the annotations
// kubectl's last-applied-configuration and deployment.kubernetes.io/revision; the labels and
// annotations by which a (Cluster)PropagationPolicy claims the template. And by kind:
//
//   - Service: spec.clusterIP and spec.clusterIPs (unless headless, "None"), every
//     ports[].nodePort and spec.healthCheckNodePort: the member allocates its own.
//   - Job whose selector was generated (spec.manualSelector not true): spec.selector and the
//     generated labels of the pod template (controller-uid, job-name and their
//     batch.kubernetes.io/ forms).
//   - Job: spec.managedBy when it is JobManagedBy, the host's hold; any other value is the
//     user's and stays. CronJob: the same for spec.jobTemplate.spec.managedBy.
//   - PersistentVolumeClaim: spec.volumeName and the host volume binder's annotations.
//   - Pod: spec.nodeName.
//
// Fields of an unexpected type are left alone; the member apiserver judges them.
func (Interpreter) Prune(obj *unstructured.Unstructured) *unstructured.Unstructured {
	out := obj.DeepCopy()
	unstructured.RemoveNestedField(out.Object, "status")
	for _, f := range hostMetadataFields {
		unstructured.RemoveNestedField(out.Object, "metadata", f)
	}
	deleteKeys(out.Object, hostAnnotations, "metadata", "annotations")
	deleteKeys(out.Object, hostLabels, "metadata", "labels")
	switch groupKind(obj) {
	case serviceKind:
		pruneService(out)
	case jobKind:
		pruneJob(out)
	case cronJobKind:
		pruneManagedBy(out, "spec", "jobTemplate", "spec", "managedBy")
	case pvcKind:
		unstructured.RemoveNestedField(out.Object, "spec", "volumeName")
		deleteKeys(out.Object, pvcBinderAnnotations, "metadata", "annotations")
	case podKind:
		unstructured.RemoveNestedField(out.Object, "spec", "nodeName")
	}
	return out
}

func pruneService(svc *unstructured.Unstructured) {
	if !isHeadless(svc) {
		unstructured.RemoveNestedField(svc.Object, "spec", "clusterIP")
		unstructured.RemoveNestedField(svc.Object, "spec", "clusterIPs")
	}
	unstructured.RemoveNestedField(svc.Object, "spec", "healthCheckNodePort")
	ports, _, _ := nestedSlice(svc.Object, "spec", "ports")
	for _, p := range ports {
		if port, ok := p.(map[string]any); ok {
			delete(port, "nodePort")
		}
	}
}

// isHeadless reports whether a Service asks for no cluster IP.
func isHeadless(svc *unstructured.Unstructured) bool {
	if ip, _, _ := nestedString(svc.Object, "spec", "clusterIP"); ip == "None" {
		return true
	}
	ips, _, _ := nestedSlice(svc.Object, "spec", "clusterIPs")
	return len(ips) > 0 && ips[0] == "None"
}

func pruneJob(job *unstructured.Unstructured) {
	pruneManagedBy(job, "spec", "managedBy")
	if manual, _, _ := unstructured.NestedBool(job.Object, "spec", "manualSelector"); manual {
		return
	}
	unstructured.RemoveNestedField(job.Object, "spec", "selector")
	deleteKeys(job.Object, jobGeneratedLabels, "spec", "template", "metadata", "labels")
}

// pruneManagedBy removes the managedBy field at path when it is the host's hold.
func pruneManagedBy(obj *unstructured.Unstructured, path ...string) {
	if v, _, _ := unstructured.NestedFieldNoCopy(obj.Object, path...); v == JobManagedBy {
		unstructured.RemoveNestedField(obj.Object, path...)
	}
}

// deleteKeys deletes keys from the map at path, and the map itself when it is left empty.
func deleteKeys(obj map[string]any, keys []string, path ...string) {
	m, found, err := nestedMap(obj, path...)
	if err != nil || !found {
		return
	}
	for _, k := range keys {
		delete(m, k)
	}
	if len(m) == 0 {
		unstructured.RemoveNestedField(obj, path...)
	}
}

// Retain returns a copy of desired, the manifest about to be applied to a member, with the
// fields the member filled in on observed, the live member object, that desired does not
// set:
//
//   - Service: spec.clusterIP and spec.clusterIPs (not for type ExternalName),
//     ports[].nodePort matched by port and protocol (types NodePort and LoadBalancer), and
//     spec.healthCheckNodePort (type LoadBalancer): allocated by the member, immutable or
//     better kept stable.
//   - PersistentVolumeClaim: spec.volumeName, the volume the member bound.
//   - Deployment, StatefulSet, ReplicaSet and other kinds with an integer spec.replicas:
//     the member's spec.replicas, when desired carries the label
//     resourcetemplate.karmada.io/retain-replicas: "true" (an HPA in the member owns them).
//
// A kind whose customization scripts retention gets what the script returns instead.
//
// Manifests are applied with server-side apply, which leaves fields alone that the manifest
// does not set; Retain matters for the fields that the manifest would otherwise set to a
// different value. A nil observed returns a copy of desired. The error reports a field of
// the wrong type.
func (i Interpreter) Retain(desired, observed *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	out := desired.DeepCopy()
	if observed == nil {
		return out, nil
	}
	if c, ok := i.custom(desired, OperationRetain); ok {
		out, err := c.Retain(out, observed.DeepCopy())
		if err == nil && out == nil {
			err = errors.New("the customization's Retain returned no object")
		}
		return out, err
	}
	var err error
	switch gk := groupKind(desired); gk {
	case serviceKind:
		err = retainService(out, observed)
	case pvcKind:
		err = retainIfUnset(out, observed, "spec", "volumeName")
	default:
		if desired.GetLabels()[wellknown.RetainReplicasLabel] == "true" && hasReplicasField(gk) {
			err = retainReplicas(out, observed)
		}
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// hasReplicasField reports whether the kind's replica count is spec.replicas: the built-in
// workloads with replicas, and any kind the interpreter does not know.
func hasReplicasField(gk schema.GroupKind) bool {
	switch gk {
	case deploymentKind, statefulSetKind, replicaSetKind:
		return true
	}
	return !builtin(gk)
}

func retainReplicas(desired, observed *unstructured.Unstructured) error {
	n, found, err := nestedInt64(observed.Object, "spec", "replicas")
	if err != nil || !found {
		return err
	}
	return setNested(desired, n, "spec", "replicas")
}

func retainService(desired, observed *unstructured.Unstructured) error {
	svcType, _, err := nestedString(desired.Object, "spec", "type")
	if err != nil {
		return err
	}
	if svcType == "ExternalName" {
		return nil
	}
	for _, f := range []string{"clusterIP", "clusterIPs"} {
		if err := retainIfUnset(desired, observed, "spec", f); err != nil {
			return err
		}
	}
	if svcType == "LoadBalancer" {
		if err := retainIfUnset(desired, observed, "spec", "healthCheckNodePort"); err != nil {
			return err
		}
	}
	if svcType == "NodePort" || svcType == "LoadBalancer" {
		return retainNodePorts(desired, observed)
	}
	return nil
}

// retainNodePorts gives each desired port without a nodePort the one the member allocated
// for the same port and protocol.
func retainNodePorts(desired, observed *unstructured.Unstructured) error {
	want, _, err := nestedSlice(desired.Object, "spec", "ports")
	if err != nil {
		return err
	}
	have, _, err := nestedSlice(observed.Object, "spec", "ports")
	if err != nil {
		return err
	}
	allocated := map[portKey]any{}
	for _, p := range have {
		if m, ok := p.(map[string]any); ok && m["nodePort"] != nil {
			allocated[keyOf(m)] = m["nodePort"]
		}
	}
	for i, p := range want {
		m, ok := p.(map[string]any)
		if !ok {
			return fmt.Errorf("spec.ports[%d]: want an object, got %s", i, describe(p))
		}
		if _, set := m["nodePort"]; set {
			continue
		}
		if np, ok := allocated[keyOf(m)]; ok {
			m["nodePort"] = np
		}
	}
	return nil
}

// portKey identifies a Service port: its number and protocol, unique within a Service.
type portKey struct {
	port     int64
	protocol string
}

func keyOf(port map[string]any) portKey {
	protocol, _ := port["protocol"].(string)
	if protocol == "" {
		protocol = "TCP"
	}
	n, _, _ := nestedInt64(port, "port")
	return portKey{port: n, protocol: protocol}
}

// retainIfUnset copies the field at path from observed when desired does not set it.
func retainIfUnset(desired, observed *unstructured.Unstructured, path ...string) error {
	if v, _, _ := unstructured.NestedFieldNoCopy(desired.Object, path...); !isUnset(v) {
		return nil
	}
	v, _, _ := unstructured.NestedFieldNoCopy(observed.Object, path...)
	if isUnset(v) {
		return nil
	}
	if err := unstructured.SetNestedField(desired.Object, v, path...); err != nil {
		return fmt.Errorf("%s: %w", strings.Join(path, "."), err)
	}
	return nil
}

// isUnset reports whether a field value is absent, null, an empty string or an empty list.
func isUnset(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	}
	return false
}
