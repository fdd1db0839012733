package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/bindings"
	"github.com/flotilla-io/flotilla/internal/localcluster"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// BenchmarkStatusWrite measures what one status write of a ResourceBinding costs the host
// apiserver and etcd, by the kind of request: a server-side apply of the fields a controller
// owns (what the scheduler and the binding-status controller send), and a JSON merge patch of
// the same change (which replaces the lists it names whole). Each mode writes to bindings of
// its own, shaped as on the propagation bench (3 clusters, two conditions, an aggregated
// status per cluster), and every write changes something. It prints the CPU time per write
// of the host apiserver and etcd, read from /proc; nothing is asserted.
//
// Measured on the 2-core machine (Kubernetes 1.36), 1,000 writes a mode, six runs each:
// server-side apply 3.45-4.66 ms of host apiserver CPU per write, merge patch 3.41-4.00 ms;
// etcd about 0.5-0.7 ms either way. The difference is within this machine's noise: switching
// the two status writes per template from server-side apply would save the host at most
// about 0.5 ms of its 37-47 ms per template, and cost the client a diff (3.1-4.1 ms wall per
// write against 3.8-4.2).
//
//	go test -run '^$' -bench StatusWrite -benchtime 1x ./test/bench/
func BenchmarkStatusWrite(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	fleet, err := localcluster.StartFleet(ctx, localcluster.FleetOptions{
		CRDDir: filepath.Join(framework.RepoRoot(), "config", "crd", "bases"),
		Host:   localcluster.Options{Name: "statuswrite-host"},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = fleet.Stop() }()
	c, err := client.New(fleet.Host.RESTConfig(), client.Options{Scheme: flotillascheme.New()})
	if err != nil {
		b.Fatal(err)
	}
	const ns, bindingsPerMode, rounds = "statuswrite", 200, 5
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		b.Fatal(err)
	}
	modes := []struct {
		name, key string
		write     func(rb *workv1alpha2.ResourceBinding, round int) error
	}{
		{"server-side apply", "apply", func(rb *workv1alpha2.ResourceBinding, round int) error {
			st := benchBindingStatus(round)
			return bindings.ApplyStatus(ctx, c, rb, "bench-apply", map[string]any{
				"conditions": st.Conditions, "aggregatedStatus": st.AggregatedStatus})
		}},
		{"JSON merge patch", "merge", func(rb *workv1alpha2.ResourceBinding, round int) error {
			before := rb.DeepCopy()
			rb.Status = benchBindingStatus(round)
			return c.Status().Patch(ctx, rb, client.MergeFrom(before))
		}},
	}
	b.ResetTimer()
	for iter := range b.N {
		for _, m := range modes {
			rbs := make([]*workv1alpha2.ResourceBinding, bindingsPerMode)
			for i := range rbs {
				rbs[i] = benchBinding(ns, fmt.Sprintf("%s-%d-%d", m.key, iter, i))
				if err := c.Create(ctx, rbs[i]); err != nil {
					b.Fatal(err)
				}
				if err := m.write(rbs[i], 0); err != nil { // the first write: not measured
					b.Fatal(err)
				}
			}
			before := sampleCPU(fleet.Host, nil)
			start := time.Now()
			for r := 1; r <= rounds; r++ {
				for _, rb := range rbs {
					if err := m.write(rb, r); err != nil {
						b.Fatalf("%s: %v", m.name, err)
					}
				}
			}
			wall := time.Since(start)
			after := sampleCPU(fleet.Host, nil)
			n := float64(bindingsPerMode * rounds)
			fmt.Printf("binding status write, %-18s %5d writes: host apiserver %.2f ms CPU per write, etcd %.2f ms, %.1f ms wall per write (one writer)\n",
				m.name, bindingsPerMode*rounds, 1000*(after.hostAPIServer-before.hostAPIServer)/n,
				1000*(after.hostEtcd-before.hostEtcd)/n, float64(wall.Milliseconds())/n)
		}
	}
}

// benchBinding is a binding as the detector writes one for the propagation bench's
// Deployments: placed on three clusters.
func benchBinding(ns, name string) *workv1alpha2.ResourceBinding {
	rb := &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	rb.Spec.Resource = workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: name, UID: "0f4b7a52-6c3e-4b61-9a57-0d2d1b1e5c3a"}
	rb.Spec.Replicas = 3
	for _, m := range []string{"member1", "member2", "member3"} {
		rb.Spec.Clusters = append(rb.Spec.Clusters, workv1alpha2.TargetCluster{Name: m, Replicas: 1})
	}
	return rb
}

// benchBindingStatus is a status as the binding-status controller writes it, different in
// every round.
func benchBindingStatus(round int) workv1alpha2.ResourceBindingStatus {
	at := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, round, 0, time.UTC))
	st := workv1alpha2.ResourceBindingStatus{Conditions: []metav1.Condition{
		{Type: "Scheduled", Status: metav1.ConditionTrue, Reason: "BindingScheduled", Message: "Binding has been scheduled to member1, member2, member3", LastTransitionTime: at},
		{Type: "FullyApplied", Status: metav1.ConditionTrue, Reason: "FullyAppliedSuccess", Message: fmt.Sprintf("All works have been successfully applied (round %d)", round), LastTransitionTime: at},
	}}
	for _, m := range []string{"member1", "member2", "member3"} {
		raw, _ := json.Marshal(map[string]any{"replicas": 1, "readyReplicas": round % 2, "updatedReplicas": 1, "availableReplicas": round % 2,
			"observedGeneration": round, "generation": round})
		st.AggregatedStatus = append(st.AggregatedStatus, workv1alpha2.AggregatedStatusItem{ClusterName: m, Applied: true,
			Health: "Healthy", Status: &runtime.RawExtension{Raw: raw}})
	}
	return st
}
