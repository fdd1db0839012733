package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// workloadOp is one kind of change to templates and policies. It returns false when it does
// not apply now (nothing to delete, say); the loop then draws another.
type workloadOp struct {
	name   string
	weight int
	run    func(s *soaker) bool
}

var workloadOps = []workloadOp{
	{"create template", 14, (*soaker).createTemplate},
	{"delete template", 6, (*soaker).deleteTemplate},
	{"edit image", 6, (*soaker).editImage},
	{"scale", 6, (*soaker).scale},
	{"edit labels/annotations (metadata only)", 10, (*soaker).editMetadata},
	{"edit ConfigMap data / Service port", 5, (*soaker).editSpec},
	{"move template to another group", 4, (*soaker).moveGroup},
	{"edit a Deployment's ConfigMap (envFrom)", 4, (*soaker).editRef},
	{"create policy", 4, (*soaker).createPolicy},
	{"create cluster policy", 2, (*soaker).createClusterPolicy},
	{"pin template (preempting policy)", 2, (*soaker).pinTemplate},
	{"edit policy clusterNames", 5, (*soaker).editPolicyClusters},
	{"edit policy replica scheduling", 4, (*soaker).editPolicyMode},
	{"delete policy", 2, (*soaker).deletePolicy},
	{"create labels override", 3, (*soaker).createLabelsOverride},
	{"create image override", 2, (*soaker).createImageOverride},
	{"create cluster labels override", 1, (*soaker).createClusterLabelsOverride},
	{"create cluster image override", 1, (*soaker).createClusterImageOverride},
	{"edit override clusters", 2, (*soaker).editOverride},
	{"delete override", 3, (*soaker).deleteOverride},
}

// randomOp runs one workload op drawn by weight, and returns its name.
func (s *soaker) randomOp() string {
	total := 0
	for _, op := range workloadOps {
		total += op.weight
	}
	for range 20 {
		n := s.rng.IntN(total)
		for _, op := range workloadOps {
			if n -= op.weight; n < 0 {
				if op.run(s) {
					return op.name
				}
				break
			}
		}
	}
	return ""
}

func pick[T any](rng *rand.Rand, items []T) T { return items[rng.IntN(len(items))] }

// randomClusters is a random non-empty subset of the members, sorted.
func randomClusters(rng *rand.Rand) []string {
	mask := 1 + rng.IntN(7)
	var out []string
	for i, c := range memberNames {
		if mask&(1<<i) != 0 {
			out = append(out, c)
		}
	}
	return out
}

func randomMode(rng *rand.Rand) string {
	return pick(rng, []string{modeDefault, modeDuplicated, modeDivided, modeDivided})
}

func (s *soaker) randomTemplate(k ...kind) *template {
	var ts []*template
	for _, t := range s.m.sortedTemplates() {
		if len(k) == 0 || slices.Contains(k, t.key.Kind) {
			ts = append(ts, t)
		}
	}
	if len(ts) == 0 {
		return nil
	}
	return pick(s.rng, ts)
}

// newTemplate draws a new template of the namespace.
func (s *soaker) newTemplate(ns string) *template {
	k := pick(s.rng, []kind{kindDeployment, kindDeployment, kindConfigMap, kindConfigMap, kindService})
	n := s.m.next()
	prefix := map[kind]string{kindDeployment: "d", kindConfigMap: "cm", kindService: "svc"}[k]
	name := fmt.Sprintf("%s-%d", prefix, n)
	group := pick(s.rng, s.m.groups)
	t := &template{key: tkey{Kind: k, NS: ns, Name: name}, group: group,
		labels: map[string]string{appLabel: name, groupLabel: group, labelPrefix + "tier": pick(s.rng, []string{"web", "db", "cache"}),
			labelPrefix + "rev": "1"},
		annotations: map[string]string{labelPrefix + "note": "created " + strconv.Itoa(n)}}
	switch k {
	case kindDeployment:
		t.replicas = int32(s.rng.IntN(7)) // 0..6: zero is a Duplicated corner
		t.image = fmt.Sprintf("%s:v%d", imageRepo, 1+s.rng.IntN(9))
		if s.rng.IntN(2) == 0 {
			t.ref = s.randomConfigMap(ns)
		}
	case kindConfigMap:
		t.data = "v" + strconv.Itoa(n)
	case kindService:
		t.port = int32(80 + s.rng.IntN(20))
	}
	return t
}

