package rollout

import (
	"context"
	"encoding/json"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rolloutsv1alpha1 "github.com/flotilla-io/flotilla/api/rollouts/v1alpha1"
	planner "github.com/flotilla-io/flotilla/internal/rollout"
)

// Gate tells the binding controller which revision of a template each cluster's Work
// carries, from the template's Rollout.
type Gate struct {
	Client      client.Reader
	Interpreter Pruner
}

// ClusterTemplate returns the template a cluster's Work is rendered from, and the labels
// its Work carries.
type ClusterTemplate func(cluster string) (*unstructured.Unstructured, map[string]string)

// For returns how each cluster's template is made, or nil when no Rollout governs the
// binding (every cluster takes the template as it is). Only ResourceBindings have Rollouts.
//
//   - a cluster the Rollout lets run the template's revision (or every cluster, when that
//     revision is the stable one) is rendered from the template, with its share of the
//     fleet's maxUnavailable while it rolls;
//   - any other cluster (its stage not open, a cluster that just joined, a rolled-back
//     revision) is rendered from the stable revision, with the template's metadata and
//     replicas.
func (g *Gate) For(ctx context.Context, rb client.Object, tmpl *unstructured.Unstructured) (ClusterTemplate, error) {
	if rb.GetNamespace() == "" {
		return nil, nil
	}
	ro := &rolloutsv1alpha1.Rollout{}
	if err := g.Client.Get(ctx, client.ObjectKeyFromObject(rb), ro); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	rev := planner.Revision(g.Interpreter.Prune(tmpl))
	stable := ro.Status.StableRevision
	var stableBody map[string]any
	if ro.Status.StableTemplate != nil {
		_ = json.Unmarshal(ro.Status.StableTemplate.Raw, &stableBody)
	}
	byName := map[string]rolloutsv1alpha1.ClusterStatus{}
	for _, c := range ro.Status.Clusters {
		byName[c.Name] = c
	}
	return func(cluster string) (*unstructured.Unstructured, map[string]string) {
		c := byName[cluster]
		if stable == "" || rev == stable || stableBody == nil {
			return tmpl, map[string]string{rolloutsv1alpha1.RevisionLabel: rev}
		}
		if c.Target == rev {
			t := tmpl
			if c.MaxUnavailable != nil {
				t = tmpl.DeepCopy()
				planner.WithMaxUnavailable(t, *c.MaxUnavailable)
			}
			return t, map[string]string{rolloutsv1alpha1.RevisionLabel: rev}
		}
		return planner.Compose(tmpl, stableBody), map[string]string{rolloutsv1alpha1.RevisionLabel: stable}
	}, nil
}
