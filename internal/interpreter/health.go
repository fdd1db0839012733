package interpreter

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Health says whether a member object is healthy:
//
//   - Deployment: its controller has observed the latest generation, and the updated and
//     available replicas reach spec.replicas (default 1).
//   - StatefulSet: observed, and available (or, on old members, ready) replicas reach
//     spec.replicas; for a RollingUpdate without a partition the updated replicas too.
//   - ReplicaSet: observed, and available replicas reach spec.replicas.
//   - DaemonSet: observed, and updated and available pods reach desiredNumberScheduled.
//   - Job: healthy unless its Failed condition is True (running and complete Jobs are fine).
//   - Pod: phase Running or Succeeded. PersistentVolumeClaim: phase Bound.
//   - Service: a LoadBalancer needs an ingress point in status.loadBalancer; other types are
//     healthy. Ingress: needs an ingress point.
//   - PodDisruptionBudget: observed, and currentHealthy reaches desiredHealthy.
//   - CronJob, ConfigMap, Secret: healthy.
//   - CustomResourceDefinition: healthy once its Established condition is True (crd.go).
//   - Any other kind: Unknown when status.observedGeneration is older than
//     metadata.generation (the conditions describe an older spec); Unhealthy when a Stalled,
//     Failed or Degraded condition is True; else what a Ready condition says, or else an
//     Available one (True: Healthy, False: Unhealthy, otherwise Unknown); else what
//     status.phase says (Running, Ready, Active, Available, Bound, Healthy, Succeeded and
//     Completed: Healthy; Failed, Error, Degraded and Unhealthy: Unhealthy; any other phase:
//     Unknown); Healthy when neither conditions nor a phase say otherwise.
//   - A kind whose customization scripts healthInterpretation: what the script returns;
//     Unknown when it fails.
//
// A field of the wrong type makes the health Unknown.
func (i Interpreter) Health(obj *unstructured.Unstructured) workv1alpha1.ResourceHealth {
	if c, ok := i.custom(obj, OperationInterpretHealth); ok {
		healthy, err := c.InterpretHealth(obj)
		if err != nil {
			return workv1alpha1.ResourceUnknownHealth
		}
		return healthyIf(healthy)
	}
	h, err := health(obj)
	if err != nil {
		return workv1alpha1.ResourceUnknownHealth
	}
	return h
}

func health(obj *unstructured.Unstructured) (workv1alpha1.ResourceHealth, error) {
	switch groupKind(obj) {
	case deploymentKind:
		return workloadHealth(obj, "updatedReplicas", "availableReplicas")
	case statefulSetKind:
		return statefulSetHealth(obj)
	case replicaSetKind:
		return workloadHealth(obj, "availableReplicas")
	case daemonSetKind:
		return daemonSetHealth(obj)
	case jobKind:
		_, failed := conditionTrue(status(obj), "Failed")
		return healthyIf(!failed), nil
	case podKind:
		phase, _, err := nestedString(obj.Object, "status", "phase")
		return healthyIf(phase == "Running" || phase == "Succeeded"), err
	case pvcKind:
		phase, _, err := nestedString(obj.Object, "status", "phase")
		return healthyIf(phase == "Bound"), err
	case serviceKind:
		svcType, _, err := nestedString(obj.Object, "spec", "type")
		if err != nil || svcType != "LoadBalancer" {
			return workv1alpha1.ResourceHealthy, err
		}
		return loadBalancerHealth(obj)
	case ingressKind:
		return loadBalancerHealth(obj)
	case pdbKind:
		return pdbHealth(obj)
	case cronJobKind, configMapKind, secretKind:
		return workv1alpha1.ResourceHealthy, nil
	case crdKind:
		return crdHealth(obj)
	}
	return conditionsHealth(obj)
}

func healthyIf(ok bool) workv1alpha1.ResourceHealth {
	if ok {
		return workv1alpha1.ResourceHealthy
	}
	return workv1alpha1.ResourceUnhealthy
}

// status returns the object's status, nil when it has none or it is not an object.
func status(obj *unstructured.Unstructured) map[string]any {
	s, _, _ := nestedMap(obj.Object, "status")
	return s
}

// observed reports whether the object's controller has acted on its latest generation.
func observed(obj *unstructured.Unstructured) (bool, error) {
	g, _, err := nestedInt64(obj.Object, "status", "observedGeneration")
	return g >= obj.GetGeneration(), err
}

// desiredReplicas is spec.replicas, 1 when unset.
func desiredReplicas(obj *unstructured.Unstructured) (int64, error) {
	n, found, err := nestedInt64(obj.Object, "spec", "replicas")
	if !found {
		n = 1
	}
	return n, err
}

