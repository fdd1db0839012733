package clusterstatus

import (
	corev1 "k8s.io/api/core/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// Grade returns the grade of the resource models that a Node with free resources belongs to:
// the highest grade whose every range's minimum the Node meets. With contiguous ranges, as
// Karmada asks of resource models, that is the grade whose [min, max) ranges hold the Node's
// amounts; a Node at or above the top grade's maximum counts in the top grade, so none is
// lost. A resource the Node lacks counts as zero. ok is false when the Node meets no grade.
//
// Summarize grades every Node by what it has free (allocatable minus the requests of its
// Pods), as Karmada does, so the counts tell the scheduler how many Nodes could still take
// a replica of a given size.
func Grade(models []clusterv1alpha1.ResourceModel, free corev1.ResourceList) (grade uint, ok bool) {
	g := newGrading(models)
	amounts := make([]int64, len(g.names))
	for i, name := range g.names {
		q := free[name]
		amounts[i] = amount(name, &q)
	}
	m := g.grade(amounts)
	if m < 0 {
		return 0, false
	}
	return g.models[m].Grade, true
}
