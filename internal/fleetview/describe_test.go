package fleetview

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
)

// describe cluster shows whether the member credential may escalate, as join recorded it.
func TestDescribeClusterShowsRBACEscalation(t *testing.T) {
	for _, tt := range []struct {
		annotations map[string]string
		want        string
	}{
		{nil, "RBAC Escalation: not allowed"},
		{map[string]string{wellknown.AllowRBACEscalationAnnotation: "true"}, "RBAC Escalation: allowed (joined with --allow-rbac-escalation)"},
	} {
		c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1", Annotations: tt.annotations}}
		var out bytes.Buffer
		if err := PrintClusterDescription(&out, &ClusterDescription{Cluster: c}, time.Now()); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, line := range strings.Split(out.String(), "\n") {
			found = found || strings.Join(strings.Fields(line), " ") == tt.want
		}
		if !found {
			t.Errorf("annotations %v: the description does not say %q:\n%s", tt.annotations, tt.want, out.String())
		}
	}
}
