package fleetview

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// maxLogBytes bounds what `logs` reads from one container, so that one chatty container
// cannot exhaust the plugin's memory.
const maxLogBytes = 8 << 20

// WorkloadRequest names a workload (KIND/NAME) or a label selector whose pods `logs`,
// `events` and `describe` read in the members.
type WorkloadRequest struct {
	// Kind and Name of the workload as users type them (deploy web); empty Kind reads the
	// pods that Selector selects (or, for events, every event).
	Kind, Name string
	Namespace  string
	// AllNamespaces reads every namespace; only without a workload.
	AllNamespaces bool
	// Selector is a label selector of the pods (ANDed with the workload's own).
	Selector string
	// Clusters to read; empty means every Ready Cluster.
	Clusters []string
	// MemberTimeout bounds everything read from one member; default DefaultMemberTimeout.
	MemberTimeout time.Duration
	// Events reads the events of the workload, its pods and their owners.
	Events bool
	// Logs reads the pods' containers' logs.
	Logs *LogOptions
}

// LogOptions are kubectl logs' options.
type LogOptions struct {
	// Container is -c; empty reads every container of each pod.
	Container string
	// TailLines is --tail; negative reads the whole log.
	TailLines int64
}

// WorkloadResult is what the members answered, in cluster name order.
type WorkloadResult struct {
	// Workload is the template in the host; its Name is empty with a selector only.
	Workload      Ref
	Selector      string
	AllNamespaces bool
	// Logs says that logs were asked for.
	Logs    bool
	Members []MemberWorkload
}

// MemberWorkload is one member's answer.
type MemberWorkload struct {
	Cluster string
	// Object is the workload in the member; nil when the member does not have it (or no
	// workload was named).
	Object *unstructured.Unstructured
	Pods   []corev1.Pod
	Events []corev1.Event
	Logs   []ContainerLog
	Err    error
}

// ContainerLog is one container's log, or why it could not be read.
type ContainerLog struct {
	Pod, Container string
	Data           []byte
	Err            error
}

// Failed counts the members that answered with an error.
func (r *WorkloadResult) Failed() int {
	return failed(r.Members, func(m MemberWorkload) error { return m.Err })
}

// Check is the verdict of the exit code: an error when no member was read, when every
// member failed, when logs were asked for and none could be read, or when a named workload
// is in none of the members that answered.
func (r *WorkloadResult) Check() error {
	if len(r.Members) == 0 {
		return errors.New("no Ready member clusters: name them with --clusters")
	}
	if n := r.Failed(); n == len(r.Members) {
		return fmt.Errorf("all %d member clusters failed", n)
	}
	if err := r.checkLogs(); err != nil {
		return err
	}
	if r.Workload.Name == "" {
		return nil
	}
	for _, m := range r.Members {
		if m.Object != nil {
			return nil
		}
	}
	var read []string
	for _, m := range r.Members {
		if m.Err == nil {
			read = append(read, m.Cluster)
		}
	}
	return fmt.Errorf("%s is in none of the member clusters read (%s)", r.Workload, joinNames(read))
}

func joinNames(names []string) string { return strings.Join(names, ", ") }

// checkLogs fails when logs were asked for, containers were found and none of their logs
// could be read.
func (r *WorkloadResult) checkLogs() error {
	if !r.Logs {
		return nil
	}
	read, failed := 0, 0
	for _, m := range r.Members {
		for _, l := range m.Logs {
			if l.Err != nil {
				failed++
			} else {
				read++
			}
		}
	}
	if read == 0 && failed > 0 {
		return fmt.Errorf("none of the %d containers' logs could be read", failed)
	}
	return nil
}

// podQuery is what one member is asked for.
type podQuery struct {
	mapping   *meta.RESTMapping
	name      string
	namespace string
	// selector selects the pods; nil with a pod named by name.
	selector labels.Selector
	podName  string
}

