package soak

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The model is what the soak itself created: its namespaces, templates, PropagationPolicies,
// ClusterPropagationPolicies, OverridePolicies and ClusterOverridePolicies, as last written. From it the checker derives what every member must
// hold. It does not reimplement the scheduler: where to put Divided replicas is read from
// each binding's spec.clusters, and only checked against the policy (a subset of its
// clusterNames, replicas adding up).
//
// Orphans. Opting a namespace out, deleting a policy, or moving a template to another
// policy's group unbinds templates and keeps their member objects (docs/guides/propagate-and-place.md, "Opting out"):
// those objects legitimately stay, unmanaged, wherever the template happened to be at that
// moment, which under chaos (a killed manager, a member down) the soak cannot know exactly.
// So each template records, since the last checkpoint at which the soak saw it exactly as
// expected, every cluster any of its policies targeted (seen), and whether an unbinding
// happened (dirty). A stale managed object of a dirty template in a seen cluster is
// tolerated; anywhere else it is a violation. Template names are never reused, so a
// tolerated orphan can never be mistaken for a live object.

var memberNames = []string{"member1", "member2", "member3"}

const (
	labelPrefix = "soak.flotilla.io/"
	groupLabel  = labelPrefix + "group"
	appLabel    = "app"
	// overrideLabelPrefix + override name is the label a labels OverridePolicy adds; its
	// value is the cluster's name.
	overrideLabelPrefix = labelPrefix + "ov-"
	imageRepo           = "registry.soak.local/app"
)

type kind string

const (
	kindDeployment kind = "Deployment"
	kindConfigMap  kind = "ConfigMap"
	kindService    kind = "Service"
)

var kinds = []kind{kindDeployment, kindConfigMap, kindService}

func (k kind) apiVersion() string {
	if k == kindDeployment {
		return "apps/v1"
	}
	return "v1"
}

// tkey identifies a template.
type tkey struct {
	Kind     kind
	NS, Name string
}

func (k tkey) String() string { return fmt.Sprintf("%s %s/%s", k.Kind, k.NS, k.Name) }

// bindingName is the ResourceBinding's name: <name>-<kind>, lower case.
func (k tkey) bindingName() string { return k.Name + "-" + strings.ToLower(string(k.Kind)) }

// set is a set of cluster names.
type set map[string]bool

func setOf(names ...string) set {
	s := set{}
	for _, n := range names {
		s[n] = true
	}
	return s
}

func (s set) addAll(names ...string) {
	for _, n := range names {
		s[n] = true
	}
}

func (s set) sorted() []string { return slices.Sorted(maps.Keys(s)) }

func (s set) equal(o set) bool {
	if len(s) != len(o) {
		return false
	}
	for k := range s {
		if !o[k] {
			return false
		}
	}
	return true
}

func (s set) String() string { return "[" + strings.Join(s.sorted(), " ") + "]" }

// template is a resource template as the soak last wrote it.
type template struct {
	key         tkey
	group       string
	labels      map[string]string // every label the soak owns, app and group included
	annotations map[string]string // every annotation the soak owns
	replicas    int32             // Deployment
	image       string            // Deployment
	ref         string            // Deployment: the ConfigMap of its namespace it takes env from, if any
	data        string            // ConfigMap
	port        int32             // Service

	// dirty: an unbinding may have left member objects behind since the last checkpoint.
	dirty bool
	// seen: every cluster a policy of the template targeted since the last checkpoint.
	seen set
	// allow: clusters where a stale object was observed (and tolerated) at the last
	// checkpoint.
	allow set
	// deps: a policy with propagateDeps may have bound the Deployment since the last
	// checkpoint, so its ConfigMap may have gone wherever it was.
	deps bool
}

// Replica scheduling modes of the soak's policies.
const (
	modeDefault    = ""           // no replicaScheduling: Duplicated
	modeDuplicated = "Duplicated" // explicit
	modeDivided    = "Divided"    // Divided, Weighted, static weight 1 for each cluster
)

