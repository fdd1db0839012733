package fleetview

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers/detector"
	"github.com/flotilla-io/flotilla/internal/bindings"
)

// Ref names one object.
type Ref struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

func (r Ref) String() string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// StatusTree is a template's propagation: the template, the policy that claims it, its
// binding and one entry per member.
type StatusTree struct {
	Template Ref `json:"template"`
	// Policy is nil when no policy claims the template.
	Policy *Ref `json:"policy,omitempty"`
	// Binding is nil when the template has no binding yet.
	Binding *BindingStatus `json:"binding,omitempty"`
}

// BindingStatus is the binding's state.
type BindingStatus struct {
	Ref
	// Scheduled and FullyApplied are the conditions' status, "Unknown" when absent; the
	// reasons follow when they are not True.
	Scheduled          string `json:"scheduled"`
	ScheduledReason    string `json:"scheduledReason,omitempty"`
	FullyApplied       string `json:"fullyApplied"`
	FullyAppliedReason string `json:"fullyAppliedReason,omitempty"`
	// ClustersReady is status.clustersReady, <ready>/<scheduled>.
	ClustersReady string          `json:"clustersReady,omitempty"`
	Clusters      []ClusterStatus `json:"clusters,omitempty"`
	// permanentID selects the binding's Works.
	permanentID, workLabel string
}

// ClusterStatus is the template in one member: its Work's state.
type ClusterStatus struct {
	Cluster string `json:"cluster"`
	// Scheduled is false for a Work left on a cluster the binding no longer targets.
	Scheduled bool `json:"scheduled"`
	// Replicas the scheduler gave the cluster, when the template has replicas.
	Replicas int32 `json:"replicas,omitempty"`
	// Work is namespace/name of the Work; empty when there is none yet.
	Work string `json:"work,omitempty"`
	// Applied is the Work's Applied condition status, "Unknown" when absent.
	Applied       string `json:"applied"`
	AppliedReason string `json:"appliedReason,omitempty"`
	// Health is the reflected health of the template's manifest.
	Health string `json:"health,omitempty"`
	// ReadyReplicas is <ready>/<replicas> from the reflected status, when it has them.
	ReadyReplicas string `json:"readyReplicas,omitempty"`
	// Error is the last error: the Applied condition's message when not applied.
	Error string `json:"error,omitempty"`
}

// StatusRequest names the template.
type StatusRequest struct {
	Kind, Namespace, Name string
}

// Status reads the template, its claim, its binding and its Works from the host.
func (h *Host) Status(ctx context.Context, req StatusRequest) (*StatusTree, error) {
	mapping, err := h.Resolve(req.Kind)
	if err != nil {
		return nil, err
	}
	ns := req.Namespace
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		ns = ""
	}
	_, err = h.Dynamic.Resource(mapping.Resource).Namespace(ns).Get(ctx, req.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, err // deployments.apps "web" not found
	}
	if err != nil {
		return nil, fmt.Errorf("get %s %q: %w", mapping.Resource.GroupResource(), req.Name, err)
	}
	gvk := mapping.GroupVersionKind
	tree := &StatusTree{Template: Ref{Kind: gvk.Kind, Namespace: ns, Name: req.Name}}
	rb, err := h.binding(ctx, gvk.Kind, ns, req.Name)
	if err != nil || rb == nil {
		return tree, err
	}
	tree.Policy = claim(rb)
	works := &workv1alpha1.WorkList{}
	if err := h.Client.List(ctx, works, client.MatchingLabels{bindings.WorkBindingLabel(rb): bindings.PermanentID(rb)}); err != nil {
		return nil, fmt.Errorf("list the Works of %s %s: %w", bindings.Kind(rb), client.ObjectKeyFromObject(rb), err)
	}
	tree.Binding = bindingStatus(rb, works.Items, tree.Template)
	return tree, nil
}

