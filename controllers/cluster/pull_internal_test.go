package cluster

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
)

func TestPullReady(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	lease := func(age time.Duration, seconds int32) *coordinationv1.Lease {
		return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{
			RenewTime: ptr.To(metav1.NewMicroTime(now.Add(-age))), LeaseDurationSeconds: ptr.To(seconds)}}
	}
	agentReady := &clusterv1alpha1.Cluster{Status: clusterv1alpha1.ClusterStatus{Conditions: []metav1.Condition{{
		Type: wellknown.ClusterConditionReady, Status: metav1.ConditionTrue, Reason: wellknown.ClusterReasonReady}}}}
	agentReady.Name = "edge-1"
	const recovery = "kubectl flotilla token create edge-1"
	for _, tc := range []struct {
		name      string
		cluster   *clusterv1alpha1.Cluster
		lease     *coordinationv1.Lease
		want      metav1.ConditionStatus
		wantStale bool
		// recovery says whether the message tells how to give the agent a new credential.
		recovery bool
	}{
		{"no agent yet", agentReady, nil, metav1.ConditionUnknown, true, true},
		{"fresh lease: the agent's Ready", agentReady, lease(5*time.Second, 15), metav1.ConditionTrue, false, false},
		{"lease just within its duration", agentReady, lease(15*time.Second, 15), metav1.ConditionTrue, false, false},
		{"lease older than its duration", agentReady, lease(16*time.Second, 15), metav1.ConditionUnknown, true, false},
		{"silent for days: perhaps past its credential's expiry", agentReady, lease(8*24*time.Hour, 15), metav1.ConditionUnknown, true, true},
		{"fresh lease, no report yet", &clusterv1alpha1.Cluster{}, lease(time.Second, 15), metav1.ConditionUnknown, false, false},
	} {
		got, stale := pullReady(tc.cluster, tc.lease, now)
		if got.Status != tc.want || stale != tc.wantStale {
			t.Errorf("%s: pullReady = %s (stale %v), want %s (stale %v): %s", tc.name, got.Status, stale, tc.want, tc.wantStale, got.Message)
		}
		if strings.Contains(got.Message, recovery) != tc.recovery {
			t.Errorf("%s: message %q: naming %q is %v, want %v", tc.name, got.Message, recovery, !tc.recovery, tc.recovery)
		}
	}
}
