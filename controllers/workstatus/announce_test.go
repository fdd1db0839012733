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
