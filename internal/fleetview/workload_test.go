package fleetview_test

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla-io/flotilla/internal/fleetview"
)

// update rewrites the golden files: go test ./internal/fleetview/ -run 'TestPrint' -update
var update = flag.Bool("update", false, "rewrite the golden files in testdata/ with the current output")

// golden compares got with testdata/NAME.golden (or writes it with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("%s differs from the golden file (-want +got; -update rewrites it):\n%s", path, d)
	}
}

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func at(ago time.Duration) metav1.Time { return metav1.NewTime(now.Add(-ago)) }

func pod(name string, ready bool, phase corev1.PodPhase, waiting string, restarts int32) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, CreationTimestamp: at(3 * time.Hour),
		OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-5d4f"}}},
		Spec:   corev1.PodSpec{NodeName: "kwok-node-0", Containers: []corev1.Container{{Name: "app"}, {Name: "proxy"}}},
		Status: corev1.PodStatus{Phase: phase}}
	for _, c := range p.Spec.Containers {
		s := corev1.ContainerStatus{Name: c.Name, Ready: ready, RestartCount: restarts}
		if waiting != "" {
			s.State.Waiting = &corev1.ContainerStateWaiting{Reason: waiting}
		}
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, s)
	}
	return p
}

func event(name, kind, object, typ, reason, msg string, first, last time.Duration, count int32) corev1.Event {
	return corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
		InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: "shop", Name: object},
		Type:           typ, Reason: reason, Message: msg, FirstTimestamp: at(first), LastTimestamp: at(last), Count: count,
		Source: corev1.EventSource{Component: "deployment-controller"}}
}

func deployment() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"namespace": "shop", "name": "web"},
		"spec": map[string]any{"replicas": int64(2), "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "app", "image": "registry.example/web:1.2"},
				map[string]any{"name": "proxy", "image": "envoy:1.30"}}}}},
		"status": map[string]any{"updatedReplicas": int64(2), "readyReplicas": int64(1), "availableReplicas": int64(1),
			"conditions": []any{
				map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
				map[string]any{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}}},
	}}
}

// sample is a workload in three members: member1 runs it, member2 did not answer, member3
// does not have it.
func sample() *fleetview.WorkloadResult {
	return &fleetview.WorkloadResult{
		Workload: fleetview.Ref{Kind: "Deployment", Namespace: "shop", Name: "web"},
		Members: []fleetview.MemberWorkload{
			{Cluster: "member1", Object: deployment(),
				Pods: []corev1.Pod{pod("web-5d4f-a", true, corev1.PodRunning, "", 0), pod("web-5d4f-b", false, corev1.PodPending, "ImagePullBackOff", 3)},
				Events: []corev1.Event{
					event("e2", "Pod", "web-5d4f-b", "Warning", "Failed", "Failed to pull image \"registry.example/web:1.2\":\n not found", 50*time.Minute, 2*time.Minute, 7),
					event("e1", "Deployment", "web", "Normal", "ScalingReplicaSet", "Scaled up replica set web-5d4f to 2", 3*time.Hour, 3*time.Hour, 1),
				},
				Logs: []fleetview.ContainerLog{
					{Pod: "web-5d4f-a", Container: "app", Data: []byte("listening on :8080\nGET / 200\n")},
					{Pod: "web-5d4f-a", Container: "proxy", Data: []byte("no trailing newline")},
					{Pod: "web-5d4f-b", Container: "app", Err: errors.New(`container "app" in pod "web-5d4f-b" is waiting to start: trying and failing to pull image`)},
					{Pod: "web-5d4f-b", Container: "proxy", Data: nil},
				}},
			{Cluster: "member2", Err: errors.New("no answer within 5s")},
			{Cluster: "member3"},
		},
	}
}

func TestPrintWorkloadDescription(t *testing.T) {
	var out bytes.Buffer
	if err := fleetview.PrintWorkloadDescription(&out, sample(), now); err != nil {
		t.Fatal(err)
	}
	golden(t, "describe-workload", out.String())
}

func TestPrintEvents(t *testing.T) {
	r := sample()
	r.Members[2].Events = []corev1.Event{event("e3", "Deployment", "web", "Normal", "ScalingReplicaSet", "Scaled down", 10*time.Minute, 10*time.Minute, 1)}
	for _, format := range []string{"", "wide"} {
		var out bytes.Buffer
		if err := fleetview.PrintEvents(&out, r, format, now); err != nil {
			t.Fatal(err)
		}
		golden(t, "events"+map[string]string{"": "", "wide": "-wide"}[format], out.String())
	}
	r.AllNamespaces = true
	var out bytes.Buffer
	if err := fleetview.PrintEvents(&out, r, "", now); err != nil {
		t.Fatal(err)
	}
	golden(t, "events-all-namespaces", out.String())

	out.Reset()
	if err := fleetview.PrintEvents(&out, r, "yaml", now); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kind: List", "kind: Event", fleetview.ClusterAnnotation + ": member3", "reason: ScalingReplicaSet"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("yaml lacks %q:\n%s", want, out.String())
		}
	}
	if err := fleetview.PrintEvents(&out, r, "name", now); err == nil || !strings.Contains(err.Error(), `unknown output format "name"`) {
		t.Errorf("-o name: %v", err)
	}
}

func TestPrintLogs(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := fleetview.PrintLogs(&out, &errOut, sample()); err != nil {
		t.Fatal(err)
	}
	golden(t, "logs", out.String())
	golden(t, "logs-stderr", errOut.String())
}

