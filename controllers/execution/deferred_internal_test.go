package execution

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flotilla-io/flotilla/internal/member"
)

// TestWaitingChecks: the checks of a kind wait per member connection; the first starts the
// wait, a given-up wait sends the connection's later checks to the member, and a new
// connection waits afresh.
func TestWaitingChecks(t *testing.T) {
	var c waitingChecks
	k := blindKind{cluster: "m1", gvk: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}}
	conn1, conn2 := &member.Member{}, &member.Member{}
	a, b := types.NamespacedName{Namespace: "karmada-es-m1", Name: "a"}, types.NamespacedName{Namespace: "karmada-es-m1", Name: "b"}

	if wait, first := c.add(k, conn1, a); !wait || !first {
		t.Fatalf("first check: wait %v, first %v; want both", wait, first)
	}
	if wait, first := c.add(k, conn1, b); !wait || first {
		t.Fatalf("second check: wait %v, first %v; want to wait, not first", wait, first)
	}
	if got := c.take(k, conn2, false); len(got) != 0 {
		t.Fatalf("another connection took %v", got)
	}
	if got := c.take(k, conn1, true); len(got) != 2 {
		t.Fatalf("took %v, want both checks", got)
	}
	if wait, _ := c.add(k, conn1, a); wait {
		t.Fatal("a check waited again on a connection whose wait was given up")
	}
	if wait, first := c.add(k, conn2, a); !wait || !first {
		t.Fatalf("new connection: wait %v, first %v; want both", wait, first)
	}
	if got := c.take(k, conn2, false); len(got) != 1 {
		t.Fatalf("took %v, want one check", got)
	}
	if wait, first := c.add(k, conn2, b); !wait || !first {
		t.Fatalf("after a sync: wait %v, first %v; want both (a new wait)", wait, first)
	}
	c.forget("m1")
	if len(c.kinds) != 0 {
		t.Fatalf("forget left %v", c.kinds)
	}
}
