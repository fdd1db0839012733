package clusterstatus

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// Usage prints how much of a resource is allocated out of what is allocatable, as
// "allocated<sep>allocatable" with format, or "-" when the summary does not say.
func Usage(s *clusterv1alpha1.ResourceSummary, name corev1.ResourceName, format func(resource.Quantity) string, sep string) string {
	if s == nil {
		return "-"
	}
	total, ok := s.Allocatable[name]
	if !ok {
		return "-"
	}
	return format(s.Allocated[name]) + sep + format(total)
}

// FormatCPU prints cores with at most one decimal: 8, 1.5, 0.1.
func FormatCPU(q resource.Quantity) string {
	return strconv.FormatFloat(float64(q.MilliValue()/100)/10, 'f', -1, 64)
}

// FormatBytes prints a binary size with at most one decimal: 512Mi, 1.5Gi, 16Gi.
func FormatBytes(q resource.Quantity) string {
	v := float64(q.Value())
	units := []string{"", "Ki", "Mi", "Gi", "Ti", "Pi"}
	u := 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	return strconv.FormatFloat(float64(int64(v*10))/10, 'f', -1, 64) + units[u]
}