func TestMergeEventsOrder(t *testing.T) {
	r := sample()
	r.Members[2].Events = []corev1.Event{event("e3", "Deployment", "web", "Normal", "X", "", time.Hour, time.Hour, 1)}
	var got []string
	for _, e := range fleetview.MergeEvents(r) {
		got = append(got, e.Cluster+"/"+e.Event.Name)
	}
	if d := cmp.Diff([]string{"member1/e1", "member3/e3", "member1/e2"}, got); d != "" {
		t.Errorf("order (-want +got):\n%s", d)
	}
}

func TestWorkloadCheck(t *testing.T) {
	r := sample()
	if err := r.Check(); err != nil {
		t.Errorf("one member has it: %v", err)
	}
	r.Logs = true
	if err := r.Check(); err != nil {
		t.Errorf("some logs read: %v", err)
	}
	logs := r.Members[0].Logs
	r.Members[0].Logs = logs[2:3]
	if err := r.Check(); err == nil || err.Error() != "none of the 1 containers' logs could be read" {
		t.Errorf("no log read: %v", err)
	}
	r.Members[0].Logs = nil
	if err := r.Check(); err != nil {
		t.Errorf("no containers: %v", err)
	}
	r.Logs = false
	r.Members[0].Object = nil
	if err := r.Check(); err == nil || err.Error() != "Deployment shop/web is in none of the member clusters read (member1, member3)" {
		t.Errorf("in none: %v", err)
	}
	r.Workload.Name = ""
	if err := r.Check(); err != nil {
		t.Errorf("a selector finds nothing: %v", err)
	}
	for i := range r.Members {
		r.Members[i].Err = errors.New("down")
	}
	if err := r.Check(); err == nil || err.Error() != "all 3 member clusters failed" {
		t.Errorf("all failed: %v", err)
	}
	if err := (&fleetview.WorkloadResult{}).Check(); err == nil || !strings.Contains(err.Error(), "no Ready member clusters") {
		t.Errorf("no members: %v", err)
	}
}

func TestPodSelector(t *testing.T) {
	obj := func(selector any) *unstructured.Unstructured {
		spec := map[string]any{}
		if selector != nil {
			spec["selector"] = selector
		}
		return &unstructured.Unstructured{Object: map[string]any{"kind": "Thing", "metadata": map[string]any{"name": "x"}, "spec": spec}}
	}
	for _, tc := range []struct {
		selector any
		want     string
	}{
		{map[string]any{"matchLabels": map[string]any{"app": "web"}}, "app=web"},
		{map[string]any{"matchExpressions": []any{map[string]any{"key": "tier", "operator": "In", "values": []any{"a", "b"}}}}, "tier in (a,b)"},
		{map[string]any{"app": "web", "tier": "front"}, "app=web,tier=front"},
	} {
		sel, err := fleetview.PodSelector(obj(tc.selector))
		if err != nil || sel.String() != tc.want {
			t.Errorf("%v: %v %v, want %s", tc.selector, sel, err, tc.want)
		}
	}
	for _, tc := range []struct {
		selector any
		want     string
	}{
		{nil, "Thing x has no spec.selector: select its pods with -l"},
		{"app=web", "spec.selector is not an object"},
		{map[string]any{}, "has an empty spec.selector"},
		{map[string]any{"matchLabels": map[string]any{}}, "has an empty spec.selector"},
		{map[string]any{"app": int64(3)}, "spec.selector.app is not a string"},
		{map[string]any{"matchExpressions": []any{map[string]any{"key": "k", "operator": "Bogus"}}}, "spec.selector"},
		{map[string]any{"matchLabels": "x"}, "spec.selector"},
	} {
		_, err := fleetview.PodSelector(obj(tc.selector))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.selector, err, tc.want)
		}
	}
}

func TestRelatedEvents(t *testing.T) {
	events := []corev1.Event{
		event("a", "Deployment", "web", "Normal", "R", "", time.Hour, time.Hour, 1),
		event("b", "ReplicaSet", "web-5d4f", "Normal", "R", "", time.Hour, time.Hour, 1),
		event("c", "Pod", "web-5d4f-a", "Normal", "R", "", time.Hour, time.Hour, 1),
		event("d", "Pod", "other", "Normal", "R", "", time.Hour, time.Hour, 1),
		event("e", "Deployment", "webx", "Normal", "R", "", time.Hour, time.Hour, 1),
		event("f", "Service", "web", "Normal", "R", "", time.Hour, time.Hour, 1),
	}
	names := func(es []corev1.Event) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.Name)
		}
		return out
	}
	pods := []corev1.Pod{pod("web-5d4f-a", true, corev1.PodRunning, "", 0)}
	if d := cmp.Diff([]string{"a", "b", "c"}, names(fleetview.RelatedEvents(events, deployment(), pods, false))); d != "" {
		t.Errorf("workload (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"b", "c"}, names(fleetview.RelatedEvents(events, nil, pods, false))); d != "" {
		t.Errorf("selector (-want +got):\n%s", d)
	}
	if got := fleetview.RelatedEvents(events, nil, nil, true); len(got) != len(events) {
		t.Errorf("all: %d events", len(got))
	}
}

func TestPodStatus(t *testing.T) {
	p := pod("p", false, corev1.PodPending, "ImagePullBackOff", 0)
	if s := fleetview.PodStatus(&p); s != "ImagePullBackOff" {
		t.Errorf("waiting: %s", s)
	}
	p = pod("p", true, corev1.PodRunning, "", 0)
	if s := fleetview.PodStatus(&p); s != "Running" {
		t.Errorf("running: %s", s)
	}
	p.DeletionTimestamp = &metav1.Time{Time: now}
	if s := fleetview.PodStatus(&p); s != "Terminating" {
		t.Errorf("deleting: %s", s)
	}
	p = corev1.Pod{}
	if s := fleetview.PodStatus(&p); s != "Unknown" {
		t.Errorf("empty: %s", s)
	}
}