// policy is one of three kinds of propagation policy, each selecting the soak's kinds:
//
//   - a PropagationPolicy pp-<group> selects, by label, the templates of a group g* in its
//     namespace;
//   - a ClusterPropagationPolicy cpp-<group> (cluster) selects, by label, the templates of a
//     group c* in every namespace. PropagationPolicies and ClusterPropagationPolicies select
//     disjoint groups: which of two policies claims a template would otherwise depend on
//     which the manager saw first (a claimed template stays with its policy);
//   - a pin pin-<name>-<kind> (pin set) is a PropagationPolicy that names one template, with
//     priority 10 and preemption Always (which needs named selectors): it takes the template
//     from whichever policy claims it, so that claim never depends on timing either.
type policy struct {
	cluster   bool
	pin       *tkey    // the template a pin names
	ns, group string   // ns is empty for a ClusterPropagationPolicy; group is empty for a pin
	clusters  []string // sorted, non-empty
	mode      string
	// preserve is preserveResourcesOnDeletion: a deleted template's member objects stay,
	// released (no longer managed, so the checker, which looks at managed objects, sees none).
	// deps is propagateDeps: a Deployment's ConfigMap goes where the Deployment goes. Both are
	// set when the policy is created, never edited.
	preserve, deps bool
}

// pinPriority is the pins' spec.priority: above the PropagationPolicies' 0.
const pinPriority = 10

func (p *policy) name() string {
	switch {
	case p.cluster:
		return "cpp-" + p.group
	case p.pin != nil:
		return pinName(*p.pin)
	default:
		return "pp-" + p.group
	}
}

func pinName(k tkey) string { return "pin-" + k.bindingName() }

func (p *policy) divided() bool { return p.mode == modeDivided }
func (p *policy) targets() set  { return setOf(p.clusters...) }
func (p *policy) String() string {
	if p.cluster {
		return "ClusterPropagationPolicy " + p.name()
	}
	return fmt.Sprintf("PropagationPolicy %s/%s", p.ns, p.name())
}

// key is the policy's key in model.policies and lastTargets, and the snapshot's: ns/name, or
// /name for a ClusterPropagationPolicy.
func (p *policy) key() string { return p.ns + "/" + p.name() }

// covers reports whether the policy selects the template (whether or not it claims it).
func (p *policy) covers(t *template) bool {
	switch {
	case p.pin != nil:
		return *p.pin == t.key
	case p.cluster:
		return t.group == p.group
	default:
		return t.group == p.group && t.key.NS == p.ns
	}
}

// override is an OverridePolicy, or (cluster) a ClusterOverridePolicy that selects in every
// namespace: either a labels overrider adding soak.flotilla.io/ov-<name>=<cluster> on each of
// its clusters, or an image overrider replacing the Deployments' tag with <tag>-<cluster>.
type override struct {
	cluster  bool
	ns, name string // ns is empty for a ClusterOverridePolicy
	image    bool
	group    string   // "" selects every template (labels) or every Deployment (image)
	clusters []string // sorted, non-empty: one rule per cluster
	tag      string
}

// key is the override's key in model.overrides: ns/name, /name for a ClusterOverridePolicy.
func (o *override) key() string { return o.ns + "/" + o.name }

func (o *override) String() string {
	if o.cluster {
		return "ClusterOverridePolicy " + o.name
	}
	return "OverridePolicy " + o.ns + "/" + o.name
}

func (o *override) selects(t *template) bool {
	if (!o.cluster && o.ns != t.key.NS) || (o.image && t.key.Kind != kindDeployment) {
		return false
	}
	return o.group == "" || o.group == t.group
}

func (o *override) appliesOn(cluster string) bool { return slices.Contains(o.clusters, cluster) }

type namespace struct {
	name     string
	labelled bool
}

type model struct {
	namespaces []*namespace
	// groups are the templates' groups: ppGroups for PropagationPolicies, cppGroups for
	// ClusterPropagationPolicies.
	groups, ppGroups, cppGroups []string
	templates                   map[tkey]*template
	// graveyard holds deleted templates: the clusters where their objects may stay.
	graveyard map[tkey]set
	policies  map[string]*policy // policy.key(): ns/name, or /name
	// lastTargets holds, per policy key, the clusters of the newest policy, kept after it is
	// deleted: a manager that has not seen the deletion yet may still use it.
	lastTargets map[string][]string
	overrides   map[string]*override // override.key(): ns/name, or /name
	seq         int
}

func newModel(namespaces, ppGroups, cppGroups []string) *model {
	m := &model{groups: append(slices.Clone(ppGroups), cppGroups...), ppGroups: ppGroups, cppGroups: cppGroups, templates: map[tkey]*template{}, graveyard: map[tkey]set{},
		policies: map[string]*policy{}, lastTargets: map[string][]string{}, overrides: map[string]*override{}}
	for _, n := range namespaces {
		m.namespaces = append(m.namespaces, &namespace{name: n, labelled: true})
	}
	return m
}

