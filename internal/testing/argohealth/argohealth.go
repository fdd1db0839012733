// Package argohealth restates Argo CD's built-in health checks, as documented at
// https://argo-cd.readthedocs.io/en/stable/operator-manual/health/, for tests: the unit tests
// of internal/interpreter and the e2e suite use it to check that the status Flotilla
// aggregates onto a template reads, to Argo CD, the way a user would expect of the fleet.
package argohealth

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Argo CD health statuses.
const (
	Healthy     = "Healthy"
	Progressing = "Progressing"
	Degraded    = "Degraded"
	Suspended   = "Suspended"
	Unknown     = "Unknown"
)

// The kinds Argo CD has a health check for.
var (
	deploymentKind  = schema.GroupKind{Group: "apps", Kind: "Deployment"}
	statefulSetKind = schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
	daemonSetKind   = schema.GroupKind{Group: "apps", Kind: "DaemonSet"}
	replicaSetKind  = schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}
	jobKind         = schema.GroupKind{Group: "batch", Kind: "Job"}
	cronJobKind     = schema.GroupKind{Group: "batch", Kind: "CronJob"}
	serviceKind     = schema.GroupKind{Kind: "Service"}
	ingressKind     = schema.GroupKind{Group: "networking.k8s.io", Kind: "Ingress"}
	pvcKind         = schema.GroupKind{Kind: "PersistentVolumeClaim"}
	pdbKind         = schema.GroupKind{Group: "policy", Kind: "PodDisruptionBudget"}
)

// Health assesses an object the way Argo CD does out of the box, restated from its
// documentation, https://argo-cd.readthedocs.io/en/stable/operator-manual/health/, and the
// checks it documents: the built-in ones of the gitops-engine (pkg/health, one file per kind)
// and the Lua resource customizations Argo CD ships for policy/PodDisruptionBudget and
// batch/CronJob (resource_customizations/<group>/<kind>/health.lua in argoproj/argo-cd).
// Like Argo CD, it reads the object through its API type; an object that does not convert is
// an error.
func Health(obj *unstructured.Unstructured) (string, error) {
	gk := obj.GroupVersionKind().GroupKind()
	switch gk {
	case deploymentKind:
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &d); err != nil {
			return "", err
		}
		return deploymentHealth(&d), nil
	case statefulSetKind:
		var s appsv1.StatefulSet
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &s); err != nil {
			return "", err
		}
		return statefulSetHealth(&s), nil
	case daemonSetKind:
		var d appsv1.DaemonSet
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &d); err != nil {
			return "", err
		}
		return daemonSetHealth(&d), nil
	case replicaSetKind:
		var r appsv1.ReplicaSet
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &r); err != nil {
			return "", err
		}
		return replicaSetHealth(&r), nil
	case jobKind:
		var j batchv1.Job
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &j); err != nil {
			return "", err
		}
		return jobHealth(&j), nil
	case serviceKind:
		var s corev1.Service
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &s); err != nil {
			return "", err
		}
		// Only a LoadBalancer waits: for an address in status.loadBalancer.ingress.
		if s.Spec.Type == corev1.ServiceTypeLoadBalancer && len(s.Status.LoadBalancer.Ingress) == 0 {
			return Progressing, nil
		}
		return Healthy, nil
	case ingressKind:
		var i networkingv1.Ingress
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &i); err != nil {
			return "", err
		}
		if len(i.Status.LoadBalancer.Ingress) == 0 {
			return Progressing, nil
		}
		return Healthy, nil
	case pvcKind:
		var p corev1.PersistentVolumeClaim
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &p); err != nil {
			return "", err
		}
		switch p.Status.Phase {
		case corev1.ClaimBound:
			return Healthy, nil
		case corev1.ClaimPending:
			return Progressing, nil
		case corev1.ClaimLost:
			return Degraded, nil
		}
		return Unknown, nil
	case pdbKind:
		var p policyv1.PodDisruptionBudget
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &p); err != nil {
			return "", err
		}
		return pdbHealth(&p), nil
	case cronJobKind:
		var c batchv1.CronJob
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &c); err != nil {
			return "", err
		}
		return cronJobHealth(&c), nil
	}
	return "", fmt.Errorf("no Argo CD health check for %s", gk)
}

// deploymentHealth: a paused Deployment is Suspended. Until its controller has observed
// the latest generation it is Progressing. Then a Progressing condition with reason
// ProgressDeadlineExceeded makes it Degraded; fewer updated replicas than spec.replicas, more
// replicas than updated ones (old pods still there), or fewer available than updated
// replicas make it Progressing; else it is Healthy.
func deploymentHealth(d *appsv1.Deployment) string {
	if d.Spec.Paused {
		return Suspended
	}
	if d.Generation > d.Status.ObservedGeneration {
		return Progressing
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Reason == "ProgressDeadlineExceeded" {
			return Degraded
		}
	}
	s := d.Status
	if d.Spec.Replicas != nil && s.UpdatedReplicas < *d.Spec.Replicas || s.Replicas > s.UpdatedReplicas || s.AvailableReplicas < s.UpdatedReplicas {
		return Progressing
	}
	return Healthy
}

