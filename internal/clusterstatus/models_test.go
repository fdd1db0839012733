package clusterstatus

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

func TestGrade(t *testing.T) {
	tests := []struct {
		name      string
		models    []clusterv1alpha1.ResourceModel
		free      corev1.ResourceList
		wantGrade uint
		wantOK    bool
	}{
		{"nothing free is grade 0", models(), nil, 0, true},
		{"inside the lowest ranges", models(), list("cpu", "3999m", "memory", "15Gi"), 0, true},
		{"a minimum is inclusive", models(), list("cpu", "4", "memory", "16Gi"), 1, true},
		{"the scarcer resource decides", models(), list("cpu", "64", "memory", "20Gi"), 1, true},
		{"above the top maximum stays in the top grade", models(), list("cpu", "4096", "memory", "2Pi"), 2, true},
		{"resources no model bounds do not matter", models(), list("cpu", "9", "memory", "40Gi", "nvidia.com/gpu", "8"), 2, true},
		{"below every minimum has no grade", []clusterv1alpha1.ResourceModel{{
			Grade:  3,
			Ranges: []clusterv1alpha1.ResourceModelRange{{Name: corev1.ResourceCPU, Min: resource.MustParse("1"), Max: resource.MustParse("2")}},
		}}, list("cpu", "500m"), 0, false},
		{"no models, no grade", nil, list("cpu", "1"), 0, false},
		{"a gap between ranges falls to the lower grade", []clusterv1alpha1.ResourceModel{
			{Grade: 0, Ranges: []clusterv1alpha1.ResourceModelRange{{Name: corev1.ResourceCPU, Min: resource.MustParse("0"), Max: resource.MustParse("2")}}},
			{Grade: 1, Ranges: []clusterv1alpha1.ResourceModelRange{{Name: corev1.ResourceCPU, Min: resource.MustParse("4"), Max: resource.MustParse("8")}}},
		}, list("cpu", "3"), 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, ok := Grade(tt.models, tt.free)
			if g != tt.wantGrade || ok != tt.wantOK {
				t.Errorf("Grade = %d, %v; want %d, %v", g, ok, tt.wantGrade, tt.wantOK)
			}
		})
	}
}
