package migrate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/hostclient"
	"github.com/flotilla-io/flotilla/internal/join"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/memberobject"
)

// DefaultLease is the leader lease of Karmada's controller-manager with Karmada's defaults.
var DefaultLease = types.NamespacedName{Namespace: "karmada-system", Name: "karmada-controller-manager"}

// Options say what to migrate and how.
type Options struct {
	// Karmada reads the Karmada control plane; Host writes the host. HostConfig is the host's
	// REST config, for joining members.
	Karmada, Host client.Client
	HostConfig    *rest.Config
	// Namespaces are the namespaces whose templates (and namespaced policies) move.
	Namespaces []string
	// MemberConfigs are admin REST configs of Push members, by Cluster name.
	MemberConfigs map[string]*rest.Config
	// UseKarmadaCredentials reaches a Push member without a MemberConfig through the Karmada
	// Cluster's own credential (its secretRef in the Karmada control plane).
	UseKarmadaCredentials bool
	// KarmadaStopped skips the check of Karmada's leader lease: the user stopped its
	// controller-manager (and every karmada-agent).
	KarmadaStopped bool
	// Lease is Karmada's controller-manager leader lease (DefaultLease when empty).
	Lease types.NamespacedName
	// DryRun writes nothing.
	DryRun bool
	// HoldTimeout bounds the wait for the host hold in a namespace opted in (default 2m).
	HoldTimeout time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Action is what becomes of an object.
type Action string

// Actions.
const (
	Create    Action = "create"
	Unchanged Action = "unchanged"
	Differs   Action = "exists-differs"
	Skip      Action = "skip"
	Join      Action = "join"
	Register  Action = "register"
	OptIn     Action = "opt-in"
)

// Item is one object of the report.
type Item struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Action    Action `json:"action"`
	Reason    string `json:"reason,omitempty"`
}

