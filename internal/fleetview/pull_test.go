package fleetview

import (
	"fmt"
	"testing"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// A Pull member cannot be read from the host: it is reported, with what to do, but is not a
// failure (the command's exit status stays 0 when the other members answer).
func TestPullMemberIsNotAFailure(t *testing.T) {
	h := &Host{}
	c := &clusterv1alpha1.Cluster{Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull}}
	c.Name = "edge"
	_, err := h.MemberConfig(t.Context(), c)
	if err == nil {
		t.Fatal("MemberConfig of a Pull member: want an error")
	}
	r := &GetResult{Members: []MemberResult{{Err: err}, {Err: fmt.Errorf("connection refused")}, {}}}
	if got := r.Failed(); got != 1 {
		t.Errorf("Failed() = %d, want 1 (the Pull member does not count)", got)
	}
}
