package fleetview

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"
)

// PrintLogs writes the logs of every container, each line prefixed with
// [CLUSTER/POD/CONTAINER], in cluster, pod and container order; a last line without a newline
// gets one. What could not be read (a member, a container) goes to errOut, one line each.
func PrintLogs(out, errOut io.Writer, r *WorkloadResult) error {
	bw := bufio.NewWriter(out)
	for _, m := range r.Members {
		if m.Err != nil {
			fmt.Fprintf(errOut, "error: cluster %s: %s\n", m.Cluster, oneLine(m.Err.Error()))
			continue
		}
		for _, l := range m.Logs {
			prefix := "[" + m.Cluster + "/" + l.Pod + "/" + l.Container + "] "
			if l.Err != nil {
				fmt.Fprintf(errOut, "error: %s%s\n", prefix, oneLine(l.Err.Error()))
				continue
			}
			data := l.Data
			for len(data) > 0 {
				line, rest, _ := bytes.Cut(data, []byte("\n"))
				bw.WriteString(prefix)
				bw.Write(line)
				bw.WriteByte('\n')
				data = rest
			}
		}
	}
	return bw.Flush()
}

// ClusterEvent is an event and the member it was read from.
type ClusterEvent struct {
	Cluster string
	Event   corev1.Event
}

// MergeEvents returns the members' events as one list, oldest last seen first (as kubectl
// events sorts), then by cluster and name.
func MergeEvents(r *WorkloadResult) []ClusterEvent {
	var out []ClusterEvent
	for _, m := range r.Members {
		for _, e := range m.Events {
			out = append(out, ClusterEvent{Cluster: m.Cluster, Event: e})
		}
	}
	slices.SortStableFunc(out, func(a, b ClusterEvent) int {
		return cmp.Or(lastSeen(a.Event).Compare(lastSeen(b.Event)), cmp.Compare(a.Cluster, b.Cluster),
			cmp.Compare(a.Event.Namespace, b.Event.Namespace), cmp.Compare(a.Event.Name, b.Event.Name))
	})
	return out
}

