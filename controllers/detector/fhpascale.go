package detector

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1alpha1 "github.com/flotilla-io/flotilla/api/autoscaling/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/fhpa"
)

// autoScale returns the FederatedHPA whose desired replicas the template's binding takes,
// nil when none has decided (internal/fhpa.Select). Cluster-scoped templates have none. A
// FederatedHPA takes precedence over a CronFederatedHPA scaling the same template.
func (r *Reconciler) autoScale(ctx context.Context, key Key) (*fhpa.Active, error) {
	if key.Namespace == "" {
		return nil, nil
	}
	list := &autoscalingv1alpha1.FederatedHPAList{}
	if err := r.Client.List(ctx, list, client.InNamespace(key.Namespace)); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil // CRDs older than the manager: no FederatedHPA can exist
		}
		return nil, err
	}
	return fhpa.Select(list.Items, key.GVK.GroupKind(), key.Name), nil
}

// templateOfFHPA maps a FederatedHPA to the template it targets, in the version the detector
// watches its kind in.
func (r *Reconciler) templateOfFHPA(h *autoscalingv1alpha1.FederatedHPA) []Key {
	gv, err := schema.ParseGroupVersion(h.Spec.ScaleTargetRef.APIVersion)
	if err != nil || h.Spec.ScaleTargetRef.Kind == "" || h.Spec.ScaleTargetRef.Name == "" {
		return nil
	}
	gvk := r.watchedVersion(gv.WithKind(h.Spec.ScaleTargetRef.Kind))
	return []Key{{GVK: gvk, NamespacedName: types.NamespacedName{Namespace: h.Namespace, Name: h.Spec.ScaleTargetRef.Name}}}
}

// autoScaleChanged reports whether an update of a FederatedHPA may change its target's
// binding: its target, its desired replicas, or its deletion.
func autoScaleChanged(o, n *autoscalingv1alpha1.FederatedHPA) bool {
	return o.Spec.ScaleTargetRef != n.Spec.ScaleTargetRef || o.Status.DesiredReplicas != n.Status.DesiredReplicas ||
		(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil)
}

// watchedVersion returns gvk in the version the detector watches its kind in (a scaler names
// its target in any served version; the template's Key has the watched one), or gvk itself
// when the kind is not watched.
func (r *Reconciler) watchedVersion(gvk schema.GroupVersionKind) schema.GroupVersionKind {
	if r.watcher == nil {
		return gvk
	}
	for w := range r.watcher.watchedKinds() {
		if w.GroupKind() == gvk.GroupKind() {
			return w
		}
	}
	return gvk
}
