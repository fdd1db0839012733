package clusterstatus

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// grading counts Nodes per resource model grade. Amounts are int64s, milli-units for CPU
// and whole units for everything else, in the order of names.
type grading struct {
	models []clusterv1alpha1.ResourceModel // by grade
	names  []corev1.ResourceName           // every resource a model bounds
	// mins[m][i] is model m's minimum of names[i]; bounded[m][i] says whether m bounds it.
	mins    [][]int64
	bounded [][]bool
	// nodes maps a Node's name to its allocatable amounts followed by its Pods' requests.
	nodes map[string][]int64
}

func newGrading(models []clusterv1alpha1.ResourceModel) *grading {
	g := &grading{models: slices.Clone(models), nodes: map[string][]int64{}}
	slices.SortStableFunc(g.models, func(a, b clusterv1alpha1.ResourceModel) int { return cmp.Compare(a.Grade, b.Grade) })
	index := map[corev1.ResourceName]int{}
	for _, m := range g.models {
		for _, r := range m.Ranges {
			if _, ok := index[r.Name]; !ok {
				index[r.Name] = len(g.names)
				g.names = append(g.names, r.Name)
			}
		}
	}
	g.mins = make([][]int64, len(g.models))
	g.bounded = make([][]bool, len(g.models))
	for m, model := range g.models {
		g.mins[m] = make([]int64, len(g.names))
		g.bounded[m] = make([]bool, len(g.names))
		for _, r := range model.Ranges {
			i := index[r.Name]
			g.mins[m][i] = amount(r.Name, &r.Min)
			g.bounded[m][i] = true
		}
	}
	return g
}

func (g *grading) resetNodes() { g.nodes = map[string][]int64{} }

func (g *grading) resetRequests() {
	for _, a := range g.nodes {
		clear(a[len(g.names):])
	}
}

func (g *grading) addNode(name string, allocatable corev1.ResourceList) {
	a := make([]int64, 2*len(g.names))
	for i, r := range g.names {
		if q, ok := allocatable[r]; ok {
			a[i] = amount(r, &q)
		}
	}
	g.nodes[name] = a
}

func (g *grading) addRequests(node string, requests corev1.ResourceList) {
	a, ok := g.nodes[node]
	if !ok {
		return // bound to a Node that was not listed (created since): it has no grade to lower
	}
	for i, r := range g.names {
		if q, ok := requests[r]; ok {
			a[len(g.names)+i] += amount(r, &q)
		}
	}
}

// grade returns the index of the highest model whose minimums amounts meet, or -1.
func (g *grading) grade(amounts []int64) int {
	for m := len(g.models) - 1; m >= 0; m-- {
		if g.meets(m, amounts) {
			return m
		}
	}
	return -1
}

func (g *grading) meets(m int, amounts []int64) bool {
	for i := range g.names {
		if g.bounded[m][i] && amounts[i] < g.mins[m][i] {
			return false
		}
	}
	return true
}

// modelings counts the Nodes in each grade by what they have free; every grade is listed,
// in order, with a zero count when no Node is in it.
func (g *grading) modelings() []clusterv1alpha1.AllocatableModeling {
	counts := make([]int, len(g.models))
	free := make([]int64, len(g.names))
	for _, a := range g.nodes {
		for i := range g.names {
			free[i] = max(a[i]-a[len(g.names)+i], 0)
		}
		if m := g.grade(free); m >= 0 {
			counts[m]++
		}
	}
	out := make([]clusterv1alpha1.AllocatableModeling, len(g.models))
	for m, model := range g.models {
		out[m] = clusterv1alpha1.AllocatableModeling{Grade: model.Grade, Count: counts[m]}
	}
	return out
}

// amount is a quantity as an int64: milli-CPUs for CPU, whole units otherwise.
func amount(name corev1.ResourceName, q *resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}
