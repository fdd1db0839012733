package clusterstatus

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// pendingPod is an unbound Pending Pod of ns/name, owned by a controller of kind/owner, with
// the pod-template-hash label hash (none when empty) and its PodScheduled condition.
func pendingPod(ns, name, kind, owner, hash string, scheduled corev1.ConditionStatus, reason string, since time.Time) corev1.Pod {
	p := pod(name, "", corev1.PodPending)
	p.Namespace = ns
	apiVersion := "apps/v1"
	if kind == "Job" {
		apiVersion = "batch/v1"
	}
	if owner != "" {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: owner, UID: "u", Controller: ptr.To(true)}}
	}
	if hash != "" {
		p.Labels = map[string]string{podTemplateHashLabel: hash}
	}
	if scheduled != "" {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: scheduled, Reason: reason,
			LastTransitionTime: metav1.NewTime(since)}}
	}
	return p
}

func TestUnschedulableWorkloads(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	unsched := func(ns, name, kind, owner, hash string, since time.Time) corev1.Pod {
		return pendingPod(ns, name, kind, owner, hash, corev1.ConditionFalse, corev1.PodReasonUnschedulable, since)
	}
	bound := unsched("web", "bound", "ReplicaSet", "web-5d8f", "5d8f", t0)
	bound.Spec.NodeName, bound.Status.Phase = "n1", corev1.PodRunning
	tests := []struct {
		name string
		pods []corev1.Pod
		want []clusterv1alpha1.UnschedulableWorkload
	}{{
		name: "no pods",
	}, {
		name: "a Deployment's pods are counted for the Deployment, since the newest became unschedulable",
		pods: []corev1.Pod{
			unsched("web", "a", "ReplicaSet", "web-5d8f", "5d8f", t0),
			unsched("web", "b", "ReplicaSet", "web-5d8f", "5d8f", t0.Add(time.Minute)),
			bound,
		},
		want: []clusterv1alpha1.UnschedulableWorkload{{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "web", Name: "web", Replicas: 2,
			Since: metav1.NewTime(t0.Add(time.Minute))}},
	}, {
		name: "a bare ReplicaSet, a StatefulSet and a Job are their own workloads; a pod without a controller is nobody's",
		pods: []corev1.Pod{
			unsched("ns", "rs-1", "ReplicaSet", "plain", "", t0),
			unsched("ns", "rs-2", "ReplicaSet", "other-1234", "abcd", t0), // the hash does not end its name
			unsched("ns", "db-0", "StatefulSet", "db", "", t0),
			unsched("ns", "job-x", "Job", "job", "", t0),
			unsched("ns", "orphan", "", "", "", t0),
		},
		want: []clusterv1alpha1.UnschedulableWorkload{
			{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "ns", Name: "db", Replicas: 1, Since: metav1.NewTime(t0)},
			{APIVersion: "batch/v1", Kind: "Job", Namespace: "ns", Name: "job", Replicas: 1, Since: metav1.NewTime(t0)},
			{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "ns", Name: "other-1234", Replicas: 1, Since: metav1.NewTime(t0)},
			{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "ns", Name: "plain", Replicas: 1, Since: metav1.NewTime(t0)},
		},
	}, {
		name: "pending pods the scheduler has not ruled on, or waits on for another reason, are not unschedulable",
		pods: []corev1.Pod{
			pendingPod("ns", "new", "ReplicaSet", "web-5d8f", "5d8f", "", "", t0),
			pendingPod("ns", "gated", "ReplicaSet", "web-5d8f", "5d8f", corev1.ConditionFalse, corev1.PodReasonSchedulingGated, t0),
			pendingPod("ns", "placed", "ReplicaSet", "web-5d8f", "5d8f", corev1.ConditionTrue, "", t0),
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, rs, err := Summarize(context.Background(), listers(&pager[corev1.Node]{}, &pager[corev1.Pod]{items: tt.pods}), nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, rs.UnschedulableWorkloads); diff != "" {
				t.Errorf("unschedulable workloads (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnschedulableWorkloadsBounded(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	var pods []corev1.Pod
	for i := range MaxUnschedulableWorkloads + 10 {
		name := fmt.Sprintf("w%03d", i)
		for j := range 1 + i%3 {
			pods = append(pods, pendingPod("ns", fmt.Sprintf("%s-%d", name, j), "StatefulSet", name, "", corev1.ConditionFalse, corev1.PodReasonUnschedulable, t0))
		}
	}
	_, rs, err := Summarize(context.Background(), listers(&pager[corev1.Node]{}, &pager[corev1.Pod]{items: pods}), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := rs.UnschedulableWorkloads
	if len(got) != MaxUnschedulableWorkloads {
		t.Fatalf("%d workloads listed, want %d", len(got), MaxUnschedulableWorkloads)
	}
	// 24 workloads have 3 pods, 25 have 2, 25 have 1: the 15 of 1 listed are the first by name.
	if got[0].Name != "w002" || got[0].Replicas != 3 || got[48].Replicas != 2 || got[49].Name != "w000" || got[63].Name != "w042" {
		t.Errorf("the most unschedulable first, then by name: got %s (%d) first, %s (%d) 50th", got[0].Name, got[0].Replicas, got[49].Name, got[49].Replicas)
	}
}
