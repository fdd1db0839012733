package execution

import (
	"testing"
	"time"
)

func TestForgetMember(t *testing.T) {
	r := &Reconciler{}
	for _, cluster := range []string{"m1", "m10"} {
		r.knownNamespaces(cluster, nil).names.Store("ns", struct{}{})
		r.grantedGroups.Store(cluster+"/example.io", time.Now())
	}
	r.forgetMember("m1")
	if n := r.RemembersMember("m1"); n != 0 {
		t.Fatalf("%d entries kept of the member m1 after it was removed", n)
	}
	if n := r.RemembersMember("m10"); n != 2 {
		t.Fatalf("%d entries kept of the member m10, want its namespace and group", n)
	}
}