// randomConfigMap is the name of a live ConfigMap template of the namespace, or "".
func (s *soaker) randomConfigMap(ns string) string {
	var names []string
	for _, t := range s.m.sortedTemplates() {
		if t.key.Kind == kindConfigMap && t.key.NS == ns {
			names = append(names, t.key.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return pick(s.rng, names)
}

// editRef makes a Deployment take env from another ConfigMap of its namespace, or from none:
// with propagateDeps, the ConfigMap it names goes where it goes.
func (s *soaker) editRef() bool {
	t := s.randomTemplate(kindDeployment)
	if t == nil {
		return false
	}
	ref := ""
	if t.ref == "" || s.rng.IntN(3) > 0 {
		ref = s.randomConfigMap(t.key.NS)
	}
	if ref == t.ref {
		return false
	}
	var envFrom any // null removes it
	if ref != "" {
		envFrom = []any{map[string]any{"configMapRef": map[string]any{"name": ref}}}
	}
	s.patch(t, types.StrategicMergePatchType, map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": "app", "envFrom": envFrom}}}}}})
	s.m.setRef(t, ref)
	s.journal("envFrom %s ConfigMap %q", t.key, ref)
	return true
}

func (s *soaker) createTemplate() bool {
	if len(s.m.templates) >= s.cfg.maxTemplates {
		return false
	}
	t := s.newTemplate(pick(s.rng, s.m.namespaces).name)
	s.must("create "+t.key.String(), func(ctx context.Context) error {
		err := s.host.Create(ctx, t.object())
		if apierrors.IsAlreadyExists(err) {
			return nil // an earlier attempt got through
		}
		return err
	})
	s.m.addTemplate(t)
	s.journal("create %s group=%s %s", t.key, t.group, t.describe())
	return true
}

func (t *template) describe() string {
	switch t.key.Kind {
	case kindDeployment:
		return fmt.Sprintf("replicas=%d image=%s envFrom=%q", t.replicas, t.image, t.ref)
	case kindConfigMap:
		return "data=" + t.data
	default:
		return fmt.Sprintf("port=%d", t.port)
	}
}

func (s *soaker) deleteTemplate() bool {
	if len(s.m.templates) <= s.cfg.minTemplates {
		return false
	}
	t := s.randomTemplate()
	s.must("delete "+t.key.String(), func(ctx context.Context) error {
		return client.IgnoreNotFound(s.host.Delete(ctx, t.key.emptyObject()))
	})
	s.m.deleteTemplate(t.key)
	s.journal("delete %s", t.key)
	return true
}

// patch applies a patch of the given type to the template.
func (s *soaker) patch(t *template, pt types.PatchType, body any) {
	data, err := json.Marshal(body)
	if err != nil {
		s.t.Fatal(err)
	}
	s.must("patch "+t.key.String(), func(ctx context.Context) error {
		return s.host.Patch(ctx, t.key.emptyObject(), client.RawPatch(pt, data))
	})
}

func (s *soaker) editImage() bool {
	t := s.randomTemplate(kindDeployment)
	if t == nil {
		return false
	}
	img := t.image
	for img == t.image {
		img = fmt.Sprintf("%s:v%d", imageRepo, 1+s.rng.IntN(9))
	}
	s.patch(t, types.StrategicMergePatchType, map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": "app", "image": img}}}}}})
	t.image = img
	s.journal("image %s %s", t.key, img)
	return true
}

func (s *soaker) scale() bool {
	t := s.randomTemplate(kindDeployment)
	if t == nil {
		return false
	}
	n := t.replicas
	for n == t.replicas {
		n = int32(s.rng.IntN(7))
	}
	s.patch(t, types.MergePatchType, map[string]any{"spec": map[string]any{"replicas": n}})
	t.replicas = n
	s.journal("scale %s %d", t.key, n)
	return true
}

// editMetadata changes labels or annotations only: no generation bump.
func (s *soaker) editMetadata() bool {
	t := s.randomTemplate()
	if t == nil {
		return false
	}
	labels, annotations := map[string]any{}, map[string]any{}
	const extra = labelPrefix + "extra"
	const note = labelPrefix + "note"
	var what string
	switch s.rng.IntN(4) {
	case 0:
		rev, _ := strconv.Atoi(t.labels[labelPrefix+"rev"])
		v := strconv.Itoa(rev + 1)
		labels[labelPrefix+"rev"] = v
		t.labels[labelPrefix+"rev"] = v
		what = "label rev=" + v
	case 1:
		if _, ok := t.labels[extra]; ok {
			labels[extra] = nil
			delete(t.labels, extra)
			what = "remove label extra"
		} else {
			v := "x" + strconv.Itoa(s.m.next())
			labels[extra] = v
			t.labels[extra] = v
			what = "add label extra=" + v
		}
	case 2:
		if _, ok := t.annotations[note]; ok && s.rng.IntN(2) == 0 {
			annotations[note] = nil
			delete(t.annotations, note)
			what = "remove annotation note"
		} else {
			v := "edited " + strconv.Itoa(s.m.next())
			annotations[note] = v
			t.annotations[note] = v
			what = "annotation note=" + v
		}
	default:
		v := pick(s.rng, []string{"web", "db", "cache", "edge"})
		labels[labelPrefix+"tier"] = v
		t.labels[labelPrefix+"tier"] = v
		v2 := "a" + strconv.Itoa(s.m.next())
		annotations[labelPrefix+"audit"] = v2
		t.annotations[labelPrefix+"audit"] = v2
		what = "label tier=" + v + " annotation audit=" + v2
	}
	md := map[string]any{}
	if len(labels) > 0 {
		md["labels"] = labels
	}
	if len(annotations) > 0 {
		md["annotations"] = annotations
	}
	s.patch(t, types.MergePatchType, map[string]any{"metadata": md})
	s.journal("metadata %s %s", t.key, what)
	return true
}

func (s *soaker) editSpec() bool {
	t := s.randomTemplate(kindConfigMap, kindService)
	if t == nil {
		return false
	}
	if t.key.Kind == kindConfigMap {
		v := "v" + strconv.Itoa(s.m.next())
		s.patch(t, types.MergePatchType, map[string]any{"data": map[string]any{"key": v}})
		t.data = v
		s.journal("data %s %s", t.key, v)
		return true
	}
	p := t.port
	for p == t.port {
		p = int32(80 + s.rng.IntN(20))
	}
	s.patch(t, types.MergePatchType, map[string]any{"spec": map[string]any{"ports": []any{
		map[string]any{"name": "http", "port": p, "targetPort": 8080, "protocol": "TCP"}}}})
	t.port = p
	s.journal("port %s %d", t.key, p)
	return true
}

func (s *soaker) moveGroup() bool {
	t := s.randomTemplate()
	if t == nil {
		return false
	}
	g := t.group
	for g == t.group {
		g = pick(s.rng, s.m.groups)
	}
	s.patch(t, types.MergePatchType, map[string]any{"metadata": map[string]any{"labels": map[string]any{groupLabel: g}}})
	s.m.setGroup(t, g)
	s.journal("move %s to group %s", t.key, g)
	return true
}

// missingPolicies are the namespace/group pairs without a policy.
func (s *soaker) missingPolicies() []*policy {
	var out []*policy
	for _, n := range s.m.namespaces {
		for _, g := range s.m.ppGroups {
			if p := (&policy{ns: n.name, group: g}); s.m.policies[p.key()] == nil {
				out = append(out, p)
			}
		}
	}
	return out
}

func (s *soaker) createPolicy() bool {
	missing := s.missingPolicies()
	if len(missing) == 0 {
		return false
	}
	s.createPolicyOf(pick(s.rng, missing))
	return true
}

// createClusterPolicy creates the ClusterPropagationPolicy of a group that has none.
func (s *soaker) createClusterPolicy() bool {
	var missing []*policy
	for _, g := range s.m.cppGroups {
		if p := (&policy{cluster: true, group: g}); s.m.policies[p.key()] == nil {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return false
	}
	s.createPolicyOf(pick(s.rng, missing))
	return true
}

// maxPins bounds the pins: a pin outlives its template, until deleted.
const maxPins = 4

// pinTemplate creates a pin for a template that has none: a policy naming it, which takes it
// from any other policy.
func (s *soaker) pinTemplate() bool {
	pins := 0
	for _, p := range s.m.policies {
		if p.pin != nil {
			pins++
		}
	}
	if pins >= maxPins {
		return false
	}
	t := s.randomTemplate()
	if t == nil {
		return false
	}
	k := t.key
	p := &policy{ns: k.NS, pin: &k}
	if s.m.policies[p.key()] != nil {
		return false
	}
	s.createPolicyOf(p)
	return true
}

func (s *soaker) createPolicyOf(p *policy) {
	p.clusters, p.mode, p.preserve, p.deps = randomClusters(s.rng), randomMode(s.rng), s.rng.IntN(4) == 0, s.rng.IntN(3) == 0
	s.writePolicy(p, true)
	s.journal("create %s clusters=%v mode=%q preserveResourcesOnDeletion=%t propagateDeps=%t", p, p.clusters, p.mode, p.preserve, p.deps)
}

// writePolicy creates the policy or updates its placement.
func (s *soaker) writePolicy(p *policy, create bool) {
	if create {
		s.must("create "+p.String(), func(ctx context.Context) error {
			err := s.host.Create(ctx, p.object())
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		})
	} else {
		s.must("update "+p.String(), func(ctx context.Context) error {
			obj := p.emptyObject()
			if err := s.host.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return err
			}
			switch o := obj.(type) {
			case *policyv1alpha1.PropagationPolicy:
				o.Spec.Placement = p.placement()
			case *policyv1alpha1.ClusterPropagationPolicy:
				o.Spec.Placement = p.placement()
			}
			return s.host.Update(ctx, obj)
		})
	}
	s.m.setPolicy(p)
}

func (s *soaker) randomPolicy() *policy {
	ps := s.m.sortedPolicies()
	if len(ps) == 0 {
		return nil
	}
	return pick(s.rng, ps)
}

func (s *soaker) editPolicyClusters() bool {
	old := s.randomPolicy()
	if old == nil {
		return false
	}
	p := *old
	for slices.Equal(p.clusters, old.clusters) {
		p.clusters = randomClusters(s.rng)
	}
	s.writePolicy(&p, false)
	s.journal("edit %s clusters=%v", &p, p.clusters)
	return true
}

func (s *soaker) editPolicyMode() bool {
	old := s.randomPolicy()
	if old == nil {
		return false
	}
	p := *old
	for p.mode == old.mode {
		p.mode = randomMode(s.rng)
	}
	s.writePolicy(&p, false)
	s.journal("edit %s mode=%q", &p, p.mode)
	return true
}

func (s *soaker) deletePolicy() bool {
	p := s.randomPolicy()
	if p == nil {
		return false
	}
	s.must("delete "+p.String(), func(ctx context.Context) error {
		return client.IgnoreNotFound(s.host.Delete(ctx, p.emptyObject()))
	})
	s.m.deletePolicy(p)
	s.journal("delete %s", p)
	return true
}

func (s *soaker) writeOverride(o *override, create bool) {
	if create {
		s.must("create "+o.String(), func(ctx context.Context) error {
			err := s.host.Create(ctx, o.object())
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		})
	} else {
		s.must("update "+o.String(), func(ctx context.Context) error {
			obj := o.emptyObject()
			if err := s.host.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return err
			}
			switch x := obj.(type) {
			case *policyv1alpha1.OverridePolicy:
				x.Spec = o.spec()
			case *policyv1alpha1.ClusterOverridePolicy:
				x.Spec = o.spec()
			}
			return s.host.Update(ctx, obj)
		})
	}
	s.m.overrides[o.key()] = o
}

func (s *soaker) randomGroupOrAll() string {
	if s.rng.IntN(3) == 0 {
		return ""
	}
	return pick(s.rng, s.m.groups)
}

func (s *soaker) createLabelsOverride() bool {
	if s.countOverrides(false) >= 2*len(s.m.namespaces) {
		return false
	}
	n := s.m.next()
	o := &override{ns: pick(s.rng, s.m.namespaces).name, name: "ol-" + strconv.Itoa(n), group: s.randomGroupOrAll(),
		clusters: randomClusters(s.rng)}
	s.writeOverride(o, true)
	s.journal("create labels %s group=%q clusters=%v", o, o.group, o.clusters)
	return true
}

// countOverrides counts the ClusterOverridePolicies (cluster) or the OverridePolicies.
func (s *soaker) countOverrides(cluster bool) int {
	n := 0
	for _, o := range s.m.overrides {
		if o.cluster == cluster {
			n++
		}
	}
	return n
}

// createClusterLabelsOverride creates a labels ClusterOverridePolicy: it selects the
// templates of a group, or all, in every namespace.
func (s *soaker) createClusterLabelsOverride() bool {
	if s.countOverrides(true) >= 2 {
		return false
	}
	n := s.m.next()
	o := &override{cluster: true, name: "col-" + strconv.Itoa(n), group: s.randomGroupOrAll(), clusters: randomClusters(s.rng)}
	s.writeOverride(o, true)
	s.journal("create labels %s group=%q clusters=%v", o, o.group, o.clusters)
	return true
}

// createClusterImageOverride creates the image ClusterOverridePolicy, when there is none: it
// applies before the namespaces' image OverridePolicies, which win where both apply.
func (s *soaker) createClusterImageOverride() bool {
	for _, o := range s.m.overrides {
		if o.cluster && o.image {
			return false
		}
	}
	n := s.m.next()
	o := &override{cluster: true, name: "coi-" + strconv.Itoa(n), image: true, group: s.randomGroupOrAll(),
		clusters: randomClusters(s.rng), tag: "cov" + strconv.Itoa(n)}
	s.writeOverride(o, true)
	s.journal("create image %s group=%q clusters=%v tag=%s", o, o.group, o.clusters, o.tag)
	return true
}

func (s *soaker) createImageOverride() bool {
	var free []string
	for _, n := range s.m.namespaces {
		has := false
		for _, o := range s.m.overrides {
			has = has || (o.image && !o.cluster && o.ns == n.name)
		}
		if !has {
			free = append(free, n.name)
		}
	}
	if len(free) == 0 {
		return false
	}
	n := s.m.next()
	o := &override{ns: pick(s.rng, free), name: "oi-" + strconv.Itoa(n), image: true, group: s.randomGroupOrAll(),
		clusters: randomClusters(s.rng), tag: "ov" + strconv.Itoa(n)}
	s.writeOverride(o, true)
	s.journal("create image %s group=%q clusters=%v tag=%s", o, o.group, o.clusters, o.tag)
	return true
}

func (s *soaker) randomOverride() *override {
	os := s.m.sortedOverrides()
	if len(os) == 0 {
		return nil
	}
	return pick(s.rng, os)
}

func (s *soaker) editOverride() bool {
	old := s.randomOverride()
	if old == nil {
		return false
	}
	o := *old
	for slices.Equal(o.clusters, old.clusters) {
		o.clusters = randomClusters(s.rng)
	}
	s.writeOverride(&o, false)
	s.journal("edit %s clusters=%v", &o, o.clusters)
	return true
}

func (s *soaker) deleteOverride() bool {
	o := s.randomOverride()
	if o == nil {
		return false
	}
	s.must("delete "+o.String(), func(ctx context.Context) error {
		return client.IgnoreNotFound(s.host.Delete(ctx, o.emptyObject()))
	})
	delete(s.m.overrides, o.key())
	s.journal("delete %s", o)
	return true
}
