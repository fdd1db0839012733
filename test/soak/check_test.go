package soak

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/bindings"
)

// objView is what the checker compares of a template or a member object.
type objView struct {
	key         tkey
	uid         string
	labels      map[string]string
	annotations map[string]string
	deleting    bool
	finalizers  []string
	replicas    int32
	image       string
	ref         string // a Deployment's envFrom ConfigMap
	data        string
	port        int32
}

func viewOf(o client.Object) *objView {
	v := &objView{uid: string(o.GetUID()), labels: o.GetLabels(), annotations: o.GetAnnotations(),
		deleting: o.GetDeletionTimestamp() != nil, finalizers: o.GetFinalizers()}
	v.key.NS, v.key.Name = o.GetNamespace(), o.GetName()
	switch x := o.(type) {
	case *appsv1.Deployment:
		v.key.Kind = kindDeployment
		v.replicas = 1
		if x.Spec.Replicas != nil {
			v.replicas = *x.Spec.Replicas
		}
		if cs := x.Spec.Template.Spec.Containers; len(cs) > 0 {
			v.image = cs[0].Image
			for _, e := range cs[0].EnvFrom {
				if e.ConfigMapRef != nil {
					v.ref = e.ConfigMapRef.Name
				}
			}
		}
	case *corev1.ConfigMap:
		v.key.Kind = kindConfigMap
		v.data = x.Data["key"]
	case *corev1.Service:
		v.key.Kind = kindService
		if len(x.Spec.Ports) > 0 {
			v.port = x.Spec.Ports[0].Port
		}
	}
	return v
}

// snapshot is one read of the host and the members.
type snapshot struct {
	namespaces map[string]map[string]string // soak namespace → labels
	templates  map[tkey]*objView
	// policies and overrides hold the PropagationPolicies and ClusterPropagationPolicies,
	// and the OverridePolicies and ClusterOverridePolicies, by ns/name (/name: cluster).
	policies  map[string]client.Object
	overrides map[string]client.Object
	bindings  map[string]*workv1alpha2.ResourceBinding // ns/name
	works     []*workv1alpha1.Work
	clusters  map[string]*clusterv1alpha1.Cluster
	members   map[string]map[tkey]*objView // cluster → managed objects
	// released are the member objects of the soak's kinds in its namespaces that are not
	// managed: those a preserving policy left behind when their template was deleted.
	released  map[string]map[tkey]*objView // cluster → unmanaged objects
	memberErr map[string]error
}

// listKinds lists Deployments, ConfigMaps and Services with opts.
func listKinds(ctx context.Context, c client.Client, opts ...client.ListOption) ([]client.Object, error) {
	var out []client.Object
	ds := &appsv1.DeploymentList{}
	if err := c.List(ctx, ds, opts...); err != nil {
		return nil, err
	}
	for i := range ds.Items {
		out = append(out, &ds.Items[i])
	}
	cms := &corev1.ConfigMapList{}
	if err := c.List(ctx, cms, opts...); err != nil {
		return nil, err
	}
	for i := range cms.Items {
		out = append(out, &cms.Items[i])
	}
	svcs := &corev1.ServiceList{}
	if err := c.List(ctx, svcs, opts...); err != nil {
		return nil, err
	}
	for i := range svcs.Items {
		out = append(out, &svcs.Items[i])
	}
	return out, nil
}

func newSnapshot() *snapshot {
	return &snapshot{namespaces: map[string]map[string]string{}, templates: map[tkey]*objView{},
		policies: map[string]client.Object{}, overrides: map[string]client.Object{},
		bindings: map[string]*workv1alpha2.ResourceBinding{}, clusters: map[string]*clusterv1alpha1.Cluster{},
		members: map[string]map[tkey]*objView{}, released: map[string]map[tkey]*objView{}, memberErr: map[string]error{}}
}

