// Package podspec knows where the built-in workload kinds keep their pod spec. Overriders
// (images, commands, args) and the resource interpreter (replica requirements) share it, so
// both agree on which kinds are workloads.
package podspec

import "k8s.io/apimachinery/pkg/runtime/schema"

// ContainerLists are the pod spec fields that hold containers a template defines.
// Ephemeral containers are added to running Pods only and never appear in templates.
var ContainerLists = []string{"containers", "initContainers"}

var paths = map[schema.GroupKind][]string{
	{Group: "", Kind: "Pod"}:             {"spec"},
	{Group: "apps", Kind: "Deployment"}:  {"spec", "template", "spec"},
	{Group: "apps", Kind: "ReplicaSet"}:  {"spec", "template", "spec"},
	{Group: "apps", Kind: "StatefulSet"}: {"spec", "template", "spec"},
	{Group: "apps", Kind: "DaemonSet"}:   {"spec", "template", "spec"},
	{Group: "batch", Kind: "Job"}:        {"spec", "template", "spec"},
	{Group: "batch", Kind: "CronJob"}:    {"spec", "jobTemplate", "spec", "template", "spec"},
}

// Path returns the field path of the pod spec of a built-in workload kind (Pod, Deployment,
// ReplicaSet, StatefulSet, DaemonSet, Job, CronJob), and nil for any other kind. The group
// counts: a custom resource of kind Deployment in another group is not a workload here.
// The returned slice is a fresh copy.
func Path(gk schema.GroupKind) []string {
	p, ok := paths[gk]
	if !ok {
		return nil
	}
	return append([]string(nil), p...)
}