// lastSeen is when the event was last seen: lastTimestamp, else the series' or eventTime,
// else firstTimestamp, else its creation.
func lastSeen(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

func firstSeen(e corev1.Event) time.Time {
	switch {
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

func ago(now, t time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// PrintEvents writes the members' events as one table: CLUSTER, NAMESPACE (with all
// namespaces), LAST SEEN, TYPE, REASON, OBJECT, MESSAGE as kubectl events prints them; wide
// adds FIRST SEEN, COUNT and SOURCE; json and yaml write a List of the events annotated with
// their cluster. A member that failed gets one row with its error, after the events.
func PrintEvents(w io.Writer, r *WorkloadResult, format string, now time.Time) error {
	events := MergeEvents(r)
	switch format {
	case "json", "yaml":
		items := []any{}
		for _, ce := range events {
			e := ce.Event.DeepCopy()
			e.APIVersion, e.Kind = "v1", "Event"
			e.ManagedFields = nil
			if e.Annotations == nil {
				e.Annotations = map[string]string{}
			}
			e.Annotations[ClusterAnnotation] = ce.Cluster
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(e)
			if err != nil {
				return err
			}
			items = append(items, u)
		}
		return writeList(w, items, format)
	case "", "wide":
	default:
		return fmt.Errorf("unknown output format %q: use wide, json or yaml", format)
	}
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	header := []string{"CLUSTER"}
	if r.AllNamespaces {
		header = append(header, "NAMESPACE")
	}
	header = append(header, "LAST SEEN", "TYPE", "REASON", "OBJECT")
	if format == "wide" {
		header = append(header, "FIRST SEEN", "COUNT", "SOURCE")
	}
	fmt.Fprintln(tw, strings.Join(append(header, "MESSAGE"), "\t"))
	for _, ce := range events {
		e := ce.Event
		cells := []string{ce.Cluster}
		if r.AllNamespaces {
			cells = append(cells, e.Namespace)
		}
		cells = append(cells, ago(now, lastSeen(e)), cmp.Or(e.Type, none), cmp.Or(e.Reason, none),
			strings.ToLower(e.InvolvedObject.Kind)+"/"+e.InvolvedObject.Name)
		if format == "wide" {
			source := cmp.Or(e.Source.Component, e.ReportingController, none)
			if e.Source.Host != "" {
				source += ", " + e.Source.Host
			}
			cells = append(cells, ago(now, firstSeen(e)), fmt.Sprint(max(e.Count, 1)), source)
		}
		fmt.Fprintln(tw, strings.Join(append(cells, oneLine(e.Message)), "\t"))
	}
	// Errors last: a short row inside the table would break its column alignment.
	for _, m := range r.Members {
		if m.Err != nil {
			cells := []string{m.Cluster}
			if r.AllNamespaces {
				cells = append(cells, none)
			}
			fmt.Fprintln(tw, strings.Join(append(cells, "error: "+oneLine(m.Err.Error())), "\t"))
		}
	}
	return tw.Flush()
}

func writeList(w io.Writer, items []any, format string) error {
	list := map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""}, "items": items}
	var data []byte
	var err error
	if format == "json" {
		data, err = json.MarshalIndent(list, "", "    ")
		data = append(data, '\n')
	} else {
		data, err = yaml.Marshal(list)
	}
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// PrintWorkloadDescription writes, per member, the workload's replicas and conditions, its
// pods and their events: the fleet-wide counterpart of kubectl describe.
func PrintWorkloadDescription(w io.Writer, r *WorkloadResult, now time.Time) error {
	have := 0
	for _, m := range r.Members {
		if m.Object != nil {
			have++
		}
	}
	fmt.Fprintf(w, "%s: in %d of %d member clusters", r.Workload, have, len(r.Members))
	if n := r.Failed(); n > 0 {
		fmt.Fprintf(w, " (%d failed)", n)
	}
	fmt.Fprintln(w)
	for _, m := range r.Members {
		fmt.Fprintf(w, "\nCluster: %s\n", m.Cluster)
		if m.Err != nil {
			fmt.Fprintf(w, "  error: %s\n", oneLine(m.Err.Error()))
			continue
		}
		if m.Object == nil {
			fmt.Fprintf(w, "  (no %s %s here)\n", r.Workload.Kind, r.Workload.Name)
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		fmt.Fprintf(tw, "  Replicas:\t%s\n", replicaLine(m.Object))
		fmt.Fprintf(tw, "  Images:\t%s\n", cmp.Or(strings.Join(images(m.Object), ", "), "<none>"))
		fmt.Fprintf(tw, "  Conditions:\t%s\n", cmp.Or(conditionLine(m.Object), "<none>"))
		tw.Flush()
		printPods(w, m.Pods, now)
		printMemberEvents(w, m.Events, now)
	}
	return nil
}

// replicaLine is "3 desired | 3 updated | 2 ready | 2 available" for kinds with
// spec.replicas (a count the status leaves out is 0), else the counts the status has
// (DaemonSet, Job).
func replicaLine(obj *unstructured.Unstructured) string {
	var parts []string
	count := func(field, label string, zero bool) {
		v, ok, _ := unstructured.NestedInt64(obj.Object, "status", field)
		if ok || zero {
			parts = append(parts, fmt.Sprintf("%d %s", v, label))
		}
	}
	if v, ok, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas"); ok {
		parts = append(parts, fmt.Sprintf("%d desired", v))
		count("updatedReplicas", "updated", true)
		count("readyReplicas", "ready", true)
		count("availableReplicas", "available", true)
	} else {
		for _, f := range []struct{ field, label string }{
			{"desiredNumberScheduled", "desired"}, {"updatedNumberScheduled", "updated"}, {"numberReady", "ready"},
			{"numberAvailable", "available"}, {"active", "active"}, {"succeeded", "succeeded"}, {"failed", "failed"},
		} {
			count(f.field, f.label, false)
		}
	}
	if len(parts) == 0 {
		return "<none>"
	}
	return strings.Join(parts, " | ")
}

func images(obj *unstructured.Unstructured) []string {
	cs, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
	if obj.GetKind() == "Pod" {
		cs, _, _ = unstructured.NestedSlice(obj.Object, "spec", "containers")
	}
	var out []string
	for _, c := range cs {
		if m, ok := c.(map[string]any); ok {
			if img, ok := m["image"].(string); ok {
				out = append(out, img)
			}
		}
	}
	return out
}

func conditionLine(obj *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	var parts []string
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		t, _ := m["type"].(string)
		s, _ := m["status"].(string)
		p := t + "=" + s
		if reason, _ := m["reason"].(string); reason != "" && s != "True" {
			p += " (" + reason + ")"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

func printPods(w io.Writer, pods []corev1.Pod, now time.Time) {
	fmt.Fprintf(w, "  Pods (%d):\n", len(pods))
	if len(pods) == 0 {
		fmt.Fprintln(w, "    <none>")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "    NAME\tREADY\tSTATUS\tRESTARTS\tNODE\tAGE")
	for _, p := range pods {
		ready, restarts := 0, int32(0)
		for _, s := range p.Status.ContainerStatuses {
			if s.Ready {
				ready++
			}
			restarts += s.RestartCount
		}
		fmt.Fprintf(tw, "    %s\t%d/%d\t%s\t%d\t%s\t%s\n", p.Name, ready, len(p.Spec.Containers), PodStatus(&p), restarts,
			cmp.Or(p.Spec.NodeName, "<none>"), ago(now, p.CreationTimestamp.Time))
	}
	tw.Flush()
}

// PodStatus is the STATUS kubectl get pods shows, simplified: Terminating, a container's
// waiting or terminated reason, else the pod's reason or phase.
func PodStatus(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil {
		return "Terminating"
	}
	for _, s := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
		if s.State.Waiting != nil && s.State.Waiting.Reason != "" {
			return s.State.Waiting.Reason
		}
		if s.State.Terminated != nil && s.State.Terminated.Reason != "" && p.Status.Phase != corev1.PodSucceeded {
			return s.State.Terminated.Reason
		}
	}
	return cmp.Or(p.Status.Reason, string(p.Status.Phase), "Unknown")
}

func printMemberEvents(w io.Writer, events []corev1.Event, now time.Time) {
	fmt.Fprintf(w, "  Events (%d):\n", len(events))
	if len(events) == 0 {
		fmt.Fprintln(w, "    <none>")
		return
	}
	events = slices.Clone(events)
	slices.SortStableFunc(events, func(a, b corev1.Event) int { return lastSeen(a).Compare(lastSeen(b)) })
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "    LAST SEEN\tTYPE\tREASON\tOBJECT\tMESSAGE")
	for _, e := range events {
		fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\t%s\n", ago(now, lastSeen(e)), cmp.Or(e.Type, none), cmp.Or(e.Reason, none),
			strings.ToLower(e.InvolvedObject.Kind)+"/"+e.InvolvedObject.Name, oneLine(e.Message))
	}
	tw.Flush()
}