// take reads everything the checker needs. Host errors are returned; member errors are
// recorded per member.
func take(ctx context.Context, host client.Client, members map[string]client.Client, namespaces []string) (*snapshot, error) {
	s := newSnapshot()
	for _, ns := range namespaces {
		n := &corev1.Namespace{}
		if err := host.Get(ctx, client.ObjectKey{Name: ns}, n); err != nil {
			return nil, err
		}
		s.namespaces[ns] = n.Labels
		objs, err := listKinds(ctx, host, client.InNamespace(ns))
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if o.GetName() == "kube-root-ca.crt" {
				continue
			}
			v := viewOf(o)
			s.templates[v.key] = v
		}
		pps := &policyv1alpha1.PropagationPolicyList{}
		if err := host.List(ctx, pps, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		for i := range pps.Items {
			s.policies[ns+"/"+pps.Items[i].Name] = &pps.Items[i]
		}
		ops := &policyv1alpha1.OverridePolicyList{}
		if err := host.List(ctx, ops, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		for i := range ops.Items {
			s.overrides[ns+"/"+ops.Items[i].Name] = &ops.Items[i]
		}
	}
	cpps := &policyv1alpha1.ClusterPropagationPolicyList{}
	if err := host.List(ctx, cpps); err != nil {
		return nil, err
	}
	for i := range cpps.Items {
		s.policies["/"+cpps.Items[i].Name] = &cpps.Items[i]
	}
	cops := &policyv1alpha1.ClusterOverridePolicyList{}
	if err := host.List(ctx, cops); err != nil {
		return nil, err
	}
	for i := range cops.Items {
		s.overrides["/"+cops.Items[i].Name] = &cops.Items[i]
	}
	rbs := &workv1alpha2.ResourceBindingList{}
	if err := host.List(ctx, rbs); err != nil {
		return nil, err
	}
	for i := range rbs.Items {
		s.bindings[rbs.Items[i].Namespace+"/"+rbs.Items[i].Name] = &rbs.Items[i]
	}
	works := &workv1alpha1.WorkList{}
	if err := host.List(ctx, works); err != nil {
		return nil, err
	}
	for i := range works.Items {
		s.works = append(s.works, &works.Items[i])
	}
	clusters := &clusterv1alpha1.ClusterList{}
	if err := host.List(ctx, clusters); err != nil {
		return nil, err
	}
	for i := range clusters.Items {
		s.clusters[clusters.Items[i].Name] = &clusters.Items[i]
	}
	for name, c := range members {
		objs, err := listKinds(ctx, c)
		if err != nil {
			s.memberErr[name] = err
			continue
		}
		s.members[name], s.released[name] = map[tkey]*objView{}, map[tkey]*objView{}
		for _, o := range objs {
			v := viewOf(o)
			switch {
			case v.labels[wellknown.ManagedLabel] == wellknown.ManagedLabelValue:
				s.members[name][v.key] = v
			case s.namespaces[v.key.NS] != nil && o.GetName() != "kube-root-ca.crt":
				s.released[name][v.key] = v
			}
		}
	}
	return s, nil
}

// violation is one thing wrong; key is set when it concerns one template.
type violation struct {
	key *tkey
	msg string
}

type result struct {
	violations []violation
	// extras are the stale member objects that were tolerated, by template.
	extras map[tkey]set
	kept   int
	// released counts the member objects left behind, released, by deleted templates.
	released int
	// checked counts the member objects compared with their template.
	checked int
}

func (r *result) add(k *tkey, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if k != nil {
		msg = k.String() + ": " + msg
	}
	r.violations = append(r.violations, violation{key: k, msg: msg})
}

// dirtyKeys are the templates that some violation concerns.
func (r *result) dirtyKeys() map[tkey]bool {
	out := map[tkey]bool{}
	for _, v := range r.violations {
		if v.key != nil {
			out[*v.key] = true
		}
	}
	return out
}

func (r *result) messages() []string {
	out := make([]string, 0, len(r.violations))
	for _, v := range r.violations {
		out = append(out, v.msg)
	}
	sort.Strings(out)
	return out
}

// soakOwned keeps the keys the soak owns: app and soak.flotilla.io/*.
func soakOwned(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if k == appLabel || strings.HasPrefix(k, labelPrefix) {
			out[k] = v
		}
	}
	return out
}

