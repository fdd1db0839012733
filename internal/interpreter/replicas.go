package interpreter

import (
	"errors"
	"fmt"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	resourcehelper "k8s.io/component-helpers/resource"

	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/podspec"
)

// GetReplicas returns how many replicas a template asks for and what one replica needs:
//
//   - Deployment, StatefulSet, ReplicaSet: spec.replicas, 1 when unset.
//   - Job: spec.parallelism, 1 when unset: the pods that run at once.
//   - Pod: 1.
//   - DaemonSet, CronJob and the other built-in kinds: 0 and no requirements; they are not
//     divided between clusters.
//   - A kind whose customization scripts replicaResource: what the script returns.
//   - Any other kind, custom resources included: 0 and no requirements. The interpreter
//     does not know what their spec.replicas means (a 3-node database divided 1+1+1 is
//     three broken databases), so they are propagated whole to every cluster, as
//     Duplicated; HasReplicas says so.
//
// Requirements of the workloads above: the effective requests of one pod (containers summed,
// init containers and sidecars as the kube-scheduler counts them, overhead and pod-level
// resources included; a container's limit stands in for a request it does not set, as the
// apiserver defaults it), the node claim (nodeSelector, required node affinity,
// tolerations), the priority class and the namespace.
func (i Interpreter) GetReplicas(obj *unstructured.Unstructured) (int32, *workv1alpha2.ReplicaRequirements, error) {
	if c, ok := i.custom(obj, OperationGetReplicas); ok {
		n, req, err := c.GetReplicas(obj)
		if err == nil && n < 0 {
			err = fmt.Errorf("the customization's GetReplicas returned %d replicas; want 0 or more", n)
		}
		if err != nil {
			return 0, nil, err
		}
		return n, req, nil
	}
	switch gk := groupKind(obj); gk {
	case deploymentKind, statefulSetKind, replicaSetKind:
		return workloadReplicas(obj, gk, "spec", "replicas")
	case jobKind:
		return workloadReplicas(obj, gk, "spec", "parallelism")
	case podKind:
		req, err := replicaRequirements(obj, gk)
		if err != nil {
			return 0, nil, err
		}
		return 1, req, nil
	default:
		return 0, nil, nil
	}
}

// HasReplicas reports whether the interpreter knows the replicas of obj's kind, so that a
// Divided placement divides them: Deployment, StatefulSet, ReplicaSet, Job, Pod, and kinds
// whose customization scripts replicaResource. Other kinds go whole to every cluster.
func (i Interpreter) HasReplicas(obj *unstructured.Unstructured) bool {
	if _, ok := i.custom(obj, OperationGetReplicas); ok {
		return true
	}
	switch groupKind(obj) {
	case deploymentKind, statefulSetKind, replicaSetKind, jobKind, podKind:
		return true
	}
	return false
}

func workloadReplicas(obj *unstructured.Unstructured, gk schema.GroupKind, path ...string) (int32, *workv1alpha2.ReplicaRequirements, error) {
	n, found, err := nestedCount(obj.Object, path...)
	if err != nil {
		return 0, nil, err
	}
	if !found {
		n = 1
	}
	req, err := replicaRequirements(obj, gk)
	if err != nil {
		return 0, nil, err
	}
	return n, req, nil
}

// replicaRequirements reads what one pod of a workload needs from its pod spec.
func replicaRequirements(obj *unstructured.Unstructured, gk schema.GroupKind) (*workv1alpha2.ReplicaRequirements, error) {
	path := podspec.Path(gk)
	raw, found, err := nestedMap(obj.Object, path...)
	if err != nil {
		return nil, err
	}
	var spec corev1.PodSpec
	if found {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &spec); err != nil {
			return nil, fmt.Errorf("%s: %w", strings.Join(path, "."), err)
		}
	}
	return podSpecRequirements(&spec, obj.GetNamespace()), nil
}

// podSpecRequirements is what one pod of the spec needs.
func podSpecRequirements(spec *corev1.PodSpec, namespace string) *workv1alpha2.ReplicaRequirements {
	req := &workv1alpha2.ReplicaRequirements{
		Namespace:         namespace,
		PriorityClassName: spec.PriorityClassName,
		NodeClaim:         nodeClaim(spec),
	}
	if requests := podRequests(spec); len(requests) > 0 {
		req.ResourceRequest = requests
	}
	return req
}

// podRequests returns the requests of one pod as the kube-scheduler counts them. Templates
// are not defaulted like pods are, so a limit without a request stands in for the request
// first, as the apiserver would make it.
func podRequests(spec *corev1.PodSpec) corev1.ResourceList {
	for _, list := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
		for i := range list {
			defaultRequestsFromLimits(&list[i].Resources)
		}
	}
	if spec.Resources != nil {
		defaultRequestsFromLimits(spec.Resources)
	}
	return resourcehelper.PodRequests(&corev1.Pod{Spec: *spec}, resourcehelper.PodResourcesOptions{})
}

func defaultRequestsFromLimits(r *corev1.ResourceRequirements) {
	for name, limit := range r.Limits {
		if _, ok := r.Requests[name]; ok {
			continue
		}
		if r.Requests == nil {
			r.Requests = corev1.ResourceList{}
		}
		r.Requests[name] = limit.DeepCopy()
	}
}

