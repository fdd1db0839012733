package detector

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1alpha1 "github.com/flotilla-io/flotilla/api/autoscaling/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/cronfhpa"
)

// cronScale returns the CronFederatedHPA whose replicas the template's binding takes, nil
// when none has scaled it (internal/cronfhpa.Select). Cluster-scoped templates have none.
func (r *Reconciler) cronScale(ctx context.Context, key Key) (*cronfhpa.Active, error) {
	if key.Namespace == "" {
		return nil, nil
	}
	list := &autoscalingv1alpha1.CronFederatedHPAList{}
	if err := r.Client.List(ctx, list, client.InNamespace(key.Namespace)); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil // CRDs older than the manager: no CronFederatedHPA can exist
		}
		return nil, err
	}
	return cronfhpa.Select(list.Items, key.GVK.GroupKind(), key.Name), nil
}

// templateOfCron maps a CronFederatedHPA to the template it targets, in the version the
// detector watches its kind in.
func (r *Reconciler) templateOfCron(c *autoscalingv1alpha1.CronFederatedHPA) []Key {
	gvk, err := cronfhpa.Target(c)
	if err != nil || gvk.GroupKind() == cronfhpa.FederatedHPA {
		return nil
	}
	return []Key{{GVK: r.watchedVersion(schema.GroupVersionKind(gvk)), NamespacedName: types.NamespacedName{Namespace: c.Namespace, Name: c.Spec.ScaleTargetRef.Name}}}
}

// cronScaleChanged reports whether an update of a CronFederatedHPA may change its target's
// binding: its target, what its last execution set, or its deletion.
func cronScaleChanged(o, n *autoscalingv1alpha1.CronFederatedHPA) bool {
	return o.Spec.ScaleTargetRef != n.Spec.ScaleTargetRef || !ptrEqual(o.Status.FleetReplicas, n.Status.FleetReplicas) ||
		!ptrEqual(o.Status.TemplateReplicas, n.Status.TemplateReplicas) || o.Status.LastRule != n.Status.LastRule ||
		!o.Status.LastScaleTime.Equal(n.Status.LastScaleTime) || (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil)
}

func ptrEqual[T comparable](a, b *T) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}
