package join

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/duration"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
)

// none is printed for what a Cluster does not report yet.
const none = "-"

// PrintClusters writes the Clusters as a table sorted by name: NAME VERSION MODE READY NODES
// (ready/total) CPU and MEMORY (allocated/allocatable) AGE.
func PrintClusters(w io.Writer, clusters []clusterv1alpha1.Cluster, now time.Time) error {
	sorted := slices.Clone(clusters)
	slices.SortFunc(sorted, func(a, b clusterv1alpha1.Cluster) int { return cmp.Compare(a.Name, b.Name) })
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tMODE\tREADY\tNODES\tCPU(alloc/total)\tMEMORY(alloc/total)\tAGE")
	for i := range sorted {
		c := &sorted[i]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Name, cmp.Or(c.Status.KubernetesVersion, none),
			cmp.Or(string(c.Spec.SyncMode), none), ready(c), nodes(c.Status.NodeSummary),
			usage(c.Status.ResourceSummary, corev1.ResourceCPU, formatCPU),
			usage(c.Status.ResourceSummary, corev1.ResourceMemory, formatBytes),
			duration.HumanDuration(now.Sub(c.CreationTimestamp.Time)))
	}
	return tw.Flush()
}

func ready(c *clusterv1alpha1.Cluster) string {
	if cond := meta.FindStatusCondition(c.Status.Conditions, wellknown.ClusterConditionReady); cond != nil {
		return string(cond.Status)
	}
	return "Unknown"
}

func nodes(s *clusterv1alpha1.NodeSummary) string {
	if s == nil {
		return none
	}
	return fmt.Sprintf("%d/%d", s.ReadyNum, s.TotalNum)
}

func usage(s *clusterv1alpha1.ResourceSummary, name corev1.ResourceName, format func(resource.Quantity) string) string {
	if s == nil {
		return none
	}
	total, ok := s.Allocatable[name]
	if !ok {
		return none
	}
	return format(s.Allocated[name]) + "/" + format(total)
}

// formatCPU prints cores with at most one decimal: 8, 1.5, 0.1.
func formatCPU(q resource.Quantity) string {
	return strconv.FormatFloat(float64(q.MilliValue()/100)/10, 'f', -1, 64)
}

// formatBytes prints a binary size with at most one decimal: 512Mi, 1.5Gi, 16Gi.
func formatBytes(q resource.Quantity) string {
	v := float64(q.Value())
	units := []string{"", "Ki", "Mi", "Gi", "Ti", "Pi"}
	u := 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	return strconv.FormatFloat(float64(int64(v*10))/10, 'f', -1, 64) + units[u]
}