func fmtMap(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+m[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// claimNameAnnotation is the binding's annotation that names the claiming policy.
func claimNameAnnotation(p *policy) string {
	if p.cluster {
		return wellknown.ClusterPropagationPolicyNameAnnotation
	}
	return wellknown.PropagationPolicyNameAnnotation
}

// claimLabel is the label that carries the permanent id of the claiming policy on bindings
// (never on templates): one for each kind of policy.
func claimLabel(p *policy) string {
	if p.cluster {
		return wellknown.ClusterPropagationPolicyPermanentIDLabel
	}
	return wellknown.PropagationPolicyPermanentIDLabel
}

// otherClaimLabel is the claim label of the other kind of policy, which a claimed binding
// must not carry.
func otherClaimLabel(p *policy) string {
	if p.cluster {
		return wellknown.PropagationPolicyPermanentIDLabel
	}
	return wellknown.ClusterPropagationPolicyPermanentIDLabel
}

// policyID is the permanent id of the policy as the host has it.
func policyID(p *policy, obj client.Object) string {
	if id := obj.GetLabels()[claimLabel(p)]; id != "" {
		return id
	}
	return string(obj.GetUID())
}

// claimOf describes the claim labels of a template (which must have none) or binding: ""
// when it has none.
func claimOf(labels map[string]string) string {
	var parts []string
	for _, l := range []string{wellknown.PropagationPolicyPermanentIDLabel, wellknown.ClusterPropagationPolicyPermanentIDLabel} {
		if v, ok := labels[l]; ok {
			parts = append(parts, l+"="+v)
		}
	}
	return strings.Join(parts, ", ")
}

func describeClusters(tcs []workv1alpha2.TargetCluster) string {
	parts := make([]string, 0, len(tcs))
	for _, tc := range tcs {
		parts = append(parts, fmt.Sprintf("%s(%d)", tc.Name, tc.Replicas))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func condString(c *metav1.Condition) string {
	if c == nil {
		return "absent"
	}
	return fmt.Sprintf("%s (%s: %s; observedGeneration %d)", c.Status, c.Reason, c.Message, c.ObservedGeneration)
}

// check compares the snapshot with the model. It is pure.
func check(m *model, s *snapshot) *result {
	r := &result{extras: map[tkey]set{}}

	// Clusters: all there, Ready, none being deleted (invariant 3).
	for _, name := range memberNames {
		c := s.clusters[name]
		if c == nil {
			r.add(nil, "Cluster %s is missing", name)
			continue
		}
		if !meta.IsStatusConditionTrue(c.Status.Conditions, wellknown.ClusterConditionReady) {
			r.add(nil, "Cluster %s is not Ready: %s", name, condString(meta.FindStatusCondition(c.Status.Conditions, wellknown.ClusterConditionReady)))
		}
	}
	for _, c := range s.clusters {
		if c.DeletionTimestamp != nil {
			r.add(nil, "Cluster %s is stuck being deleted, finalizers %v", c.Name, c.Finalizers)
		}
	}
	for name, err := range s.memberErr {
		r.add(nil, "cannot read member %s: %v", name, err)
	}

	// Namespaces, policies and overrides as the soak wrote them (harness consistency).
	for _, n := range m.namespaces {
		got := s.namespaces[n.name][wellknown.PropagationLabel] == wellknown.PropagationEnabled
		if got != n.labelled {
			r.add(nil, "harness: namespace %s opted in = %v, the soak expects %v", n.name, got, n.labelled)
		}
	}
	wantPolicies := map[string]fmt.Stringer{}
	for _, p := range m.policies {
		wantPolicies[p.ns+"/"+p.name()] = p
	}
	checkWritten(r, "PropagationPolicy", wantPolicies, s.policies)
	wantOverrides := map[string]fmt.Stringer{}
	for key, o := range m.overrides {
		wantOverrides[key] = o
	}
	checkWritten(r, "OverridePolicy", wantOverrides, s.overrides)

	// Templates on the host.
	for k, v := range s.templates {
		k := k
		if v.deleting {
			r.add(&k, "template is stuck being deleted, finalizers %v", v.finalizers)
			continue
		}
		if m.templates[k] == nil {
			r.add(&k, "harness: template exists on the host but the soak deleted it (or never created it)")
		}
	}

	// targets: where each template must be, from its binding when there is one.
	targets := map[tkey]set{}
	bindingOf := map[tkey]*workv1alpha2.ResourceBinding{}
	expectedBindings := map[string]bool{}
	// ConfigMaps last: where one must be depends on the Deployments that take env from it.
	ordered := m.sortedTemplates()
	slices.SortStableFunc(ordered, func(a, b *template) int {
		return cmpBool(a.key.Kind == kindConfigMap, b.key.Kind == kindConfigMap)
	})
	for _, t := range ordered {
		k := t.key
		host := s.templates[k]
		if host == nil {
			r.add(&k, "harness: template is missing on the host")
			continue
		}
		// needed: the clusters of the Deployments that propagate this ConfigMap.
		needed := set{}
		var neededBy []string
		for _, d := range m.needers(t) {
			needed.addAll(targets[d.key].sorted()...)
			neededBy = append(neededBy, d.key.Name)
		}
		if got, want := soakOwned(host.labels), t.labels; !mapsEqual(got, want) {
			r.add(&k, "harness: template labels %s, the soak wrote %s", fmtMap(got), fmtMap(want))
		}
		// The claim is on the binding: Flotilla never writes a template but its status.
		if claim := claimOf(host.labels); claim != "" {
			r.add(&k, "template carries a claim (%s): Flotilla wrote to a template", claim)
		}
		rbKey := k.NS + "/" + k.bindingName()
		rb := s.bindings[rbKey]
		if !m.bound(t) && len(needed) > 0 {
			// Unclaimed, but needed: an attached binding, no placement of its own.
			if rb != nil {
				if claim := claimOf(rb.Labels); claim != "" {
					r.add(&k, "template is still claimed (%s) although %s", claim, whyUnbound(m, t))
				}
			}
			expectedBindings[rbKey] = true
			targets[k] = needed
			switch {
			case rb == nil:
				r.add(&k, "no ResourceBinding %s although Deployments %v propagate it to %v", rbKey, neededBy, needed)
			case rb.DeletionTimestamp != nil:
				r.add(&k, "ResourceBinding %s is being deleted (finalizers %v) although Deployments %v propagate it", rbKey, rb.Finalizers, neededBy)
			default:
				bindingOf[k] = rb
				checkNeeded(r, k, rb, needed, neededBy)
			}
			continue
		}
		if !m.bound(t) {
			switch {
			case rb == nil:
			case rb.DeletionTimestamp != nil:
				r.add(&k, "ResourceBinding %s is stuck being deleted, finalizers %v", rbKey, rb.Finalizers)
			case m.ns(t.key.NS).labelled:
				// No policy selects it any more: its binding may stay, as in Karmada, for the
				// template's lifetime (its member objects are deleted with the template), but
				// unclaimed and with no placement of its own.
				expectedBindings[rbKey] = true
				if claim := claimOf(rb.Labels); claim != "" {
					r.add(&k, "template is still claimed (%s) although %s", claim, whyUnbound(m, t))
				}
				if rb.Spec.Placement != nil {
					r.add(&k, "ResourceBinding %s keeps a placement although %s", rbKey, whyUnbound(m, t))
				}
			default:
				r.add(&k, "ResourceBinding %s still exists although %s", rbKey, whyUnbound(m, t))
			}
			continue
		}
		p := m.policyOf(t)
		expectedBindings[rbKey] = true
		pp := s.policies[p.ns+"/"+p.name()]
		targets[k] = p.targets() // refined from the binding below
		if pp == nil {
			continue // reported above
		}
		id := policyID(p, pp)
		if rb == nil {
			r.add(&k, "no ResourceBinding %s (policy %s targets %v)", rbKey, p.name(), p.clusters)
			continue
		}
		if rb.DeletionTimestamp != nil {
			r.add(&k, "ResourceBinding %s is being deleted (finalizers %v) although the template is bound to %s", rbKey, rb.Finalizers, p)
			continue
		}
		bindingOf[k] = rb
		checkBinding(r, k, t, p, id, host, rb)
		tset := set{}
		for _, tc := range rb.Spec.Clusters {
			tset[tc.Name] = true
		}
		if len(needed) > 0 {
			checkNeeded(r, k, rb, needed, neededBy)
			tset.addAll(needed.sorted()...)
		}
		targets[k] = tset
	}
	for key, rb := range s.bindings {
		if expectedBindings[key] {
			continue
		}
		if k, ok := keyOfBinding(m, rb); ok && m.templates[k] != nil {
			continue // reported with its template
		}
		if rb.DeletionTimestamp != nil {
			r.add(nil, "ResourceBinding %s (template %s %s) is stuck being deleted, finalizers %v", key, rb.Spec.Resource.Kind, rb.Spec.Resource.Name, rb.Finalizers)
		} else {
			r.add(nil, "stale ResourceBinding %s: its template %s %s is deleted", key, rb.Spec.Resource.Kind, rb.Spec.Resource.Name)
		}
	}

	checkWorks(r, m, s, bindingOf)

	// Member objects: exactly what is called for, nothing else (invariant 1).
	for _, c := range memberNames {
		objs, ok := s.members[c]
		if !ok {
			continue // unreadable, reported above
		}
		for _, t := range m.sortedTemplates() {
			k := t.key
			if !targets[k][c] {
				continue
			}
			o := objs[k]
			if o == nil {
				r.add(&k, "missing in %s (%s)", c, placementOf(m, t, bindingOf[k]))
				continue
			}
			r.checked++
			checkMemberObject(r, m, t, c, o, s.templates[k], bindingOf[k])
		}
		for _, k := range slices.SortedFunc(maps.Keys(objs), func(a, b tkey) int { return strings.Compare(a.String(), b.String()) }) {
			k := k
			t := m.templates[k]
			if t != nil && targets[k][c] {
				continue
			}
			if m.allowed(k, c) {
				if r.extras[k] == nil {
					r.extras[k] = set{}
				}
				r.extras[k][c] = true
				r.kept++
				continue
			}
			var why string
			switch {
			case t == nil && m.graveyard[k] != nil:
				why = "its template was deleted"
			case t == nil:
				why = "the soak never created such a template"
			case !m.bound(t):
				why = whyUnbound(m, t) + " and it was never unbound while placed there"
			default:
				why = placementOf(m, t, bindingOf[k]) + ", which does not include " + c
			}
			r.add(&k, "extra managed object in %s: %s", c, why)
		}
		checkReleased(r, m, c, s.released[c])
	}
	return r
}

// releaseKeys are the labels and annotations a released member object must no longer carry.
var releaseKeys = []string{wellknown.ManagedLabel, wellknown.PropagationPolicyPermanentIDLabel, wellknown.ClusterPropagationPolicyPermanentIDLabel,
	wellknown.HostIDAnnotation, wellknown.AppliedDigestAnnotation, wellknown.WorkNameAnnotation, wellknown.WorkNamespaceAnnotation, wellknown.ResourceTemplateUIDAnnotation}

// checkReleased checks the member objects that are not managed: only a template deleted under
// preserveResourcesOnDeletion leaves one (the soak never makes two templates of one name),
// and it carries nothing that ties it to Flotilla any more.
func checkReleased(r *result, m *model, c string, objs map[tkey]*objView) {
	for _, k := range slices.SortedFunc(maps.Keys(objs), func(a, b tkey) int { return strings.Compare(a.String(), b.String()) }) {
		k, o := k, objs[k]
		switch {
		case m.templates[k] != nil:
			r.add(&k, "unmanaged object in %s although its template is still there", c)
		case m.graveyard[k] == nil:
			r.add(&k, "unmanaged object in %s: the soak never created such a template", c)
		default:
			r.released++
		}
		for _, key := range releaseKeys {
			_, inLabels := o.labels[key]
			_, inAnnotations := o.annotations[key]
			if key != wellknown.ManagedLabel && (inLabels || inAnnotations) {
				r.add(&k, "released object in %s still carries %s", c, key)
			}
		}
	}
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	default:
		return -1
	}
}

// checkNeeded checks that a ConfigMap's binding sends it to every cluster of the Deployments
// that propagate it.
func checkNeeded(r *result, k tkey, rb *workv1alpha2.ResourceBinding, needed set, neededBy []string) {
	got := setOf(bindings.Scheduled(&rb.Spec)...)
	for _, c := range needed.sorted() {
		if !got[c] {
			r.add(&k, "ResourceBinding %s/%s targets %v, not %s, where Deployments %v need it", rb.Namespace, rb.Name, got, c, neededBy)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// checkWritten compares the policies (or overrides) on the host with those the soak wrote,
// both by ns/name (/name: cluster-scoped). kind names the namespaced kind.
func checkWritten(r *result, kind string, want map[string]fmt.Stringer, got map[string]client.Object) {
	for _, key := range slices.Sorted(maps.Keys(got)) {
		o := got[key]
		name := kind + " " + key
		if n, ok := strings.CutPrefix(key, "/"); ok {
			name = "Cluster" + kind + " " + n
		}
		switch {
		case o.GetDeletionTimestamp() != nil:
			r.add(nil, "%s is stuck being deleted, finalizers %v", name, o.GetFinalizers())
		case want[key] == nil:
			r.add(nil, "harness: %s exists but the soak deleted it", name)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(want)) {
		if got[key] == nil {
			r.add(nil, "harness: %s is missing", want[key])
		}
	}
}

func whyUnbound(m *model, t *template) string {
	if !m.ns(t.key.NS).labelled {
		return "namespace " + t.key.NS + " is opted out"
	}
	return "no policy selects group " + t.group
}

func placementOf(m *model, t *template, rb *workv1alpha2.ResourceBinding) string {
	var s string
	if p := m.policyOf(t); p != nil && m.bound(t) {
		s = fmt.Sprintf("%s targets %v", p, p.clusters)
	} else {
		s = whyUnbound(m, t)
	}
	for _, d := range m.needers(t) {
		s += ", Deployment " + d.key.Name + " needs it"
	}
	if rb != nil {
		s += ", binding clusters " + describeClusters(rb.Spec.Clusters)
	}
	return s
}

// keyOfBinding finds the template a binding belongs to.
func keyOfBinding(m *model, rb *workv1alpha2.ResourceBinding) (tkey, bool) {
	k := tkey{Kind: kind(rb.Spec.Resource.Kind), NS: rb.Namespace, Name: rb.Spec.Resource.Name}
	return k, k.bindingName() == rb.Name
}

// keyOfBindingName finds the template, live or deleted, whose binding has this name.
func keyOfBindingName(m *model, ns, name string) *tkey {
	for _, k := range kinds {
		suffix := "-" + strings.ToLower(string(k))
		if n, ok := strings.CutSuffix(name, suffix); ok {
			kk := tkey{Kind: k, NS: ns, Name: n}
			if m.templates[kk] != nil || m.graveyard[kk] != nil {
				return &kk
			}
		}
	}
	return nil
}

// checkBinding checks a bound template's ResourceBinding against its policy (invariant 2
// included).
func checkBinding(r *result, k tkey, t *template, p *policy, policyID string, host *objView, rb *workv1alpha2.ResourceBinding) {
	name := "ResourceBinding " + rb.Namespace + "/" + rb.Name
	if string(rb.Spec.Resource.UID) != host.uid {
		r.add(&k, "%s points at template UID %s, the template is %s", name, rb.Spec.Resource.UID, host.uid)
	}
	if id := rb.Labels[claimLabel(p)]; id != policyID {
		r.add(&k, "%s is labelled for policy %q (%s), want %s (%q)", name, id, claimOf(rb.Labels), p, policyID)
	}
	if other, ok := rb.Labels[otherClaimLabel(p)]; ok {
		r.add(&k, "%s still carries %s=%q although %s claims it", name, otherClaimLabel(p), other, p)
	}
	if got, want := rb.Annotations[claimNameAnnotation(p)], p.name(); got != want {
		r.add(&k, "%s names policy %q in %s, want %q", name, got, claimNameAnnotation(p), want)
	}
	var names []string
	var mode string
	if pl := rb.Spec.Placement; pl != nil {
		if pl.ClusterAffinity != nil {
			names = pl.ClusterAffinity.ClusterNames
		}
		if pl.ReplicaScheduling != nil {
			mode = string(pl.ReplicaScheduling.ReplicaSchedulingType)
		}
	}
	if !setOf(names...).equal(p.targets()) || mode != p.mode {
		r.add(&k, "%s placement is clusterNames %v replicaScheduling %q; %s says %v %q", name, names, mode, p, p.clusters, p.mode)
	}
	var wantReplicas int32
	if k.Kind == kindDeployment {
		wantReplicas = t.replicas
	}
	if rb.Spec.Replicas != wantReplicas {
		r.add(&k, "%s spec.replicas %d, the template has %d", name, rb.Spec.Replicas, wantReplicas)
	}
	got := set{}
	var sum int32
	for _, tc := range rb.Spec.Clusters {
		got[tc.Name] = true
		sum += tc.Replicas
	}
	if !p.divided() || wantReplicas == 0 {
		if !got.equal(p.targets()) {
			r.add(&k, "%s clusters %s, want every cluster of %s: %v (duplicated)", name, describeClusters(rb.Spec.Clusters), p, p.clusters)
		}
		for _, tc := range rb.Spec.Clusters {
			if tc.Replicas != wantReplicas {
				r.add(&k, "%s gives %s %d replicas, want %d (duplicated)", name, tc.Name, tc.Replicas, wantReplicas)
			}
		}
	} else {
		var outside []string
		for c := range got {
			if !slices.Contains(p.clusters, c) {
				outside = append(outside, c)
			}
		}
		if len(outside) > 0 || len(got) == 0 || sum != wantReplicas {
			r.add(&k, "%s clusters %s: want a division of %d replicas over %v (divided)", name, describeClusters(rb.Spec.Clusters), wantReplicas, p.clusters)
		}
		for _, tc := range rb.Spec.Clusters {
			if tc.Replicas <= 0 {
				r.add(&k, "%s keeps %s with %d replicas (empty workload propagation is off)", name, tc.Name, tc.Replicas)
			}
		}
	}
	if c := meta.FindStatusCondition(rb.Status.Conditions, wellknown.ConditionFullyApplied); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != rb.Generation {
		r.add(&k, "%s (generation %d) FullyApplied is %s", name, rb.Generation, condString(c))
	}
	if c := meta.FindStatusCondition(rb.Status.Conditions, wellknown.ConditionScheduled); c != nil && c.Status != metav1.ConditionTrue {
		r.add(&k, "%s Scheduled is %s", name, condString(c))
	}
	if c := meta.FindStatusCondition(rb.Status.Conditions, wellknown.ConditionOverridden); c != nil && c.Status != metav1.ConditionTrue {
		r.add(&k, "%s Overridden is %s", name, condString(c))
	}
}

// checkWorks checks every Work: one per scheduled cluster of each binding, applied, none
// for a cluster the binding does not target or that does not exist (invariant 4), none
// stuck being deleted (invariant 3).
func checkWorks(r *result, m *model, s *snapshot, bindingOf map[tkey]*workv1alpha2.ResourceBinding) {
	byName := map[string]*workv1alpha1.Work{}
	perBindingCluster := map[string]int{}
	for _, w := range s.works {
		byName[w.Namespace+"/"+w.Name] = w
		cluster, ok := bindings.ClusterOfWork(w.Namespace)
		ref, isCluster, fromBinding := bindings.FromWork(w)
		var k *tkey
		var rb *workv1alpha2.ResourceBinding
		if fromBinding && !isCluster {
			rb = s.bindings[ref.Namespace+"/"+ref.Name]
			if rb != nil {
				if kk, ok := keyOfBinding(m, rb); ok {
					k = &kk
				}
			} else {
				k = keyOfBindingName(m, ref.Namespace, ref.Name)
			}
		}
		name := "Work " + w.Namespace + "/" + w.Name
		switch {
		case !ok:
			r.add(k, "%s is outside any execution namespace", name)
			continue
		case s.clusters[cluster] == nil:
			r.add(k, "%s is for Cluster %s, which does not exist", name, cluster)
		}
		if w.DeletionTimestamp != nil {
			r.add(k, "%s is stuck being deleted, finalizers %v", name, w.Finalizers)
			continue
		}
		if rb == nil {
			r.add(k, "stale %s: its binding %s does not exist", name, ref)
			continue
		}
		if !slices.Contains(bindings.Scheduled(&rb.Spec), cluster) {
			r.add(k, "stale %s: binding %s/%s is not scheduled to %s (%s)", name, rb.Namespace, rb.Name, cluster, describeClusters(rb.Spec.Clusters))
		}
		if id := w.Labels[wellknown.ResourceBindingPermanentIDLabel]; id != bindings.PermanentID(rb) {
			r.add(k, "%s is labelled for binding %q, want %q", name, id, bindings.PermanentID(rb))
		}
		perBindingCluster[bindings.PermanentID(rb)+"/"+cluster]++
		if n := perBindingCluster[bindings.PermanentID(rb)+"/"+cluster]; n == 2 {
			r.add(k, "duplicate Works for binding %s/%s in %s", rb.Namespace, rb.Name, cluster)
		}
	}
	for k, rb := range bindingOf {
		k := k
		for _, tc := range bindings.Targets(&rb.Spec) {
			name := wellknown.ExecutionNamespace(tc.Name) + "/" + bindings.WorkName(string(k.Kind), k.NS, k.Name)
			w := byName[name]
			if w == nil {
				r.add(&k, "no Work %s for scheduled cluster %s", name, tc.Name)
				continue
			}
			if c := meta.FindStatusCondition(w.Status.Conditions, wellknown.WorkConditionApplied); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != w.Generation {
				r.add(&k, "Work %s (generation %d) Applied is %s", name, w.Generation, condString(c))
			}
		}
	}
}

// checkMemberObject compares one member object with what the template, its binding and the
// overrides say.
func checkMemberObject(r *result, m *model, t *template, cluster string, o, host *objView, rb *workv1alpha2.ResourceBinding) {
	k := t.key
	where := "in " + cluster
	if got, want := soakOwned(o.labels), m.expectedLabels(t, cluster); !mapsEqual(got, want) {
		r.add(&k, "%s labels %s, want %s", where, fmtMap(got), fmtMap(want))
	}
	if got, want := soakOwned(o.annotations), t.annotations; !mapsEqual(got, want) {
		r.add(&k, "%s annotations %s, want %s", where, fmtMap(got), fmtMap(want))
	}
	if host != nil && o.annotations[wellknown.ResourceTemplateUIDAnnotation] != host.uid {
		r.add(&k, "%s annotation %s=%q, the template's UID is %s", where, wellknown.ResourceTemplateUIDAnnotation,
			o.annotations[wellknown.ResourceTemplateUIDAnnotation], host.uid)
	}
	switch k.Kind {
	case kindDeployment:
		if want := m.expectedImage(t, cluster); o.image != want {
			r.add(&k, "%s image %q, want %q", where, o.image, want)
		}
		if o.ref != t.ref {
			r.add(&k, "%s takes env from ConfigMap %q, want %q", where, o.ref, t.ref)
		}
		want, known := t.replicas, true
		if p := m.policyOf(t); p != nil && p.divided() && t.replicas > 0 {
			known = false
			if rb != nil {
				for _, tc := range rb.Spec.Clusters {
					if tc.Name == cluster {
						want, known = tc.Replicas, true
					}
				}
			}
		}
		if known && o.replicas != want {
			r.add(&k, "%s replicas %d, want %d (%s)", where, o.replicas, want, placementOf(m, t, rb))
		}
	case kindConfigMap:
		if o.data != t.data {
			r.add(&k, "%s data key=%q, want %q", where, o.data, t.data)
		}
	case kindService:
		if o.port != t.port {
			r.add(&k, "%s port %d, want %d", where, o.port, t.port)
		}
	}
}
