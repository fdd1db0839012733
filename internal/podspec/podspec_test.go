package podspec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestPath(t *testing.T) {
	tests := []struct {
		gk   schema.GroupKind
		want []string
	}{
		{schema.GroupKind{Kind: "Pod"}, []string{"spec"}},
		{schema.GroupKind{Group: "apps", Kind: "Deployment"}, []string{"spec", "template", "spec"}},
		{schema.GroupKind{Group: "batch", Kind: "Job"}, []string{"spec", "template", "spec"}},
		{schema.GroupKind{Group: "batch", Kind: "CronJob"}, []string{"spec", "jobTemplate", "spec", "template", "spec"}},
		{schema.GroupKind{Group: "example.com", Kind: "Deployment"}, nil},
		{schema.GroupKind{Kind: "ConfigMap"}, nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, Path(tt.gk)); diff != "" {
			t.Errorf("Path(%v) mismatch (-want +got):\n%s", tt.gk, diff)
		}
	}
	p := Path(schema.GroupKind{Kind: "Pod"})
	p[0] = "mutated"
	if Path(schema.GroupKind{Kind: "Pod"})[0] != "spec" {
		t.Error("Path returned a slice that aliases the table")
	}
}