// Workload reads a workload's pods (and, as asked, their events and logs) from the members
// in parallel, through the member credentials the host holds. The workload must exist in the
// host as a template; its pod selector is the template's. A member that fails or does not
// answer within the timeout gets an error in its result; the others are not held up.
func (h *Host) Workload(ctx context.Context, req WorkloadRequest) (*WorkloadResult, error) {
	q, ref, err := h.podQuery(ctx, req)
	if err != nil {
		return nil, err
	}
	clusters, err := h.selectClusters(ctx, req.Clusters)
	if err != nil {
		return nil, err
	}
	res := &WorkloadResult{Workload: ref, Selector: req.Selector, AllNamespaces: q.namespace == metav1.NamespaceAll,
		Logs: req.Logs != nil, Members: make([]MemberWorkload, len(clusters))}
	timeout := cmp.Or(req.MemberTimeout, DefaultMemberTimeout)
	fanOut(ctx, clusters, timeout, func(i int, name string, err error) { res.Members[i].Cluster, res.Members[i].Err = name, err },
		func(ctx context.Context, i int, c *clusterv1alpha1.Cluster, expired func() bool) {
			r := &res.Members[i]
			r.Err = h.readWorkload(ctx, r, c, q, req)
			if !expired() {
				return
			}
			if r.Err != nil {
				r.Err = fmt.Errorf("no answer within %s", timeout)
			}
			for i := range r.Logs {
				if r.Logs[i].Err != nil {
					r.Logs[i].Err = fmt.Errorf("no answer within %s", timeout)
				}
			}
		})
	return res, nil
}

// podQuery resolves the request against the host: the workload's template gives the pod
// selector.
func (h *Host) podQuery(ctx context.Context, req WorkloadRequest) (podQuery, Ref, error) {
	var sel labels.Selector
	if req.Selector != "" {
		s, err := labels.Parse(req.Selector)
		if err != nil {
			return podQuery{}, Ref{}, fmt.Errorf("invalid label selector %q: %w", req.Selector, err)
		}
		sel = s
	}
	ns := cmp.Or(req.Namespace, metav1.NamespaceDefault)
	if req.Kind == "" {
		if req.Name != "" {
			return podQuery{}, Ref{}, errors.New("a name needs a kind: KIND/NAME")
		}
		if sel == nil && !req.Events {
			return podQuery{}, Ref{}, errors.New("name a workload (KIND/NAME) or select pods with -l")
		}
		if req.AllNamespaces {
			ns = metav1.NamespaceAll
		}
		return podQuery{namespace: ns, selector: sel}, Ref{Kind: "Pod", Namespace: ns}, nil
	}
	if req.Name == "" {
		return podQuery{}, Ref{}, errors.New("expected KIND/NAME or KIND NAME")
	}
	if req.AllNamespaces {
		return podQuery{}, Ref{}, errors.New("-A (all namespaces) cannot be used with a workload: use -n")
	}
	mapping, err := h.Resolve(req.Kind)
	if err != nil {
		return podQuery{}, Ref{}, err
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		return podQuery{}, Ref{}, fmt.Errorf("%s is cluster-scoped: it has no pods", mapping.Resource.Resource)
	}
	ref := Ref{Kind: mapping.GroupVersionKind.Kind, Namespace: ns, Name: req.Name}
	q := podQuery{mapping: mapping, name: req.Name, namespace: ns}
	tmpl, err := h.Dynamic.Resource(mapping.Resource).Namespace(ns).Get(ctx, req.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return podQuery{}, Ref{}, fmt.Errorf("%s %q not found in the host (namespace %s)", mapping.Resource.GroupResource(), req.Name, ns)
	}
	if err != nil {
		return podQuery{}, Ref{}, fmt.Errorf("read %s in the host: %w", ref, err)
	}
	if mapping.GroupVersionKind.Group == "" && mapping.GroupVersionKind.Kind == "Pod" {
		q.podName = req.Name
		q.selector = sel
		return q, ref, nil
	}
	ps, err := PodSelector(tmpl)
	if err != nil {
		return podQuery{}, Ref{}, err
	}
	if sel != nil {
		reqs, _ := sel.Requirements()
		ps = ps.Add(reqs...)
	}
	q.selector = ps
	return q, ref, nil
}

// PodSelector is the selector of a workload's pods: spec.selector as a LabelSelector
// (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job) or as a map (ReplicationController).
func PodSelector(obj *unstructured.Unstructured) (labels.Selector, error) {
	raw, found, err := unstructured.NestedFieldNoCopy(obj.Object, "spec", "selector")
	if err != nil || !found || raw == nil {
		return nil, fmt.Errorf("%s %s has no spec.selector: select its pods with -l", obj.GetKind(), obj.GetName())
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s %s: spec.selector is not an object", obj.GetKind(), obj.GetName())
	}
	_, hasLabels := m["matchLabels"]
	_, hasExprs := m["matchExpressions"]
	if !hasLabels && !hasExprs {
		set := labels.Set{}
		for k, v := range m {
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("%s %s: spec.selector.%s is not a string", obj.GetKind(), obj.GetName(), k)
			}
			set[k] = s
		}
		if len(set) == 0 {
			return nil, fmt.Errorf("%s %s has an empty spec.selector", obj.GetKind(), obj.GetName())
		}
		return labels.SelectorFromValidatedSet(set), nil
	}
	ls := &metav1.LabelSelector{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, ls); err != nil {
		return nil, fmt.Errorf("%s %s: spec.selector: %w", obj.GetKind(), obj.GetName(), err)
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, fmt.Errorf("%s %s: spec.selector: %w", obj.GetKind(), obj.GetName(), err)
	}
	if sel.Empty() {
		return nil, fmt.Errorf("%s %s has an empty spec.selector", obj.GetKind(), obj.GetName())
	}
	return sel, nil
}

