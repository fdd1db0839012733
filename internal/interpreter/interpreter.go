// Package interpreter understands resource templates and member objects by kind: how many
// replicas a template asks for and what each needs, how to give a member its share, which
// fields the host filled in and must not travel, which fields a member filled in and must be
// kept, what status to reflect from a member and how to add it up across members, and
// whether a member object is healthy, and, for a workload made of several pod templates whose
// customization scripts componentResource, its components (Components). It is pure: objects
// in, objects out, no client.
//
// It knows the built-in kinds Deployment, StatefulSet, ReplicaSet, DaemonSet, Job, CronJob,
// Pod, Service, Ingress, ConfigMap, Secret, PersistentVolumeClaim and PodDisruptionBudget,
// matched by API group and kind (any version). Every other kind, custom resources included,
// gets the fallback each method documents. Malformed objects (a field of the wrong type)
// give errors, never panics.
package interpreter

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Interpreter interprets objects by kind. The zero value knows the built-in kinds and is
// ready to use; it is safe for concurrent use. With Customizations, a kind's customization
// takes over the operations it scripts (ResourceInterpreterCustomization).
type Interpreter struct {
	// Customizations, when set, are consulted first for every operation.
	Customizations Customizations
}

// The kinds the interpreter knows.
var (
	deploymentKind    = schema.GroupKind{Group: "apps", Kind: "Deployment"}
	statefulSetKind   = schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
	replicaSetKind    = schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}
	daemonSetKind     = schema.GroupKind{Group: "apps", Kind: "DaemonSet"}
	jobKind           = schema.GroupKind{Group: "batch", Kind: "Job"}
	cronJobKind       = schema.GroupKind{Group: "batch", Kind: "CronJob"}
	podKind           = schema.GroupKind{Kind: "Pod"}
	serviceKind       = schema.GroupKind{Kind: "Service"}
	ingressKind       = schema.GroupKind{Group: "networking.k8s.io", Kind: "Ingress"}
	configMapKind     = schema.GroupKind{Kind: "ConfigMap"}
	secretKind        = schema.GroupKind{Kind: "Secret"}
	pvcKind           = schema.GroupKind{Kind: "PersistentVolumeClaim"}
	resourceQuotaKind = schema.GroupKind{Kind: "ResourceQuota"}
	pdbKind           = schema.GroupKind{Group: "policy", Kind: "PodDisruptionBudget"}
)

// builtin reports whether the interpreter knows the kind; the others get the fallbacks.
func builtin(gk schema.GroupKind) bool {
	switch gk {
	case deploymentKind, statefulSetKind, replicaSetKind, daemonSetKind, jobKind, cronJobKind,
		podKind, serviceKind, ingressKind, configMapKind, secretKind, pvcKind, pdbKind:
		return true
	}
	return false
}

func groupKind(obj *unstructured.Unstructured) schema.GroupKind {
	return obj.GroupVersionKind().GroupKind()
}
