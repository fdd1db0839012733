package interpreter

import (
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
//   - Any other kind: spec.replicas when it is a non-negative integer, else 0; no
//     requirements, since the interpreter does not know where its pod template is.
//
// Requirements of the workloads above: the effective requests of one pod (containers summed,
// init containers and sidecars as the kube-scheduler counts them, overhead and pod-level
// resources included; a container's limit stands in for a request it does not set, as the
// apiserver defaults it), the node claim (nodeSelector, required node affinity,
// tolerations), the priority class and the namespace.
func (Interpreter) GetReplicas(obj *unstructured.Unstructured) (int32, *workv1alpha2.ReplicaRequirements, error) {
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
		if builtin(gk) {
			return 0, nil, nil
		}
		if n, _, err := nestedCount(obj.Object, "spec", "replicas"); err == nil {
			return n, nil, nil
		}
		return 0, nil, nil
	}
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
	req := &workv1alpha2.ReplicaRequirements{
		Namespace:         obj.GetNamespace(),
		PriorityClassName: spec.PriorityClassName,
		NodeClaim:         nodeClaim(&spec),
	}
	if requests := podRequests(&spec); len(requests) > 0 {
		req.ResourceRequest = requests
	}
	return req, nil
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
//   - Any other kind: spec.replicas when the object has it as an integer.
//   - Kinds without replicas (Pod, DaemonSet, CronJob, ...) are returned unchanged, so the
//     caller need not know which kinds have replicas.
//
// replicas must be in [0, 2^31-1].
func (Interpreter) ReviseReplicas(obj *unstructured.Unstructured, replicas int64) (*unstructured.Unstructured, error) {
	if replicas < 0 || replicas > math.MaxInt32 {
		return nil, fmt.Errorf("replicas %d is out of range [0, %d]", replicas, math.MaxInt32)
	}
	out := obj.DeepCopy()
	if err := reviseReplicas(out, replicas); err != nil {
		return nil, err
	}
	return out, nil
}

func reviseReplicas(obj *unstructured.Unstructured, replicas int64) error {
	switch gk := groupKind(obj); gk {
	case deploymentKind, statefulSetKind, replicaSetKind:
		return setNested(obj, replicas, "spec", "replicas")
	case jobKind:
		return reviseJob(obj, replicas)
	default:
		if builtin(gk) {
			return nil
		}
		if _, found, err := nestedCount(obj.Object, "spec", "replicas"); err != nil || !found {
			return nil
		}
		return setNested(obj, replicas, "spec", "replicas")
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
