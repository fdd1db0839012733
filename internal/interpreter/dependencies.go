package interpreter

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/podspec"
)

// GetDependencies lists the objects a template needs on every member it runs on, for
// propagateDeps. For the kinds with a pod template (Deployment, StatefulSet, DaemonSet,
// ReplicaSet, Job, CronJob, Pod) these are, in the template's namespace:
//
//   - ConfigMaps: volumes, projected volume sources, env valueFrom, envFrom;
//   - Secrets: the same, and imagePullSecrets;
//   - the ServiceAccount, unless it is "default" (every namespace has one);
//   - PersistentVolumeClaims of volumes (a StatefulSet's volumeClaimTemplates are not
//     dependencies: each member's StatefulSet controller makes its own claims).
//
// The ConfigMap kube-root-ca.crt is left out: every member publishes its own in every
// namespace. The list is sorted by kind and name, without duplicates. Other kinds have no
// dependencies unless a customization says so.
func (i Interpreter) GetDependencies(obj *unstructured.Unstructured) ([]configv1alpha1.DependentObjectReference, error) {
	if c, ok := i.custom(obj, OperationInterpretDependency); ok {
		return c.GetDependencies(obj)
	}
	path := podspec.Path(groupKind(obj))
	if path == nil {
		return nil, nil
	}
	raw, _, err := nestedMap(obj.Object, path...)
	if err != nil || raw == nil {
		return nil, err
	}
	var spec corev1.PodSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &spec); err != nil {
		return nil, fmt.Errorf("%s: %w", strings.Join(path, "."), err)
	}
	return PodDependencies(&spec, obj.GetNamespace()), nil
}

// PodTemplateDependencies is GetDependencies for a pod template ({metadata, spec}), for
// customizations of kinds that embed one.
func PodTemplateDependencies(template map[string]any, namespace string) ([]configv1alpha1.DependentObjectReference, error) {
	var t corev1.PodTemplateSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(template, &t); err != nil {
		return nil, fmt.Errorf("pod template: %w", err)
	}
	return PodDependencies(&t.Spec, namespace), nil
}

// PodTemplateRequirements is what one replica of a pod template ({metadata, spec}) needs, as
// GetReplicas reads it for the built-in workloads, for customizations of kinds that embed
// one.
func PodTemplateRequirements(template map[string]any, namespace string) (*workv1alpha2.ReplicaRequirements, error) {
	var t corev1.PodTemplateSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(template, &t); err != nil {
		return nil, fmt.Errorf("pod template: %w", err)
	}
	return podSpecRequirements(&t.Spec, namespace), nil
}

// rootCAConfigMap is published by every cluster's controller manager in every namespace.
const rootCAConfigMap = "kube-root-ca.crt"

// PodDependencies lists the ConfigMaps, Secrets, ServiceAccount and PersistentVolumeClaims a
// pod spec refers to (see GetDependencies), sorted by kind and name.
func PodDependencies(spec *corev1.PodSpec, namespace string) []configv1alpha1.DependentObjectReference {
	type ref struct{ kind, name string }
	seen := map[ref]bool{}
	add := func(kind, name string) {
		if name == "" || (kind == "ConfigMap" && name == rootCAConfigMap) {
			return
		}
		seen[ref{kind, name}] = true
	}
	for _, v := range spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			add("ConfigMap", v.ConfigMap.Name)
		case v.Secret != nil:
			add("Secret", v.Secret.SecretName)
		case v.PersistentVolumeClaim != nil:
			add("PersistentVolumeClaim", v.PersistentVolumeClaim.ClaimName)
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.ConfigMap != nil {
					add("ConfigMap", s.ConfigMap.Name)
				}
				if s.Secret != nil {
					add("Secret", s.Secret.Name)
				}
			}
		}
	}
	containers := slices.Concat(spec.InitContainers, spec.Containers)
	for i := range spec.EphemeralContainers {
		c := spec.EphemeralContainers[i].EphemeralContainerCommon
		containers = append(containers, corev1.Container{Env: c.Env, EnvFrom: c.EnvFrom})
	}
	for _, c := range containers {
		for _, e := range c.EnvFrom {
			if e.ConfigMapRef != nil {
				add("ConfigMap", e.ConfigMapRef.Name)
			}
			if e.SecretRef != nil {
				add("Secret", e.SecretRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				add("ConfigMap", r.Name)
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				add("Secret", r.Name)
			}
		}
	}
	for _, s := range spec.ImagePullSecrets {
		add("Secret", s.Name)
	}
	sa := spec.ServiceAccountName
	if sa == "" {
		sa = spec.DeprecatedServiceAccount
	}
	if sa != "default" {
		add("ServiceAccount", sa)
	}
	out := make([]configv1alpha1.DependentObjectReference, 0, len(seen))
	for r := range seen {
		out = append(out, configv1alpha1.DependentObjectReference{APIVersion: "v1", Kind: r.kind, Namespace: namespace, Name: r.name})
	}
	slices.SortFunc(out, func(a, b configv1alpha1.DependentObjectReference) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
	return out
}