func (m *model) next() int { m.seq++; return m.seq }

func (m *model) ns(name string) *namespace {
	for _, n := range m.namespaces {
		if n.name == name {
			return n
		}
	}
	return nil
}

// policyKeys are the keys of the policies that may select a template of the group, best
// first: its pin, its namespace's PropagationPolicy, the ClusterPropagationPolicy.
func policyKeys(k tkey, group string) []string {
	return []string{k.NS + "/" + pinName(k), k.NS + "/pp-" + group, "/cpp-" + group}
}

// policyOf is the policy that claims the template: the best of those that select it.
func (m *model) policyOf(t *template) *policy {
	for _, key := range policyKeys(t.key, t.group) {
		if p := m.policies[key]; p != nil {
			return p
		}
	}
	return nil
}

// propagatingDeps reports whether a policy that may claim the template in that group
// propagates dependencies.
func (m *model) propagatingDeps(k tkey, group string) bool {
	for _, key := range policyKeys(k, group) {
		if p := m.policies[key]; p != nil && p.deps {
			return true
		}
	}
	return false
}

// refOf is the live ConfigMap a Deployment takes env from, if any.
func (m *model) refOf(d *template) *template {
	if d.key.Kind != kindDeployment || d.ref == "" {
		return nil
	}
	return m.templates[tkey{Kind: kindConfigMap, NS: d.key.NS, Name: d.ref}]
}

// needs reports whether the Deployment propagates its ConfigMap now: bound by a policy with
// propagateDeps.
func (m *model) needs(d *template) bool {
	return m.refOf(d) != nil && m.bound(d) && m.policyOf(d).deps
}

// needers are the live Deployments that propagate the ConfigMap now.
func (m *model) needers(c *template) []*template {
	var out []*template
	for _, d := range m.sortedTemplates() {
		if m.refOf(d) == c && m.needs(d) {
			out = append(out, d)
		}
	}
	return out
}

// unlink records that a Deployment may stop propagating its ConfigMap (it goes, or takes env
// from another): the ConfigMap may be left where the Deployment was.
func (m *model) unlink(d *template) {
	if c := m.refOf(d); c != nil && d.deps {
		c.dirty = true
		c.seen.addAll(d.seen.sorted()...)
	}
}

// linkDeps carries what may have happened to each Deployment since the last checkpoint over
// to the ConfigMap it takes env from, when a policy with propagateDeps may have bound it: the
// ConfigMap may have gone wherever the Deployment was, and is left there when the Deployment
// is unbound (or stops propagating it). Called after every change of the model.
func (m *model) linkDeps() {
	for _, d := range m.templates {
		c := m.refOf(d)
		if c == nil || !d.deps {
			continue
		}
		c.seen.addAll(d.seen.sorted()...)
		if d.dirty || !m.needs(d) {
			c.dirty = true
		}
	}
}

// setRef records a Deployment's new ConfigMap reference ("" for none).
func (m *model) setRef(d *template, ref string) {
	m.unlink(d)
	d.ref = ref
	m.linkDeps()
}

// lastTargetsOf are the clusters the newest policies that would select the template in that
// group targeted.
func (m *model) lastTargetsOf(k tkey, group string) []string {
	var out []string
	for _, key := range policyKeys(k, group) {
		out = append(out, m.lastTargets[key]...)
	}
	return out
}

// bound reports whether the template should be bound: its namespace is opted in and a
// policy selects it.
func (m *model) bound(t *template) bool {
	return m.ns(t.key.NS).labelled && m.policyOf(t) != nil
}

// sortedTemplates returns the live templates in a stable order.
func (m *model) sortedTemplates() []*template {
	out := slices.Collect(maps.Values(m.templates))
	slices.SortFunc(out, func(a, b *template) int { return strings.Compare(a.key.String(), b.key.String()) })
	return out
}

func (m *model) sortedPolicies() []*policy {
	out := slices.Collect(maps.Values(m.policies))
	slices.SortFunc(out, func(a, b *policy) int { return strings.Compare(a.key(), b.key()) })
	return out
}

func (m *model) sortedOverrides() []*override {
	out := slices.Collect(maps.Values(m.overrides))
	slices.SortFunc(out, func(a, b *override) int { return strings.Compare(a.key(), b.key()) })
	return out
}

// allowed reports whether a managed object of the template may stay in the cluster although
// nothing calls for it there.
func (m *model) allowed(k tkey, cluster string) bool {
	if g, ok := m.graveyard[k]; ok {
		return g[cluster]
	}
	t := m.templates[k]
	if t == nil {
		return false
	}
	return t.allow[cluster] || (t.dirty && t.seen[cluster])
}