func (h *Host) readWorkload(ctx context.Context, r *MemberWorkload, c *clusterv1alpha1.Cluster, q podQuery, req WorkloadRequest) error {
	cfg, err := h.MemberConfig(ctx, c)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if q.mapping != nil {
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return err
		}
		obj, err := dyn.Resource(q.mapping.Resource).Namespace(q.namespace).Get(ctx, q.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		r.Object = obj
	}
	if q.podName != "" {
		pod, err := cs.CoreV1().Pods(q.namespace).Get(ctx, q.podName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if q.selector == nil || q.selector.Matches(labels.Set(pod.Labels)) {
			r.Pods = []corev1.Pod{*pod}
		}
	} else if q.selector != nil {
		pods, err := cs.CoreV1().Pods(q.namespace).List(ctx, metav1.ListOptions{LabelSelector: q.selector.String()})
		if err != nil {
			return err
		}
		r.Pods = pods.Items
	}
	slices.SortFunc(r.Pods, func(a, b corev1.Pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	if req.Events {
		evs, err := cs.CoreV1().Events(q.namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		r.Events = RelatedEvents(evs.Items, r.Object, r.Pods, q.mapping == nil && q.selector == nil)
	}
	if req.Logs != nil {
		r.Logs = readLogs(ctx, cs, r.Pods, *req.Logs)
	}
	return nil
}

// RelatedEvents keeps the events about the workload, its pods and the pods' owners (the
// ReplicaSets between a Deployment and its pods), or every event when all is set.
func RelatedEvents(events []corev1.Event, workload *unstructured.Unstructured, pods []corev1.Pod, all bool) []corev1.Event {
	if all {
		return events
	}
	type key struct{ kind, namespace, name string }
	want := map[key]bool{}
	if workload != nil {
		want[key{workload.GetKind(), workload.GetNamespace(), workload.GetName()}] = true
	}
	for _, p := range pods {
		want[key{"Pod", p.Namespace, p.Name}] = true
		for _, o := range p.OwnerReferences {
			want[key{o.Kind, p.Namespace, o.Name}] = true
		}
	}
	var out []corev1.Event
	for _, e := range events {
		o := e.InvolvedObject
		if want[key{o.Kind, cmp.Or(o.Namespace, e.Namespace), o.Name}] {
			out = append(out, e)
		}
	}
	return out
}

// readLogs reads each pod's containers' logs one after the other (the member's timeout
// bounds them all).
func readLogs(ctx context.Context, cs kubernetes.Interface, pods []corev1.Pod, o LogOptions) []ContainerLog {
	var out []ContainerLog
	for _, p := range pods {
		var names []string
		for _, c := range p.Spec.Containers {
			names = append(names, c.Name)
		}
		if o.Container != "" {
			if !slices.Contains(names, o.Container) {
				out = append(out, ContainerLog{Pod: p.Name, Container: o.Container,
					Err: fmt.Errorf("container %s is not valid for pod %s: its containers are %s", o.Container, p.Name, joinNames(names))})
				continue
			}
			names = []string{o.Container}
		}
		for _, n := range names {
			l := ContainerLog{Pod: p.Name, Container: n}
			opts := &corev1.PodLogOptions{Container: n, LimitBytes: ptrTo(int64(maxLogBytes))}
			if o.TailLines >= 0 {
				opts.TailLines = ptrTo(o.TailLines)
			}
			l.Data, l.Err = readStream(ctx, cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, opts).Stream)
			out = append(out, l)
		}
	}
	return out
}

func readStream(ctx context.Context, open func(context.Context) (io.ReadCloser, error)) ([]byte, error) {
	rc, err := open(ctx)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, maxLogBytes))
}

func ptrTo[T any](v T) *T { return &v }
