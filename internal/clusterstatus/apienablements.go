package clusterstatus

import (
	"cmp"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// APIEnablements turns discovery's resource lists into a Cluster's status.apiEnablements:
// every group version with the names and kinds of its resources, subresources (pods/status,
// deployments/scale) left out, group versions sorted by name and resources by name.
//
// failed holds the group versions whose discovery failed (an aggregated API whose backend is
// down). Their entries are carried over from previous, so that a flapping APIService does not
// make the scheduler drop the member for workloads of that API.
func APIEnablements(lists []*metav1.APIResourceList, failed map[string]bool, previous []clusterv1alpha1.APIEnablement) []clusterv1alpha1.APIEnablement {
	out := make([]clusterv1alpha1.APIEnablement, 0, len(lists)+len(failed))
	seen := make(map[string]bool, len(lists))
	for _, l := range lists {
		if l == nil || seen[l.GroupVersion] {
			continue
		}
		seen[l.GroupVersion] = true
		e := clusterv1alpha1.APIEnablement{GroupVersion: l.GroupVersion}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			e.Resources = append(e.Resources, clusterv1alpha1.APIResource{Name: r.Name, Kind: r.Kind})
		}
		slices.SortFunc(e.Resources, func(a, b clusterv1alpha1.APIResource) int { return cmp.Compare(a.Name, b.Name) })
		out = append(out, e)
	}
	for _, e := range previous {
		if failed[e.GroupVersion] && !seen[e.GroupVersion] {
			seen[e.GroupVersion] = true
			out = append(out, *e.DeepCopy())
		}
	}
	slices.SortFunc(out, func(a, b clusterv1alpha1.APIEnablement) int { return cmp.Compare(a.GroupVersion, b.GroupVersion) })
	return out
}