// MemberObject says what becomes of one member object of a template moved.
type MemberObject struct {
	Cluster   string `json:"cluster"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Fate is adopt (Karmada made it for this template), create (absent), ours (already
	// Flotilla's), conflict (someone else's: Reason says whose) or unknown (the member was not
	// reachable: no kubeconfig).
	Fate   string `json:"fate"`
	Reason string `json:"reason,omitempty"`
}

// Report is what a run did, or would do (DryRun).
type Report struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	DryRun     bool           `json:"dryRun"`
	Started    time.Time      `json:"started"`
	Finished   time.Time      `json:"finished"`
	Items      []Item         `json:"items"`
	Members    []MemberObject `json:"memberObjects,omitempty"`
	// PullCommands are what to run for each Pull member, in the member.
	PullCommands []string `json:"pullCommands,omitempty"`
}

// Count returns how many items have the action.
func (r *Report) Count(a Action) int {
	n := 0
	for _, it := range r.Items {
		if it.Action == a {
			n++
		}
	}
	return n
}

// ErrKarmadaRunning is returned while Karmada's controller-manager holds its lease.
var ErrKarmadaRunning = errors.New("karmada's controller-manager is running")

// served are the kinds Flotilla serves that move, cluster-scoped ones first, in the order
// they are created: what a policy or template depends on comes before it.
var served = []schema.GroupVersionKind{
	{Group: "config.karmada.io", Version: "v1alpha1", Kind: "ResourceInterpreterCustomization"},
	{Group: "config.karmada.io", Version: "v1alpha1", Kind: "ResourceInterpreterWebhookConfiguration"},
	{Group: "policy.karmada.io", Version: "v1alpha1", Kind: "ClusterTaintPolicy"},
	{Group: "policy.karmada.io", Version: "v1alpha1", Kind: "ClusterOverridePolicy"},
	{Group: "policy.karmada.io", Version: "v1alpha1", Kind: "OverridePolicy"},
	{Group: "policy.karmada.io", Version: "v1alpha1", Kind: "ClusterPropagationPolicy"},
	{Group: "policy.karmada.io", Version: "v1alpha1", Kind: "PropagationPolicy"},
	{Group: "autoscaling.karmada.io", Version: "v1alpha1", Kind: "CronFederatedHPA"},
	{Group: "autoscaling.karmada.io", Version: "v1alpha1", Kind: "FederatedHPA"},
	{Group: "networking.karmada.io", Version: "v1alpha1", Kind: "MultiClusterService"},
}

// notServed are Karmada kinds Flotilla does not serve yet (or that are one-off actions, or
// that it serves but does not migrate yet), with the reason each is skipped.
var notServed = []struct {
	gvk    schema.GroupVersionKind
	reason string
}{
	{schema.GroupVersionKind{Group: "policy.karmada.io", Version: "v1alpha1", Kind: "FederatedResourceQuota"}, "served, but not migrated yet: delete Karmada's member ResourceQuotas of that name, then create it in Flotilla"},
	{schema.GroupVersionKind{Group: "networking.karmada.io", Version: "v1alpha1", Kind: "MultiClusterIngress"}, "not served by Flotilla yet"},
	{schema.GroupVersionKind{Group: "remedy.karmada.io", Version: "v1alpha1", Kind: "Remedy"}, "not served by Flotilla yet"},
	{schema.GroupVersionKind{Group: "apps.karmada.io", Version: "v1alpha1", Kind: "WorkloadRebalancer"}, "a one-off action, not state: run it again in Flotilla if needed"},
}

// Run migrates (or, with DryRun, plans) as o says, and returns the report. An error after
// some writes leaves them in place: run it again once the cause is fixed.
func Run(ctx context.Context, o Options) (*Report, error) {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	if o.Lease.Name == "" {
		o.Lease = DefaultLease
	}
	if o.HoldTimeout == 0 {
		o.HoldTimeout = 2 * time.Minute
	}
	r := &Report{APIVersion: "migrate.flotilla.io/v1alpha1", Kind: "MigrationReport", DryRun: o.DryRun, Started: now().UTC()}
	if !o.KarmadaStopped {
		if err := checkStopped(ctx, o.Karmada, o.Lease, now()); err != nil {
			return nil, err
		}
	}
	hostID, err := hostclient.HostID(ctx, o.Host)
	if err != nil {
		return nil, err
	}
	m := &run{o: o, r: r, hostID: hostID}
	for _, step := range []func(context.Context) error{m.namespaces, m.clusters, m.policies, m.templates} {
		if err := step(ctx); err != nil {
			r.Finished = now().UTC()
			return r, err
		}
	}
	r.Finished = now().UTC()
	return r, nil
}

// checkStopped refuses while the lease's holder renewed it within its duration (and a
// little more, for clock skew).
func checkStopped(ctx context.Context, karmada client.Reader, key types.NamespacedName, now time.Time) error {
	lease := &coordinationv1.Lease{}
	if err := karmada.Get(ctx, key, lease); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("cannot tell whether Karmada's controller-manager is stopped: its leader lease %s is not in the Karmada control plane; "+
				"name it with --karmada-lease NAMESPACE/NAME, or stop Karmada's controller-manager and agents and pass --karmada-stopped", key)
		}
		return fmt.Errorf("read Karmada's leader lease %s: %w", key, err)
	}
	s := lease.Spec
	if s.HolderIdentity == nil || *s.HolderIdentity == "" || s.RenewTime == nil {
		return nil
	}
	d := 15 * time.Second
	if s.LeaseDurationSeconds != nil {
		d = time.Duration(*s.LeaseDurationSeconds) * time.Second
	}
	if age := now.Sub(s.RenewTime.Time); age < d+10*time.Second {
		return fmt.Errorf("%w: %s renewed its leader lease %s %s ago; stop it (and every karmada-agent) first, so that two control planes never write the same member objects: "+
			"kubectl -n %s scale deployment karmada-controller-manager --replicas=0",
			ErrKarmadaRunning, *s.HolderIdentity, key, age.Round(time.Second), key.Namespace)
	}
	return nil
}

// run is one migration.
type run struct {
	o      Options
	r      *Report
	hostID string
}

func (m *run) add(it Item) { m.r.Items = append(m.r.Items, it) }

func (m *run) moved(ns string) bool { return slices.Contains(m.o.Namespaces, ns) }

// namespaces opts the namespaces in, and waits for the hold in each.
func (m *run) namespaces(ctx context.Context) error {
	for _, name := range m.o.Namespaces {
		it, err := optIn(ctx, m.o.Host, name, true, m.o.DryRun)
		if err != nil {
			return err
		}
		m.add(it)
	}
	if m.o.DryRun {
		return nil
	}
	for _, name := range m.o.Namespaces {
		if err := waitForHold(ctx, m.o.Host, name, m.o.HoldTimeout); err != nil {
			return err
		}
	}
	return nil
}

// optIn reads namespace name in the host and, unless it is opted in already, opts it in
// (creating it when absent) when allowed, writing nothing on a dry run. Not allowed, a namespace
// that is not opted in is an error saying how to opt it in.
func optIn(ctx context.Context, host client.Client, name string, allowed, dryRun bool) (Item, error) {
	it := Item{Kind: "Namespace", Name: name}
	ns := &corev1.Namespace{}
	err := host.Get(ctx, types.NamespacedName{Name: name}, ns)
	switch {
	case err == nil && ns.Labels[wellknown.PropagationLabel] == wellknown.PropagationEnabled:
		it.Action, it.Reason = Unchanged, "opted in already"
		return it, nil
	case err != nil && !apierrors.IsNotFound(err):
		return it, fmt.Errorf("read namespace %s in the host: %w", name, err)
	case !allowed:
		return it, fmt.Errorf("namespace %s is not opted in on the host: label it %s=%s (every template in it is then held on the host), or pass --opt-in",
			name, wellknown.PropagationLabel, wellknown.PropagationEnabled)
	}
	it.Action = OptIn
	if dryRun {
		return it, nil
	}
	if apierrors.IsNotFound(err) {
		ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{wellknown.PropagationLabel: wellknown.PropagationEnabled}}}
		if err := host.Create(ctx, ns); err != nil {
			return it, fmt.Errorf("create namespace %s in the host: %w", name, err)
		}
		return it, nil
	}
	patch := client.MergeFrom(ns.DeepCopy())
	metav1.SetMetaDataLabel(&ns.ObjectMeta, wellknown.PropagationLabel, wellknown.PropagationEnabled)
	if err := host.Patch(ctx, ns, patch); err != nil {
		return it, fmt.Errorf("opt namespace %s in: %w", name, err)
	}
	return it, nil
}

// waitForHold waits until the host refuses a Pod in the namespace for the hold (a server
// dry run: nothing is created).
func waitForHold(ctx context.Context, host client.Client, ns string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "flotilla-hold-probe"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "probe"}}}}
		err := host.Create(ctx, probe, client.DryRunAll)
		if err != nil && strings.Contains(err.Error(), wellknown.PropagationLabel) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("namespace %s: the host hold is not in force after %s (is Flotilla's manager running?); no template was moved", ns, timeout)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// clusters joins the Push members and gives the commands for the Pull ones.
func (m *run) clusters(ctx context.Context) error {
	list := &clusterv1alpha1.ClusterList{}
	if err := m.o.Karmada.List(ctx, list); err != nil {
		return fmt.Errorf("list Karmada's Clusters: %w", err)
	}
	for i := range list.Items {
		kc := &list.Items[i]
		it := Item{Kind: "Cluster", Name: kc.Name}
		cur := &clusterv1alpha1.Cluster{}
		err := m.o.Host.Get(ctx, types.NamespacedName{Name: kc.Name}, cur)
		if err == nil {
			it.Action, it.Reason = Unchanged, "a Cluster of that name is in the host already"
			m.add(it)
			continue
		}
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("read Cluster %s in the host: %w", kc.Name, err)
		}
		if kc.Spec.SyncMode == clusterv1alpha1.Pull {
			it.Action, it.Reason = Register, "Pull member: run the commands below in it"
			m.add(it)
			m.r.PullCommands = append(m.r.PullCommands, pullCommands(kc.Name)...)
			continue
		}
		cfg, how, err := m.memberConfig(ctx, kc)
		if err != nil {
			return err
		}
		if cfg == nil {
			it.Action, it.Reason = Skip, how
			m.add(it)
			continue
		}
		it.Action, it.Reason = Join, how
		m.add(it)
		if m.o.DryRun {
			continue
		}
		o := join.Options{Name: kc.Name, Host: m.o.HostConfig, Member: cfg, Provider: kc.Spec.Provider, Region: kc.Spec.Region}
		if _, err := join.Join(ctx, o); err != nil {
			return fmt.Errorf("join Cluster %s: %w", kc.Name, err)
		}
		if err := m.keepClusterFields(ctx, kc); err != nil {
			return err
		}
	}
	return nil
}

// memberConfig returns an admin config of a Push member and how it was had, or nil and why
// not.
func (m *run) memberConfig(ctx context.Context, kc *clusterv1alpha1.Cluster) (*rest.Config, string, error) {
	if cfg := m.o.MemberConfigs[kc.Name]; cfg != nil {
		return cfg, "Push member: joined with a fresh least-privilege credential, through the kubeconfig given", nil
	}
	if !m.o.UseKarmadaCredentials {
		return nil, "no kubeconfig for it: pass --member-kubeconfig " + kc.Name + "=FILE (or --use-karmada-credentials)", nil
	}
	if kc.Spec.SecretRef == nil {
		return nil, "no kubeconfig for it (--member-kubeconfig " + kc.Name + "=FILE), and the Karmada Cluster has no secretRef to reach it with", nil
	}
	s := &corev1.Secret{}
	if err := m.o.Karmada.Get(ctx, types.NamespacedName{Namespace: kc.Spec.SecretRef.Namespace, Name: kc.Spec.SecretRef.Name}, s); err != nil {
		return nil, "", fmt.Errorf("read the credential of Karmada Cluster %s: %w", kc.Name, err)
	}
	cfg, err := member.RESTConfig(kc, s)
	if err != nil {
		return nil, "", fmt.Errorf("Karmada Cluster %s: %w", kc.Name, err)
	}
	return cfg, "Push member: joined with a fresh least-privilege credential, made through Karmada's credential for it", nil
}

// keepClusterFields copies what users set on a Karmada Cluster onto the joined one: labels,
// taints and zones.
func (m *run) keepClusterFields(ctx context.Context, kc *clusterv1alpha1.Cluster) error {
	c := &clusterv1alpha1.Cluster{}
	if err := m.o.Host.Get(ctx, types.NamespacedName{Name: kc.Name}, c); err != nil {
		return err
	}
	patch := client.MergeFrom(c.DeepCopy())
	for k, v := range kc.Labels {
		metav1.SetMetaDataLabel(&c.ObjectMeta, k, v)
	}
	c.Spec.Taints = kc.Spec.Taints
	if len(kc.Spec.Zones) > 0 {
		c.Spec.Zones = kc.Spec.Zones
	}
	return m.o.Host.Patch(ctx, c, patch)
}

// pullCommands are what a Pull member needs to move: Karmada's agent out, Flotilla's in.
func pullCommands(name string) []string {
	return []string{
		fmt.Sprintf("# %s (Pull): on the host, make a bootstrap token; then, with the member's kubeconfig:", name),
		fmt.Sprintf("kubectl flotilla token create %s", name),
		"kubectl -n karmada-system scale deployment karmada-agent --replicas=0",
		fmt.Sprintf("kubectl flotilla register %s --host HOST_URL --token TOKEN", name),
	}
}

// policies copies every served kind but the templates.
func (m *run) policies(ctx context.Context) error {
	for _, gvk := range served {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := m.o.Karmada.List(ctx, list); err != nil {
			if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
				continue // this Karmada does not serve the kind: nothing to move
			}
			return fmt.Errorf("list Karmada's %s: %w", gvk.Kind, err)
		}
		for i := range list.Items {
			obj := &list.Items[i]
			if ns := obj.GetNamespace(); ns != "" && !m.moved(ns) {
				m.add(Item{Kind: gvk.Kind, Namespace: ns, Name: obj.GetName(), Action: Skip, Reason: "its namespace is not moved (--namespaces)"})
				continue
			}
			if err := m.put(ctx, Copy(obj)); err != nil {
				return err
			}
		}
	}
	for _, ns := range notServed {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(ns.gvk.GroupVersion().WithKind(ns.gvk.Kind + "List"))
		if err := m.o.Karmada.List(ctx, list); err != nil {
			continue // not served by this Karmada either
		}
		for _, obj := range list.Items {
			m.add(Item{Kind: ns.gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), Action: Skip, Reason: ns.reason})
		}
	}
	return nil
}

// templates copies the templates of the namespaces moved that Karmada's bindings name, and
// says what becomes of their member objects.
func (m *run) templates(ctx context.Context) error {
	for _, ns := range m.o.Namespaces {
		rbs := &workv1alpha2.ResourceBindingList{}
		if err := m.o.Karmada.List(ctx, rbs, client.InNamespace(ns)); err != nil {
			return fmt.Errorf("list Karmada's ResourceBindings in %s: %w", ns, err)
		}
		slices.SortFunc(rbs.Items, func(a, b workv1alpha2.ResourceBinding) int { return strings.Compare(a.Name, b.Name) })
		for i := range rbs.Items {
			rb := &rbs.Items[i]
			ref := rb.Spec.Resource
			obj := &unstructured.Unstructured{}
			obj.SetAPIVersion(ref.APIVersion)
			obj.SetKind(ref.Kind)
			if err := m.o.Karmada.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, obj); err != nil {
				if apierrors.IsNotFound(err) {
					m.add(Item{Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name, Action: Skip, Reason: "its binding names it, but it is not in the Karmada control plane"})
					continue
				}
				return fmt.Errorf("read template %s %s/%s: %w", ref.Kind, ref.Namespace, ref.Name, err)
			}
			tmpl := Template(obj)
			m.preview(ctx, tmpl, rb)
			if err := m.put(ctx, tmpl); err != nil {
				return err
			}
		}
	}
	return nil
}

// preview says what becomes of the template's member objects in the clusters Karmada placed
// it on.
func (m *run) preview(ctx context.Context, tmpl *unstructured.Unstructured, rb *workv1alpha2.ResourceBinding) {
	desired := tmpl.DeepCopy()
	for _, tc := range rb.Spec.Clusters {
		mo := MemberObject{Cluster: tc.Name, Kind: tmpl.GetKind(), Namespace: tmpl.GetNamespace(), Name: tmpl.GetName()}
		cfg := m.o.MemberConfigs[tc.Name]
		if cfg == nil {
			mo.Fate, mo.Reason = "unknown", "no kubeconfig for the member"
			m.r.Members = append(m.r.Members, mo)
			continue
		}
		mo.Fate, mo.Reason = fate(ctx, cfg, desired, m.hostID)
		m.r.Members = append(m.r.Members, mo)
	}
}

// fate reads the member object of desired and says what the execution controller will do
// with it.
func fate(ctx context.Context, cfg *rest.Config, desired *unstructured.Unstructured, hostID string) (string, string) {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return "unknown", err.Error()
	}
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(desired.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(desired), cur); err != nil {
		if apierrors.IsNotFound(err) {
			return "create", ""
		}
		return "unknown", err.Error()
	}
	switch memberobject.Owner(cur, desired, hostID) {
	case memberobject.Ours:
		return "ours", "Flotilla manages it already"
	case memberobject.KarmadaLeftover:
		return "adopt", "Karmada made it for this template (same uid " + string(cur.GetUID()) + ", kept)"
	case memberobject.Unmanaged:
		return "conflict", "not managed by Karmada: a user's or another tool's"
	default:
		return "conflict", "managed by another control plane, or made by Karmada for another template"
	}
}

// put creates obj in the host unless an object of its name is there already.
func (m *run) put(ctx context.Context, obj *unstructured.Unstructured) error {
	it := Item{Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(obj.GroupVersionKind())
	err := m.o.Host.Get(ctx, client.ObjectKeyFromObject(obj), cur)
	switch {
	case err == nil && Same(cur, obj):
		it.Action = Unchanged
	case err == nil:
		it.Action, it.Reason = Differs, "an object of that name is in the host already; left as it is"
	case meta.IsNoMatchError(err):
		it.Action, it.Reason = Skip, "the host does not serve its kind: install its CRD in the host first"
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("read %s %s in the host: %w", obj.GetKind(), client.ObjectKeyFromObject(obj), err)
	default:
		it.Action = Create
		if !m.o.DryRun {
			if err := m.o.Host.Create(ctx, obj); err != nil {
				return fmt.Errorf("create %s %s in the host: %w", obj.GetKind(), client.ObjectKeyFromObject(obj), err)
			}
		}
	}
	m.add(it)
	return nil
}