// claim reads the policy that claims the template from its binding's annotations (the
// template itself carries no claim).
func claim(rb client.Object) *Ref {
	a := rb.GetAnnotations()
	if n := a[wellknown.PropagationPolicyNameAnnotation]; n != "" {
		return &Ref{Kind: "PropagationPolicy", Namespace: cmp.Or(a[wellknown.PropagationPolicyNamespaceAnnotation], rb.GetNamespace()), Name: n}
	}
	if n := a[wellknown.ClusterPropagationPolicyNameAnnotation]; n != "" {
		return &Ref{Kind: "ClusterPropagationPolicy", Name: n}
	}
	return nil
}

// binding returns the template's binding: by its conventional name, else the one whose
// spec.resource is the template; nil when there is none.
func (h *Host) binding(ctx context.Context, kind, ns, name string) (client.Object, error) {
	var rb client.Object = &workv1alpha2.ResourceBinding{}
	var list client.ObjectList = &workv1alpha2.ResourceBindingList{}
	if ns == "" {
		rb, list = &workv1alpha2.ClusterResourceBinding{}, &workv1alpha2.ClusterResourceBindingList{}
	}
	err := h.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: detector.BindingName(kind, name)}, rb)
	if err == nil {
		return rb, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("get the binding of %s %s: %w", kind, name, err)
	}
	if err := h.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("list bindings: %w", err)
	}
	objs, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		b := o.(client.Object)
		if r := bindings.Spec(b).Resource; r.Kind == kind && r.Name == name && r.Namespace == ns {
			return b, nil
		}
	}
	return nil, nil
}

func condition(conds []metav1.Condition, t string) (status, reason string) {
	c := meta.FindStatusCondition(conds, t)
	if c == nil {
		return string(metav1.ConditionUnknown), ""
	}
	if c.Status == metav1.ConditionTrue {
		return string(c.Status), ""
	}
	return string(c.Status), c.Reason
}

func bindingStatus(rb client.Object, works []workv1alpha1.Work, tmpl Ref) *BindingStatus {
	spec, st := bindings.Spec(rb), bindings.Status(rb)
	b := &BindingStatus{Ref: Ref{Kind: bindings.Kind(rb), Namespace: rb.GetNamespace(), Name: rb.GetName()},
		ClustersReady: st.ClustersReady, permanentID: bindings.PermanentID(rb), workLabel: bindings.WorkBindingLabel(rb)}
	b.Scheduled, b.ScheduledReason = condition(st.Conditions, wellknown.ConditionScheduled)
	b.FullyApplied, b.FullyAppliedReason = condition(st.Conditions, wellknown.ConditionFullyApplied)

	byCluster := map[string]*ClusterStatus{}
	get := func(name string) *ClusterStatus {
		if c := byCluster[name]; c != nil {
			return c
		}
		c := &ClusterStatus{Cluster: name, Applied: string(metav1.ConditionUnknown), Health: none}
		byCluster[name] = c
		return c
	}
	for _, t := range bindings.Targets(spec) {
		c := get(t.Name)
		c.Scheduled, c.Replicas = true, t.Replicas
	}
	for i := range works {
		w := &works[i]
		name, ok := bindings.ClusterOfWork(w.Namespace)
		if !ok {
			continue
		}
		c := get(name)
		c.Work = w.Namespace + "/" + w.Name
		c.Applied, c.AppliedReason = condition(w.Status.Conditions, wellknown.WorkConditionApplied)
		if cond := meta.FindStatusCondition(w.Status.Conditions, wellknown.WorkConditionApplied); cond != nil && cond.Status != metav1.ConditionTrue {
			c.Error = oneLine(cond.Message)
		}
		if ms := manifestStatus(w, tmpl); ms != nil {
			c.Health = cmp.Or(string(ms.Health), none)
			c.ReadyReplicas = readyReplicas(ms.Status)
		}
	}
	for _, a := range st.AggregatedStatus {
		c, ok := byCluster[a.ClusterName]
		if !ok {
			continue
		}
		if c.Health == none && a.Health != "" {
			c.Health = string(a.Health)
		}
		if c.ReadyReplicas == "" && a.Status != nil {
			c.ReadyReplicas = readyReplicas(a.Status)
		}
		if c.Error == "" && !a.Applied && a.AppliedMessage != "" {
			c.Error = oneLine(a.AppliedMessage)
		}
	}
	for _, c := range byCluster {
		b.Clusters = append(b.Clusters, *c)
	}
	slices.SortFunc(b.Clusters, func(x, y ClusterStatus) int { return cmp.Compare(x.Cluster, y.Cluster) })
	return b
}