// nodeClaim returns the pod's node constraints, nil when it has none.
func nodeClaim(spec *corev1.PodSpec) *workv1alpha2.NodeClaim {
	var hard *corev1.NodeSelector
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil {
		hard = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	if hard == nil && len(spec.NodeSelector) == 0 && len(spec.Tolerations) == 0 {
		return nil
	}
	return &workv1alpha2.NodeClaim{HardNodeAffinity: hard, NodeSelector: spec.NodeSelector, Tolerations: spec.Tolerations}
}

// ReviseReplicas returns a copy of obj that asks for the given replicas, a member cluster's
// share of the template's:
//
//   - Deployment, StatefulSet, ReplicaSet: spec.replicas.
//   - Job: spec.parallelism; spec.completions, when set, is scaled in proportion,
//     ceil(completions × replicas / parallelism), so the members together complete at least
//     as many pods as the template asks for. (An Indexed Job split this way runs the same
//     low indexes in every member; divide such Jobs with care.)
//   - A kind whose customization scripts replicaRevision: what the script returns. When
//     it scripts replicaResource only, spec.replicas if the object has it as an integer.
//   - Kinds without replicas (Pod, DaemonSet, CronJob, custom resources without a
//     customization, ...) are returned unchanged, so the caller need not know which kinds
//     have replicas.
//
// replicas must be in [0, 2^31-1].
func (i Interpreter) ReviseReplicas(obj *unstructured.Unstructured, replicas int64) (*unstructured.Unstructured, error) {
	if replicas < 0 || replicas > math.MaxInt32 {
		return nil, fmt.Errorf("replicas %d is out of range [0, %d]", replicas, math.MaxInt32)
	}
	if c, ok := i.custom(obj, OperationReviseReplica); ok {
		out, err := c.ReviseReplica(obj.DeepCopy(), replicas)
		if err == nil && out == nil {
			err = errors.New("the customization's ReviseReplica returned no object")
		}
		return out, err
	}
	out := obj.DeepCopy()
	if _, ok := i.custom(obj, OperationGetReplicas); ok {
		if _, found, err := nestedCount(out.Object, "spec", "replicas"); err != nil || !found {
			return out, err
		}
		return out, setNested(out, replicas, "spec", "replicas")
	}
	if err := reviseReplicas(out, replicas); err != nil {
		return nil, err
	}
	return out, nil
}

func reviseReplicas(obj *unstructured.Unstructured, replicas int64) error {
	switch groupKind(obj) {
	case deploymentKind, statefulSetKind, replicaSetKind:
		return setNested(obj, replicas, "spec", "replicas")
	case jobKind:
		return reviseJob(obj, replicas)
	default:
		return nil
	}
}

func reviseJob(job *unstructured.Unstructured, replicas int64) error {
	parallelism, found, err := nestedCount(job.Object, "spec", "parallelism")
	if err != nil {
		return err
	}
	if !found {
		parallelism = 1
	}
	completions, hasCompletions, err := nestedCount(job.Object, "spec", "completions")
	if err != nil {
		return err
	}
	if err := setNested(job, replicas, "spec", "parallelism"); err != nil {
		return err
	}
	if !hasCompletions || parallelism == 0 {
		return nil
	}
	scaled := (int64(completions)*replicas + int64(parallelism) - 1) / int64(parallelism)
	if scaled > math.MaxInt32 {
		return fmt.Errorf("spec.completions: scaling %d by %d/%d gives %d, above %d", completions, replicas, parallelism, scaled, math.MaxInt32)
	}
	return setNested(job, scaled, "spec", "completions")
}

// setNested sets an integer field, naming it in the error when a parent is not an object.
func setNested(obj *unstructured.Unstructured, v int64, path ...string) error {
	if err := unstructured.SetNestedField(obj.Object, v, path...); err != nil {
		return fmt.Errorf("%s: %w", strings.Join(path, "."), err)
	}
	return nil
}

// MaxComponents is how many components a workload may have, and MaxComponentName how long a
// component's name may be (the API's limits on a ResourceBinding's spec.components).
const (
	MaxComponents    = 32
	MaxComponentName = 32
)

// Components returns the components of a workload made of several pod templates (Karmada's
// multiple-pod-templates scheduling): for a kind whose customization scripts
// componentResource, what its GetComponents returns, each component with its name, its
// replicas and what one of its replicas needs. For every other kind it returns nil: the
// interpreter knows no built-in kind with components (HasComponents says so), and such
// kinds are interpreted by GetReplicas.
func (i Interpreter) Components(obj *unstructured.Unstructured) ([]workv1alpha2.Component, error) {
	c, ok := i.custom(obj, OperationGetComponents)
	if !ok {
		return nil, nil
	}
	components, err := c.GetComponents(obj)
	if err != nil {
		return nil, err
	}
	if err := CheckComponents(components); err != nil {
		return nil, fmt.Errorf("the customization's GetComponents: %w", err)
	}
	return components, nil
}

// HasComponents reports whether the interpreter knows the components of obj's kind: whether
// a customization scripts componentResource for it.
func (i Interpreter) HasComponents(obj *unstructured.Unstructured) bool {
	_, ok := i.custom(obj, OperationGetComponents)
	return ok
}

// CheckComponents checks components as a ResourceBinding's spec.components must be: at most
// MaxComponents, each named (at most MaxComponentName characters, names unique) with 0 or
// more replicas.
func CheckComponents(components []workv1alpha2.Component) error {
	if len(components) > MaxComponents {
		return fmt.Errorf("%d components, more than %d", len(components), MaxComponents)
	}
	seen := make(map[string]bool, len(components))
	for n, c := range components {
		switch {
		case c.Name == "":
			return fmt.Errorf("component %d has no name", n+1)
		case len(c.Name) > MaxComponentName:
			return fmt.Errorf("component %d: the name %q is longer than %d characters", n+1, c.Name, MaxComponentName)
		case seen[c.Name]:
			return fmt.Errorf("component %d: the name %q is used twice", n+1, c.Name)
		case c.Replicas < 0:
			return fmt.Errorf("component %q: %d replicas; want 0 or more", c.Name, c.Replicas)
		}
		seen[c.Name] = true
	}
	return nil
}
