package interpreter

import (
	"testing"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func TestCRDHealth(t *testing.T) {
	const crd = `apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, metadata: {name: widgets.example.com, generation: 1}`
	for _, tt := range []struct {
		name, status string
		want         workv1alpha1.ResourceHealth
	}{
		{"just created", ``, workv1alpha1.ResourceUnhealthy},
		{"names accepted, not established", `status: {conditions: [{type: NamesAccepted, status: "True"}, {type: Established, status: "False"}]}`, workv1alpha1.ResourceUnhealthy},
		{"names in conflict", `status: {conditions: [{type: NamesAccepted, status: "False", reason: NameConflict}]}`, workv1alpha1.ResourceUnhealthy},
		{"established", `status: {conditions: [{type: NamesAccepted, status: "True"}, {type: Established, status: "True"}]}`, workv1alpha1.ResourceHealthy},
		{"odd conditions", `status: {conditions: x}`, workv1alpha1.ResourceUnknownHealth},
	} {
		t.Run(tt.name, func(t *testing.T) {
			obj := "{" + crd
			if tt.status != "" {
				obj += ", " + tt.status
			}
			if got := (Interpreter{}).Health(fromYAML(t, obj+"}")); got != tt.want {
				t.Errorf("Health() = %s, want %s", got, tt.want)
			}
		})
	}
}