// workloadHealth: observed, and every named status counter reaches spec.replicas.
func workloadHealth(obj *unstructured.Unstructured, counters ...string) (workv1alpha1.ResourceHealth, error) {
	ok, err := observed(obj)
	if err != nil || !ok {
		return workv1alpha1.ResourceUnhealthy, err
	}
	desired, err := desiredReplicas(obj)
	if err != nil {
		return "", err
	}
	return countersReach(obj, desired, counters...)
}

// countersReach reports Healthy when every named status counter is at least want.
func countersReach(obj *unstructured.Unstructured, want int64, counters ...string) (workv1alpha1.ResourceHealth, error) {
	reached := true
	for _, c := range counters {
		n, _, err := nestedInt64(obj.Object, "status", c)
		if err != nil {
			return "", err
		}
		reached = reached && n >= want
	}
	return healthyIf(reached), nil
}

func statefulSetHealth(obj *unstructured.Unstructured) (workv1alpha1.ResourceHealth, error) {
	available := "availableReplicas"
	if _, found, _ := nestedInt64(obj.Object, "status", available); !found {
		available = "readyReplicas"
	}
	counters := []string{available}
	strategy, _, err := nestedString(obj.Object, "spec", "updateStrategy", "type")
	if err != nil {
		return "", err
	}
	partition, _, err := nestedInt64(obj.Object, "spec", "updateStrategy", "rollingUpdate", "partition")
	if err != nil {
		return "", err
	}
	if strategy != "OnDelete" && partition == 0 {
		counters = append(counters, "updatedReplicas")
	}
	return workloadHealth(obj, counters...)
}

func daemonSetHealth(obj *unstructured.Unstructured) (workv1alpha1.ResourceHealth, error) {
	ok, err := observed(obj)
	if err != nil || !ok {
		return workv1alpha1.ResourceUnhealthy, err
	}
	desired, _, err := nestedInt64(obj.Object, "status", "desiredNumberScheduled")
	if err != nil {
		return "", err
	}
	return countersReach(obj, desired, "updatedNumberScheduled", "numberAvailable")
}

func pdbHealth(obj *unstructured.Unstructured) (workv1alpha1.ResourceHealth, error) {
	ok, err := observed(obj)
	if err != nil || !ok {
		return workv1alpha1.ResourceUnhealthy, err
	}
	desired, _, err := nestedInt64(obj.Object, "status", "desiredHealthy")
	if err != nil {
		return "", err
	}
	return countersReach(obj, desired, "currentHealthy")
}

func loadBalancerHealth(obj *unstructured.Unstructured) (workv1alpha1.ResourceHealth, error) {
	ingress, _, err := nestedSlice(obj.Object, "status", "loadBalancer", "ingress")
	return healthyIf(len(ingress) > 0), err
}

// failureConditions are condition types that, when True, mean the object is unhealthy.
var failureConditions = []string{"Stalled", "Failed", "Degraded"}

// conditionsHealth is the fallback for kinds the interpreter does not know.
func conditionsHealth(obj *unstructured.Unstructured) (workv1alpha1.ResourceHealth, error) {
	if g, found, err := nestedInt64(obj.Object, "status", "observedGeneration"); err != nil || (found && g < obj.GetGeneration()) {
		return workv1alpha1.ResourceUnknownHealth, err
	}
	conditions, _, err := nestedSlice(obj.Object, "status", "conditions")
	if err != nil {
		return "", err
	}
	byType := map[string]string{}
	for _, c := range conditions {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		t, _ := m["type"].(string)
		s, _ := m["status"].(string)
		byType[t] = s
	}
	for _, t := range failureConditions {
		if byType[t] == "True" {
			return workv1alpha1.ResourceUnhealthy, nil
		}
	}
	for _, t := range []string{"Ready", "Available"} {
		switch s, ok := byType[t]; {
		case !ok:
			continue
		case s == "True":
			return workv1alpha1.ResourceHealthy, nil
		case s == "False":
			return workv1alpha1.ResourceUnhealthy, nil
		default:
			return workv1alpha1.ResourceUnknownHealth, nil
		}
	}
	phase, found, err := nestedString(obj.Object, "status", "phase")
	if err != nil || !found {
		return workv1alpha1.ResourceHealthy, err
	}
	switch strings.ToLower(phase) {
	case "running", "ready", "active", "available", "bound", "healthy", "succeeded", "completed":
		return workv1alpha1.ResourceHealthy, nil
	case "failed", "error", "degraded", "unhealthy":
		return workv1alpha1.ResourceUnhealthy, nil
	}
	return workv1alpha1.ResourceUnknownHealth, nil
}