// statefulSetHealth: Progressing until its controller has observed the latest generation
// (an observedGeneration of 0 counts as not observed), and while fewer pods are ready than
// spec.replicas. With a RollingUpdate strategy that has rollingUpdate set (as the apiserver
// defaults it), Progressing while fewer pods are updated than spec.replicas minus the
// partition, else Healthy. OnDelete: Healthy. Otherwise Progressing while updateRevision
// differs from currentRevision.
func statefulSetHealth(s *appsv1.StatefulSet) string {
	if s.Status.ObservedGeneration == 0 || s.Generation > s.Status.ObservedGeneration {
		return Progressing
	}
	if s.Spec.Replicas != nil && s.Status.ReadyReplicas < *s.Spec.Replicas {
		return Progressing
	}
	strategy := s.Spec.UpdateStrategy
	if strategy.Type == appsv1.RollingUpdateStatefulSetStrategyType && strategy.RollingUpdate != nil {
		if s.Spec.Replicas != nil && strategy.RollingUpdate.Partition != nil &&
			s.Status.UpdatedReplicas < *s.Spec.Replicas-*strategy.RollingUpdate.Partition {
			return Progressing
		}
		return Healthy
	}
	if strategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return Healthy
	}
	if s.Status.UpdateRevision != s.Status.CurrentRevision {
		return Progressing
	}
	return Healthy
}

// daemonSetHealth: Progressing until its controller has observed the latest generation.
// Then OnDelete is Healthy; otherwise Progressing while fewer pods are updated, or available,
// than desiredNumberScheduled; else Healthy.
func daemonSetHealth(d *appsv1.DaemonSet) string {
	if d.Generation > d.Status.ObservedGeneration {
		return Progressing
	}
	if d.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType {
		return Healthy
	}
	if d.Status.UpdatedNumberScheduled < d.Status.DesiredNumberScheduled || d.Status.NumberAvailable < d.Status.DesiredNumberScheduled {
		return Progressing
	}
	return Healthy
}

// replicaSetHealth: Progressing until its controller has observed the latest generation.
// Then a True ReplicaFailure condition makes it Degraded, fewer available replicas than
// spec.replicas Progressing; else Healthy.
func replicaSetHealth(r *appsv1.ReplicaSet) string {
	if r.Generation > r.Status.ObservedGeneration {
		return Progressing
	}
	for _, c := range r.Status.Conditions {
		if c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue {
			return Degraded
		}
	}
	if r.Spec.Replicas != nil && r.Status.AvailableReplicas < *r.Spec.Replicas {
		return Progressing
	}
	return Healthy
}

// jobHealth looks only at condition types, not their status: a Failed condition makes the
// Job Degraded; else a Complete one Healthy; else a Suspended one Suspended when True and
// Healthy when not; without any of them the Job is Progressing.
func jobHealth(j *batchv1.Job) string {
	var failed, done, suspended bool
	for _, c := range j.Status.Conditions {
		switch c.Type {
		case batchv1.JobFailed:
			failed, done = true, true
		case batchv1.JobComplete:
			done = true
		case batchv1.JobSuspended:
			done = true
			suspended = suspended || c.Status == corev1.ConditionTrue
		}
	}
	switch {
	case !done:
		return Progressing
	case failed:
		return Degraded
	case suspended:
		return Suspended
	}
	return Healthy
}

// pdbHealth: Progressing ("Waiting for status") without conditions. A condition with
// status False makes it Degraded, unless its reason is InsufficientPods (which Argo CD accepts
// since argo-cd#20171); any other condition makes it Healthy.
func pdbHealth(p *policyv1.PodDisruptionBudget) string {
	health := Progressing
	for _, c := range p.Status.Conditions {
		if c.Status == "False" && c.Reason != "InsufficientPods" {
			return Degraded
		}
		health = Healthy
	}
	return health
}

// cronJobHealth: Progressing while it has active Jobs; Healthy when never scheduled, or
// when its last successful time is after its last schedule time; Degraded otherwise (the last
// scheduled run did not succeed).
func cronJobHealth(c *batchv1.CronJob) string {
	s := c.Status
	switch {
	case len(s.Active) > 0:
		return Progressing
	case s.LastScheduleTime == nil:
		return Healthy
	case s.LastSuccessfulTime != nil && s.LastScheduleTime.Time.Before(s.LastSuccessfulTime.Time):
		return Healthy
	}
	return Degraded
}
