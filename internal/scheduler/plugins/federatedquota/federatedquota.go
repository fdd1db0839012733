// Package federatedquota is the filter plugin for FederatedResourceQuota's spec.overall: a
// binding is placed only if its replicas times its replicaRequirements, added to what the
// namespace's other bindings request, stay within the overall limit of every
// FederatedResourceQuota of its namespace. The quotas, with what the other bindings request,
// are CycleState.Quotas, which the scheduler controller reads from its cache.
//
// The resources of overall that scheduling can account for are the requests a binding
// declares: cpu, memory, ephemeral-storage and extended resources, named bare or as
// requests.<name>, and pods (one per replica). Others (limits.*, count/*, storage,
// object counts) are left to the members' ResourceQuotas.
package federatedquota

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/pkg/scheduler/framework"
)

// Name is the plugin's registry name.
const Name = "FederatedResourceQuota"

// Plugin refuses every cluster when the binding would exceed a quota of its namespace: the
// limit is the namespace's, not a cluster's, so no cluster fits.
type Plugin struct{}

var _ framework.FilterPlugin = Plugin{}

// New returns the plugin.
func New() Plugin { return Plugin{} }

// Name implements framework.Plugin.
func (Plugin) Name() string { return Name }

// NewFilter checks the quotas once per cycle; without quotas, or within them, no filter is
// returned.
func (Plugin) NewFilter(state *framework.CycleState) (framework.Filter, error) {
	if len(state.Quotas) == 0 {
		return nil, nil
	}
	adding := Request(state.Spec.Replicas, state.Spec.ReplicaRequirements)
	for _, q := range state.Quotas {
		if over := Exceeds(q.Overall, q.Requested, adding); len(over) > 0 {
			reason := fmt.Sprintf("would exceed the overall limit of FederatedResourceQuota %s: %s", q.Name, Describe(over))
			return func(*clusterv1alpha1.Cluster) string { return reason }, nil
		}
	}
	return nil, nil
}

// PodsResource counts replicas in overall.
const PodsResource corev1.ResourceName = "pods"

// requestName is the request an overall resource bounds: cpu and requests.cpu bound cpu,
// pods the replicas; ok is false for what a binding does not declare (limits.*, count/*,
// object counts, storage).
func requestName(overall corev1.ResourceName) (corev1.ResourceName, bool) {
	n := string(overall)
	if n == string(PodsResource) {
		return PodsResource, true
	}
	n = strings.TrimPrefix(n, "requests.")
	if n == "storage" || strings.HasPrefix(n, "limits.") || strings.HasPrefix(n, "count/") || !isRequest(n) {
		return "", false
	}
	return corev1.ResourceName(n), true
}

// isRequest is true for the resources a pod requests: cpu, memory, ephemeral-storage, hugepages
// and extended resources (a domain-qualified name such as nvidia.com/gpu).
func isRequest(n string) bool {
	switch n {
	case string(corev1.ResourceCPU), string(corev1.ResourceMemory), string(corev1.ResourceEphemeralStorage):
		return true
	}
	return strings.HasPrefix(n, "hugepages-") || strings.Contains(n, "/")
}

// Request is what replicas of one replica's requirements request in total, with pods the
// replica count. Nothing for no replicas.
func Request(replicas int32, req *workv1alpha2.ReplicaRequirements) corev1.ResourceList {
	if replicas <= 0 {
		return nil
	}
	out := corev1.ResourceList{PodsResource: *resource.NewQuantity(int64(replicas), resource.DecimalSI)}
	if req == nil {
		return out
	}
	for name, q := range req.ResourceRequest {
		total := q.DeepCopy()
		total.Mul(int64(replicas))
		out[name] = total
	}
	return out
}

// Usage is what a scheduled binding requests: the replicas of each of its clusters
// (spec.clusters) times its replicaRequirements. An unscheduled binding requests nothing.
func Usage(spec *workv1alpha2.ResourceBindingSpec) corev1.ResourceList {
	var replicas int32
	for _, tc := range spec.Clusters {
		replicas += tc.Replicas
	}
	return Request(replicas, spec.ReplicaRequirements)
}

// Add adds b into a (a may be nil) and returns it.
func Add(a, b corev1.ResourceList) corev1.ResourceList {
	if a == nil {
		a = corev1.ResourceList{}
	}
	for name, q := range b {
		sum := a[name]
		sum.Add(q)
		a[name] = sum
	}
	return a
}

// Excess is how far one resource of overall would be exceeded.
type Excess struct {
	// Resource is the overall resource, as spec.overall names it.
	Resource corev1.ResourceName
	// Limit is overall's value, Total what would be requested in all, By the difference.
	Limit, Total, By resource.Quantity
}

// Exceeds returns, sorted by resource, the resources of overall that requested plus adding
// would exceed. requested and adding are keyed by request name (cpu, not requests.cpu; pods).
// Resources of overall a binding does not declare are not checked; adding nothing of a
// resource never exceeds it (a quota lowered under what already runs refuses only the
// bindings that ask for more of it).
func Exceeds(overall, requested, adding corev1.ResourceList) []Excess {
	var out []Excess
	for name, limit := range overall {
		req, ok := requestName(name)
		if !ok {
			continue
		}
		add, ok := adding[req]
		if !ok || add.Sign() <= 0 {
			continue
		}
		total := requested[req].DeepCopy()
		total.Add(add)
		if total.Cmp(limit) <= 0 {
			continue
		}
		by := total.DeepCopy()
		by.Sub(limit)
		out = append(out, Excess{Resource: name, Limit: limit, Total: total, By: by})
	}
	slices.SortFunc(out, func(a, b Excess) int { return strings.Compare(string(a.Resource), string(b.Resource)) })
	return out
}

// Describe says by how much each resource would be exceeded, for example
// "cpu over by 500m (2500m requested, limit 2); pods over by 1 (11 requested, limit 10)".
func Describe(over []Excess) string {
	parts := make([]string, len(over))
	for i, e := range over {
		parts[i] = fmt.Sprintf("%s over by %s (%s requested, limit %s)", e.Resource, e.By.String(), e.Total.String(), e.Limit.String())
	}
	return strings.Join(parts, "; ")
}
