package clusterstatus

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/flotilla-io/flotilla/api/wellknown"
)

func TestReadyCondition(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:1/readyz", Err: syscall.ECONNREFUSED}
	notReady := apierrors.NewGenericServerResponse(500, "GET", schema.GroupResource{}, "", "[-]etcd failed", 0, true)
	unauthorized := apierrors.NewUnauthorized("invalid bearer token")
	ready := &metav1.Condition{Type: wellknown.ClusterConditionReady, Status: metav1.ConditionTrue, Reason: wellknown.ClusterReasonReady, Message: messageReady}

	tests := []struct {
		name        string
		prev        *metav1.Condition
		health      Health
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string // a substring
	}{
		{"healthy", nil, Health{Probed: true, Healthy: true}, metav1.ConditionTrue, wellknown.ClusterReasonReady, "ready to accept workloads"},
		{"no credentials", ready, Health{ConnectError: errors.New(`secret "m1" not found`)}, metav1.ConditionFalse, wellknown.ClusterReasonNotReady, `secret "m1" not found`},
		{"one failure keeps Ready", ready, Health{Probed: true, Failures: 1, LastError: refused}, metav1.ConditionTrue, wellknown.ClusterReasonReady, messageReady},
		{"down and silent is Unknown", ready, Health{Probed: true, Down: true, Failures: 3, LastError: refused}, metav1.ConditionUnknown, wellknown.ClusterReasonNotReachable, "connection refused"},
		{"down and answering is False", ready, Health{Probed: true, Down: true, Failures: 3, LastError: notReady}, metav1.ConditionFalse, wellknown.ClusterReasonNotReady, "3 failed probes"},
		{"rejected credentials say what to do", ready, Health{Probed: true, Down: true, Failures: 3, LastError: unauthorized}, metav1.ConditionFalse, wellknown.ClusterReasonNotReady, "kubectl flotilla join"},
		{"a new member that fails its first probe is Unknown", nil, Health{Probed: true, Failures: 1, LastError: refused}, metav1.ConditionUnknown, wellknown.ClusterReasonNotReachable, "Waiting"},
		{"a new member not probed yet is Unknown", nil, Health{}, metav1.ConditionUnknown, wellknown.ClusterReasonNotReachable, "Waiting"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ReadyCondition(tt.prev, tt.health)
			if got.Type != wellknown.ClusterConditionReady || got.Status != tt.wantStatus || got.Reason != tt.wantReason || !strings.Contains(got.Message, tt.wantMessage) {
				t.Errorf("got %s/%s %q; want %s/%s containing %q", got.Status, got.Reason, got.Message, tt.wantStatus, tt.wantReason, tt.wantMessage)
			}
		})
	}
}

func TestAnswered(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{apierrors.NewUnauthorized("no"), true},
		{fmt.Errorf("probe: %w", apierrors.NewServiceUnavailable("not ready")), true},
		{&url.Error{Op: "Get", URL: "https://x", Err: syscall.ECONNREFUSED}, false},
		{errors.New("context deadline exceeded"), false},
	} {
		if got := Answered(tt.err); got != tt.want {
			t.Errorf("Answered(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