// expectedLabels are the soak-owned labels of the template's object in the cluster: the
// template's and those of the labels overrides that apply there.
func (m *model) expectedLabels(t *template, cluster string) map[string]string {
	out := maps.Clone(t.labels)
	for _, o := range m.overrides {
		if !o.image && o.selects(t) && o.appliesOn(cluster) {
			out[overrideLabelPrefix+o.name] = cluster
		}
	}
	return out
}

// expectedImage is the Deployment's image in the cluster. At most one image OverridePolicy
// exists per namespace and one image ClusterOverridePolicy in all; ClusterOverridePolicies
// apply first (Karmada's order), so a namespace's image override wins where both apply.
func (m *model) expectedImage(t *template, cluster string) string {
	img := t.image
	for _, o := range m.sortedOverrides() { // "/name" (cluster) sorts before "ns/name"
		if o.image && o.selects(t) && o.appliesOn(cluster) {
			img = imageRepo + ":" + o.tag + "-" + cluster
		}
	}
	return img
}

// Model mutations. Each is called after the write it describes succeeded.

func (m *model) addTemplate(t *template) {
	t.seen, t.allow = set{}, set{}
	t.seen.addAll(m.lastTargetsOf(t.key, t.group)...)
	t.deps = m.propagatingDeps(t.key, t.group)
	// Created while unbound: a manager that has not caught up may still propagate it and
	// then unbind it.
	t.dirty = !m.bound(t)
	m.templates[t.key] = t
	m.linkDeps()
}

func (m *model) deleteTemplate(k tkey) {
	t := m.templates[k]
	m.unlink(t)
	g := set{}
	g.addAll(t.allow.sorted()...)
	// A template deleted while bound leaves no managed object: its policy deletes them, or
	// preserves them released. One that may have been unbound since the last checkpoint may
	// leave them, still managed, wherever it was.
	if t.dirty {
		g.addAll(t.seen.sorted()...)
	}
	m.graveyard[k] = g
	delete(m.templates, k)
	m.linkDeps()
}

func (m *model) setGroup(t *template, group string) {
	// Conservative: a manager whose policy cache lags may unbind the template on the way.
	t.dirty = true
	t.group = group
	t.labels[groupLabel] = group
	t.seen.addAll(m.lastTargetsOf(t.key, group)...)
	t.deps = t.deps || m.propagatingDeps(t.key, group)
	m.linkDeps()
}

// setPolicy records a created or edited policy. A pin takes its template from the policy that
// claimed it (preemption) without unbinding it: its objects move, none may stay behind.
func (m *model) setPolicy(p *policy) {
	m.policies[p.key()] = p
	m.lastTargets[p.key()] = slices.Clone(p.clusters)
	for _, t := range m.templates {
		if p.covers(t) {
			t.seen.addAll(p.clusters...)
			t.deps = t.deps || p.deps
		}
	}
	m.linkDeps()
}

// deletePolicy records a deleted policy: the templates it claimed are unclaimed (and a pin's
// claimed by its group's policy, if any); their bindings stay, unclaimed, and so do their
// member objects, until the templates are deleted.
func (m *model) deletePolicy(p *policy) {
	delete(m.policies, p.key())
	for _, t := range m.templates {
		if p.covers(t) {
			t.dirty = true
			// A pin's template goes back to its group's policy, which places it on its own
			// clusters (and leaves it there, managed, should that policy go too).
			if q := m.policyOf(t); q != nil {
				t.seen.addAll(q.clusters...)
				t.deps = t.deps || q.deps
			}
		}
	}
	m.linkDeps()
}

func (m *model) setLabelled(ns string, labelled bool) {
	m.ns(ns).labelled = labelled
	if !labelled {
		for _, t := range m.templates {
			if t.key.NS == ns {
				t.dirty = true
			}
		}
	}
	m.linkDeps()
}

// settled records a checkpoint at which the template was exactly as expected, with stale
// objects (all tolerated) in the clusters extras.
func (m *model) settled(t *template, extras set) {
	t.allow = set{}
	t.allow.addAll(extras.sorted()...)
	t.seen = set{}
	t.deps = false
	if p := m.policyOf(t); p != nil {
		t.seen.addAll(p.clusters...)
		t.deps = p.deps
	}
	if m.bound(t) {
		t.dirty = false
	}
	m.linkDeps()
}