// manifestStatus is the Work's status of the template's manifest, else of its first one.
func manifestStatus(w *workv1alpha1.Work, tmpl Ref) *workv1alpha1.ManifestStatus {
	if len(w.Status.ManifestStatuses) == 0 {
		return nil
	}
	for i := range w.Status.ManifestStatuses {
		if id := w.Status.ManifestStatuses[i].Identifier; id.Kind == tmpl.Kind && id.Name == tmpl.Name {
			return &w.Status.ManifestStatuses[i]
		}
	}
	return &w.Status.ManifestStatuses[0]
}

// readyReplicas reads <readyReplicas>/<replicas> from a reflected status; "" when it has
// neither.
func readyReplicas(raw *runtime.RawExtension) string {
	if raw == nil || len(raw.Raw) == 0 {
		return ""
	}
	data := raw.Raw
	var s struct {
		Replicas      *int64 `json:"replicas"`
		ReadyReplicas *int64 `json:"readyReplicas"`
	}
	if json.Unmarshal(data, &s) != nil || (s.Replicas == nil && s.ReadyReplicas == nil) {
		return ""
	}
	var ready, total int64
	if s.ReadyReplicas != nil {
		ready = *s.ReadyReplicas
	}
	if s.Replicas != nil {
		total = *s.Replicas
	}
	return fmt.Sprintf("%d/%d", ready, total)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// PrintStatus writes the tree. Format is "" (the tree), "wide" (adds each member's Work and
// scheduled replicas), "json" or "yaml".
func PrintStatus(w io.Writer, t *StatusTree, format string) error {
	switch format {
	case "json":
		data, err := json.MarshalIndent(t, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", data)
		return err
	case "yaml":
		data, err := yaml.Marshal(t)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	case "", "wide":
	default:
		return fmt.Errorf("unknown output format %q: use wide, json or yaml", format)
	}
	fmt.Fprintln(w, t.Template)
	policy := "(no policy claims it)"
	if t.Policy != nil {
		policy = t.Policy.String()
	}
	fmt.Fprintln(w, "└── "+policy)
	if t.Binding == nil {
		_, err := fmt.Fprintln(w, "    └── (no binding yet)")
		return err
	}
	b := t.Binding
	line := fmt.Sprintf("    └── %s   Scheduled=%s   FullyApplied=%s   READY %s", b.Ref,
		withReason(b.Scheduled, b.ScheduledReason), withReason(b.FullyApplied, b.FullyAppliedReason), cmp.Or(b.ClustersReady, none))
	fmt.Fprintln(w, line)
	if len(b.Clusters) == 0 {
		_, err := fmt.Fprintln(w, "        └── (no clusters)")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	for i, c := range b.Clusters {
		branch := "├── "
		if i == len(b.Clusters)-1 {
			branch = "└── "
		}
		cells := []string{"        " + branch + c.Cluster, "Applied=" + withReason(c.Applied, c.AppliedReason), c.Health,
			"ready " + cmp.Or(c.ReadyReplicas, none)}
		if format == "wide" {
			cells = append(cells, fmt.Sprintf("replicas %d", c.Replicas), "work "+cmp.Or(c.Work, none))
		}
		var notes []string
		if c.Work == "" {
			notes = append(notes, "no Work yet")
		}
		if !c.Scheduled {
			notes = append(notes, "not scheduled: being removed")
		}
		if c.Error != "" {
			notes = append(notes, "error: "+c.Error)
		}
		if len(notes) > 0 {
			cells = append(cells, strings.Join(notes, "; "))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

func withReason(status, reason string) string {
	if reason == "" {
		return status
	}
	return status + " (" + reason + ")"
}

// WatchStatus prints the tree, then prints it again whenever the binding or its Works
// change (through watches, not polling) and the printed tree differs, until ctx ends.
func (h *Host) WatchStatus(ctx context.Context, w io.Writer, req StatusRequest, format string) error {
	mapping, err := h.Resolve(req.Kind)
	if err != nil {
		return err
	}
	ns := req.Namespace
	var bindingList client.ObjectList = &workv1alpha2.ResourceBindingList{}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		ns, bindingList = "", &workv1alpha2.ClusterResourceBindingList{}
	}
	bindingName := detector.BindingName(mapping.GroupVersionKind.Kind, req.Name)
	var last string
	var bw, ww watch.Interface
	stop := func() {
		if bw != nil {
			bw.Stop()
		}
		if ww != nil {
			ww.Stop()
		}
		bw, ww = nil, nil
	}
	defer stop()
	var workSelector string
	for {
		if bw == nil {
			if bw, err = h.Client.Watch(ctx, bindingList, client.InNamespace(ns), client.MatchingFields{"metadata.name": bindingName}); err != nil {
				return fmt.Errorf("watch the binding: %w", err)
			}
		}
		tree, err := h.Status(ctx, req)
		if err != nil {
			return err
		}
		if tree.Binding != nil && tree.Binding.workLabel+"="+tree.Binding.permanentID != workSelector {
			if ww != nil {
				ww.Stop()
			}
			workSelector = tree.Binding.workLabel + "=" + tree.Binding.permanentID
			if ww, err = h.Client.Watch(ctx, &workv1alpha1.WorkList{},
				client.MatchingLabels{tree.Binding.workLabel: tree.Binding.permanentID}); err != nil {
				return fmt.Errorf("watch the Works: %w", err)
			}
			// Read again, so that a change between the read and the watch is not missed.
			if tree, err = h.Status(ctx, req); err != nil {
				return err
			}
		}
		var buf bytes.Buffer
		if err := PrintStatus(&buf, tree, format); err != nil {
			return err
		}
		if out := buf.String(); out != last {
			if last != "" {
				fmt.Fprintln(w)
			}
			if _, err := io.WriteString(w, out); err != nil {
				return err
			}
			last = out
		}
		bindingEvents := bw.ResultChan()
		var workEvents <-chan watch.Event
		if ww != nil {
			workEvents = ww.ResultChan()
		}
		// Wait for an event, then coalesce the burst that follows it into one render. A
		// closed watch is opened again by the next round.
		var timeout <-chan time.Time
		for waiting := true; waiting; {
			select {
			case <-ctx.Done():
				return nil
			case <-timeout:
				waiting = false
			case _, ok := <-bindingEvents:
				if !ok {
					bw.Stop()
					bw, bindingEvents = nil, nil
					waiting = false
				} else if timeout == nil {
					timeout = time.After(100 * time.Millisecond)
				}
			case _, ok := <-workEvents:
				if !ok {
					ww.Stop()
					ww, workEvents, workSelector = nil, nil, ""
					waiting = false
				} else if timeout == nil {
					timeout = time.After(100 * time.Millisecond)
				}
			}
		}
	}
}

// ReadyReplicas is <readyReplicas>/<replicas> of a member's reflected status (as a binding's
// aggregatedStatus or a Work's manifest status holds it); "" when it has neither.
func ReadyReplicas(raw *runtime.RawExtension) string { return readyReplicas(raw) }
