package workstatus

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAnnounceFullyApplied(t *testing.T) {
	const (
		none  = metav1.ConditionUnknown // no FullyApplied condition yet
		yes   = metav1.ConditionTrue
		no    = metav1.ConditionFalse
		quiet = false
		told  = true
	)
	for _, tc := range []struct {
		name          string
		successEvents bool
		was, now      metav1.ConditionStatus
		want          bool
	}{
		{"first propagation, success events off", false, none, yes, quiet},
		{"first propagation, success events on", true, none, yes, told},
		{"recovery, success events off", false, no, yes, told},
		{"recovery, success events on", true, no, yes, told},
		{"still applied", true, yes, yes, quiet},
		{"failing", true, yes, no, quiet},
		{"failing from the start", true, none, no, quiet},
		{"still failing", false, no, no, quiet},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := announceFullyApplied(tc.successEvents, tc.was, tc.now); got != tc.want {
				t.Errorf("announceFullyApplied(%v, %s, %s) = %v, want %v", tc.successEvents, tc.was, tc.now, got, tc.want)
			}
		})
	}
}

func TestSameJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b any
		want bool
	}{
		{"numbers decoded as int64 and float64", map[string]any{"replicas": int64(3)}, map[string]any{"replicas": float64(3)}, true},
		{"numbers as int32 and int64", map[string]any{"replicas": int32(3)}, map[string]any{"replicas": int64(3)}, true},
		{"a value differs", map[string]any{"replicas": int64(3)}, map[string]any{"replicas": int64(2)}, false},
		{"a field more", map[string]any{"replicas": int64(3)}, map[string]any{"replicas": int64(3), "ready": int64(1)}, false},
		{"no status and an empty one", nil, map[string]any{}, false},
		{"both absent", nil, nil, true},
	} {
		if got := sameJSON(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: sameJSON = %v, want %v", tc.name, got, tc.want)
		}
	}
}
