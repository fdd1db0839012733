package placementdecision

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inventoryv1alpha1 "github.com/flotilla-io/flotilla/api/clusterinventory/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/bindings"
)

// BindingAnnotation on every slice names its binding: <Kind>/<namespace>/<name>
// (ClusterResourceBinding/<name> for a cluster-scoped one).
const BindingAnnotation = "flotilla.io/binding"

// maxNameBase is the longest base name kept as it is: <base>-<index> stays within the 253
// characters of a name for 10^6 slices.
const maxNameBase = 245

// Input is what the PlacementDecisions of a binding are computed from.
type Input struct {
	// Binding is a ResourceBinding or a ClusterResourceBinding.
	Binding client.Object
	// ProfileNamespace is where the ClusterProfiles are: the namespace of every reference,
	// and of the slices of ClusterResourceBindings (a ResourceBinding's are in its own).
	ProfileNamespace string
}

// Desired returns the PlacementDecision slices of a binding, in order: the clusters of
// spec.clusters sorted by name (a stable order, so that an unchanged placement is not
// written again), at most MaxDecisionsPerSlice per slice, and at least one slice (with no
// cluster while the binding is not scheduled anywhere). Slices are named <base>-<index>,
// where base is the binding's name (crb-<name> for a ClusterResourceBinding), and labelled
// with the decision key DecisionKey(binding) and their index, as KEP-5313 describes.
func Desired(in Input) []*inventoryv1alpha1.PlacementDecision {
	b := in.Binding
	spec := bindings.Spec(b)
	kind := bindings.Kind(b)
	clusters := slices.Clone(spec.Clusters)
	slices.SortFunc(clusters, func(a, b workv1alpha2.TargetCluster) int { return cmp.Compare(a.Name, b.Name) })
	scheduler := spec.SchedulerName
	if scheduler == "" {
		scheduler = wellknown.DefaultSchedulerName
	}
	ns, base := Location(b.GetNamespace(), b.GetName(), in.ProfileNamespace)
	key := DecisionKey(b.GetNamespace(), b.GetName())
	ref := kind + "/" + b.GetName()
	if b.GetNamespace() != "" {
		ref = kind + "/" + b.GetNamespace() + "/" + b.GetName()
	}
	n := max(1, (len(clusters)+inventoryv1alpha1.MaxDecisionsPerSlice-1)/inventoryv1alpha1.MaxDecisionsPerSlice)
	out := make([]*inventoryv1alpha1.PlacementDecision, 0, n)
	for i := range n {
		lo := i * inventoryv1alpha1.MaxDecisionsPerSlice
		hi := min(lo+inventoryv1alpha1.MaxDecisionsPerSlice, len(clusters))
		decisions := make([]inventoryv1alpha1.ClusterDecision, 0, hi-lo)
		for _, c := range clusters[lo:hi] {
			decisions = append(decisions, inventoryv1alpha1.ClusterDecision{
				ClusterProfileRef: inventoryv1alpha1.ClusterProfileReference{Name: c.Name, Namespace: in.ProfileNamespace},
				Reason:            reason(spec, c),
			})
		}
		out = append(out, &inventoryv1alpha1.PlacementDecision{
			TypeMeta: metav1.TypeMeta{APIVersion: inventoryv1alpha1.GroupVersion.String(), Kind: "PlacementDecision"},
			ObjectMeta: metav1.ObjectMeta{
				Name: SliceName(base, i), Namespace: ns,
				Labels: map[string]string{
					inventoryv1alpha1.DecisionKeyLabel:   key,
					inventoryv1alpha1.DecisionIndexLabel: strconv.Itoa(i),
					wellknown.InventoryManagedByLabel:    wellknown.InventoryManagedBy,
				},
				Annotations: map[string]string{BindingAnnotation: ref},
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: workv1alpha2.GroupVersion.String(), Kind: kind, Name: b.GetName(), UID: b.GetUID(), Controller: ptr.To(true),
				}},
			},
			Decisions:     decisions,
			SchedulerName: scheduler,
		})
	}
	return out
}

// reason says how the scheduler placed the cluster.
func reason(spec *workv1alpha2.ResourceBindingSpec, c workv1alpha2.TargetCluster) string {
	if c.Replicas > 0 {
		return fmt.Sprintf("scheduled with %d of %d replicas", c.Replicas, spec.Replicas)
	}
	return "scheduled"
}

// Location is the namespace of a binding's slices and the base of their names.
func Location(bindingNamespace, bindingName, profileNamespace string) (namespace, base string) {
	namespace, base = bindingNamespace, bindingName
	if namespace == "" {
		namespace, base = profileNamespace, "crb-"+base
	}
	if len(base) > maxNameBase {
		sum := sha256.Sum256([]byte(base))
		base = base[:maxNameBase-17] + "-" + hex.EncodeToString(sum[:8])
	}
	return namespace, base
}

// SliceName is the name of slice i.
func SliceName(base string, i int) string { return base + "-" + strconv.Itoa(i) }

// DecisionKey is the decision-key label of a binding's slices: its kind's short name and a
// hash of its namespace and name, which fits a label value whatever their length and is known
// after the binding is gone.
func DecisionKey(bindingNamespace, bindingName string) string {
	prefix := "rb-"
	if bindingNamespace == "" {
		prefix = "crb-"
	}
	sum := sha256.Sum256([]byte(bindingNamespace + "/" + bindingName))
	return prefix + hex.EncodeToString(sum[:16])
}
