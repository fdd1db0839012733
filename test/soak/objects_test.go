package soak

import (
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// object renders the template as the soak creates it.
func (t *template) object() client.Object {
	meta := metav1.ObjectMeta{Namespace: t.key.NS, Name: t.key.Name, Labels: maps.Clone(t.labels), Annotations: maps.Clone(t.annotations)}
	sel := map[string]string{appLabel: t.key.Name}
	switch t.key.Kind {
	case kindDeployment:
		return &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(t.replicas),
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "app", Image: t.image, EnvFrom: envFrom(t.ref), Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}}}}}},
		}}
	case kindConfigMap:
		return &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"key": t.data}}
	default:
		return &corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{Selector: sel,
			Ports: []corev1.ServicePort{{Name: "http", Port: t.port, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}}}
	}
}

// envFrom takes env from the ConfigMap ref: what makes it a dependency.
func envFrom(ref string) []corev1.EnvFromSource {
	if ref == "" {
		return nil
	}
	return []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: ref}}}}
}

// emptyObject is an object of the template's kind with only its namespace and name.
func (k tkey) emptyObject() client.Object {
	meta := metav1.ObjectMeta{Namespace: k.NS, Name: k.Name}
	switch k.Kind {
	case kindDeployment:
		return &appsv1.Deployment{ObjectMeta: meta}
	case kindConfigMap:
		return &corev1.ConfigMap{ObjectMeta: meta}
	default:
		return &corev1.Service{ObjectMeta: meta}
	}
}

// groupSelectors select the group's templates of every kind the soak uses.
func groupSelectors(group string) []policyv1alpha1.ResourceSelector {
	var out []policyv1alpha1.ResourceSelector
	for _, k := range kinds {
		out = append(out, policyv1alpha1.ResourceSelector{APIVersion: k.apiVersion(), Kind: string(k),
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{groupLabel: group}}})
	}
	return out
}

// placement is the policy's placement.
func (p *policy) placement() policyv1alpha1.Placement {
	pl := policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: append([]string(nil), p.clusters...)}}
	switch p.mode {
	case modeDuplicated:
		pl.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated}
	case modeDivided:
		var weights []policyv1alpha1.StaticClusterWeight
		for _, c := range p.clusters {
			weights = append(weights, policyv1alpha1.StaticClusterWeight{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{c}}, Weight: 1})
		}
		pl.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{
			ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
			ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
			WeightPreference:          &policyv1alpha1.ClusterPreferences{StaticWeightList: weights},
		}
	}
	return pl
}

// spec is the policy's spec: pins name their template and preempt (see policy).
func (p *policy) spec() policyv1alpha1.PropagationSpec {
	spec := policyv1alpha1.PropagationSpec{ResourceSelectors: groupSelectors(p.group), Placement: p.placement()}
	if p.pin != nil {
		k := *p.pin
		spec.Priority, spec.Preemption = ptr.To[int32](pinPriority), policyv1alpha1.PreemptAlways
		spec.ResourceSelectors = []policyv1alpha1.ResourceSelector{{APIVersion: k.Kind.apiVersion(), Kind: string(k.Kind), Namespace: k.NS, Name: k.Name}}
	}
	if p.preserve {
		spec.PreserveResourcesOnDeletion = ptr.To(true)
	}
	spec.PropagateDeps = p.deps
	return spec
}

// object is the PropagationPolicy or ClusterPropagationPolicy.
func (p *policy) object() client.Object {
	if p.cluster {
		return &policyv1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: p.name()}, Spec: p.spec()}
	}
	return &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: p.name()}, Spec: p.spec()}
}

// emptyObject is an object of the policy's kind with only its name (and namespace).
func (p *policy) emptyObject() client.Object {
	if p.cluster {
		return &policyv1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: p.name()}}
	}
	return &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: p.name()}}
}

// spec is the override's spec: one rule per cluster.
func (o *override) spec() policyv1alpha1.OverrideSpec {
	var spec policyv1alpha1.OverrideSpec
	switch {
	case o.image:
		rs := policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: string(kindDeployment)}
		if o.group != "" {
			rs.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{groupLabel: o.group}}
		}
		spec.ResourceSelectors = []policyv1alpha1.ResourceSelector{rs}
	case o.group != "":
		spec.ResourceSelectors = groupSelectors(o.group)
	}
	for _, c := range o.clusters {
		rule := policyv1alpha1.RuleWithCluster{TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{c}}}
		if o.image {
			rule.Overriders.ImageOverrider = []policyv1alpha1.ImageOverrider{{
				Component: policyv1alpha1.Tag, Operator: policyv1alpha1.OverriderOpReplace, Value: o.tag + "-" + c}}
		} else {
			rule.Overriders.LabelsOverrider = []policyv1alpha1.LabelAnnotationOverrider{{
				Operator: policyv1alpha1.OverriderOpAdd, Value: map[string]string{overrideLabelPrefix + o.name: c}}}
		}
		spec.OverrideRules = append(spec.OverrideRules, rule)
	}
	return spec
}

// object is the OverridePolicy or ClusterOverridePolicy.
func (o *override) object() client.Object {
	if o.cluster {
		return &policyv1alpha1.ClusterOverridePolicy{ObjectMeta: metav1.ObjectMeta{Name: o.name}, Spec: o.spec()}
	}
	return &policyv1alpha1.OverridePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: o.name}, Spec: o.spec()}
}

// emptyObject is an object of the override's kind with only its name (and namespace).
func (o *override) emptyObject() client.Object {
	if o.cluster {
		return &policyv1alpha1.ClusterOverridePolicy{ObjectMeta: metav1.ObjectMeta{Name: o.name}}
	}
	return &policyv1alpha1.OverridePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: o.name}}
}
