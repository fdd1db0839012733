package join

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/duration"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/clusterstatus"
)

// none is printed for what a Cluster does not report yet.
const none = "-"

// PrintClusters writes the Clusters as a table sorted by name: NAME VERSION MODE ORIGIN READY
// NODES (ready/total) CPU and MEMORY (allocated/allocatable) AGE.
func PrintClusters(w io.Writer, clusters []clusterv1alpha1.Cluster, now time.Time) error {
	sorted := slices.Clone(clusters)
	slices.SortFunc(sorted, func(a, b clusterv1alpha1.Cluster) int { return cmp.Compare(a.Name, b.Name) })
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tMODE\tORIGIN\tREADY\tNODES\tCPU(alloc/total)\tMEMORY(alloc/total)\tAGE")
	for i := range sorted {
		c := &sorted[i]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Name, cmp.Or(c.Status.KubernetesVersion, none),
			cmp.Or(string(c.Spec.SyncMode), none), clusterstatus.Origin(c), ready(c), nodes(c.Status.NodeSummary),
			clusterstatus.Usage(c.Status.ResourceSummary, corev1.ResourceCPU, clusterstatus.FormatCPU, "/"),
			clusterstatus.Usage(c.Status.ResourceSummary, corev1.ResourceMemory, clusterstatus.FormatBytes, "/"),
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
