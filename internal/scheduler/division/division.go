// Package division divides a binding's replicas among the clusters chosen for it. It is a
// pure function of (replicas, weights or free capacity, previous assignment, tie-break rank)
// and knows nothing about Kubernetes objects.
//
// Three divisions:
//
//   - ByWeight (Divided/Weighted with static weights): largest-remainder apportionment. When
//     the previous assignment is consistent with the new target, scaling up only distributes
//     the increase (no cluster loses a replica) and scaling down removes replicas from the
//     clusters with the most surplus over their ideal share first.
//   - ByCapacity (Divided/Weighted with dynamicWeight AvailableReplicas): the previous
//     assignment is kept; an increase is divided in proportion to free capacity, a decrease
//     in proportion to the current assignment.
//   - Aggregate (Divided/Aggregated): as few clusters as capacity allows, clusters already
//     holding replicas first.
//
// Ties are broken by Target.Rank (lower wins), which the scheduler derives from the template
// so that the same template always gets the same answer and different templates spread
// differently.
package division

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// Target is one cluster the replicas may go to.
type Target struct {
	// Weight is the static weight (ByWeight) or the number of replicas the cluster can still
	// hold (ByCapacity, Aggregate). Negative values count as 0.
	Weight int64
	// Prior is the number of replicas the cluster holds now. Negative values count as 0.
	Prior int32
	// Rank breaks ties: the lower rank wins.
	Rank uint64
}

// InsufficientCapacityError says the clusters cannot hold the replicas.
type InsufficientCapacityError struct {
	// Replicas is the number of replicas to place.
	Replicas int32
	// Capacity is how many the clusters can hold: what they hold now plus what they can
	// still take.
	Capacity int64
}

func (e *InsufficientCapacityError) Error() string {
	return fmt.Sprintf("insufficient capacity: %d replicas requested, the feasible clusters can hold %d", e.Replicas, e.Capacity)
}

// ByWeight divides replicas in proportion to the targets' weights by the largest remainder
// method. When every weight is 0 the targets share equally.
//
// The previous assignment is kept as a floor on scale up when no target holds more than its
// new share rounded up, and as a ceiling on scale down when no target holds less than its new
// share rounded down; with the replica count unchanged it is kept when it is within one of
// every share. Otherwise the division starts afresh.
func ByWeight(replicas int32, targets []Target) ([]int32, error) {
	if replicas < 0 {
		return nil, fmt.Errorf("divide %d replicas: negative", replicas)
	}
	q := newQuotas(replicas, weightsOf(targets))
	prior := priorsOf(targets)
	total := sum(prior)
	target := int64(replicas)
	switch {
	case total == 0:
	case total < target && q.noneAbove(prior):
		return toInt32(addLargest(prior, q.deficits(prior), ranksOf(targets), target-total)), nil
	case total > target && q.noneBelow(prior):
		return toInt32(removeLargest(prior, q.surpluses(prior), ranksOf(targets), total-target)), nil
	case total == target && q.noneAbove(prior) && q.noneBelow(prior):
		return toInt32(prior), nil
	}
	return toInt32(q.apportion(ranksOf(targets))), nil
}

// ByCapacity divides replicas by free capacity (Target.Weight). The previous assignment is
// kept: an increase is divided in proportion to free capacity, and never puts more on a
// cluster than it can hold; a decrease is taken in proportion to the current assignment.
// It returns an *InsufficientCapacityError when the increase does not fit.
func ByCapacity(replicas int32, targets []Target) ([]int32, error) {
	if replicas < 0 {
		return nil, fmt.Errorf("divide %d replicas: negative", replicas)
	}
	prior := priorsOf(targets)
	total := sum(prior)
	target := int64(replicas)
	switch {
	case total == target:
		return toInt32(prior), nil
	case total > target:
		return toInt32(newQuotas(replicas, prior).apportion(ranksOf(targets))), nil
	}
	capacity := weightsOf(targets)
	increase := target - total
	if free := sum(capacity); free < increase {
		return nil, &InsufficientCapacityError{Replicas: replicas, Capacity: total + free}
	}
	// increase <= free, so no cluster's share exceeds its capacity.
	share := newQuotas(int32(increase), capacity).apportion(ranksOf(targets))
	for i := range prior {
		prior[i] += share[i]
	}
	return toInt32(prior), nil
}

// Aggregate puts replicas on as few clusters as capacity (Target.Weight) allows. On scale up
// the clusters already holding replicas are filled first, then the others, largest free
// capacity first. On scale down the clusters holding the fewest replicas are emptied first.
// It returns an *InsufficientCapacityError when the increase does not fit.
func Aggregate(replicas int32, targets []Target) ([]int32, error) {
	if replicas < 0 {
		return nil, fmt.Errorf("divide %d replicas: negative", replicas)
	}
	prior := priorsOf(targets)
	total := sum(prior)
	target := int64(replicas)
	if total > target {
		return toInt32(emptySmallestFirst(prior, ranksOf(targets), total-target)), nil
	}
	capacity := weightsOf(targets)
	increase := target - total
	if free := sum(capacity); free < increase {
		return nil, &InsufficientCapacityError{Replicas: replicas, Capacity: total + free}
	}
	order := indexes(len(targets))
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(holds(prior[b]), holds(prior[a])); c != 0 { // holders first
			return c
		}
		if c := cmp.Compare(capacity[b], capacity[a]); c != 0 {
			return c
		}
		return cmp.Compare(targets[a].Rank, targets[b].Rank)
	})
	for _, i := range order {
		if increase == 0 {
			break
		}
		n := min(capacity[i], increase)
		prior[i] += n
		increase -= n
	}
	return toInt32(prior), nil
}

// holds is 1 for a cluster holding replicas, for sorting holders first.
func holds(prior int64) int {
	if prior > 0 {
		return 1
	}
	return 0
}

// emptySmallestFirst removes count replicas, emptying the clusters with the fewest replicas
// first (the higher rank first among equals).
func emptySmallestFirst(prior []int64, ranks []uint64, count int64) []int64 {
	order := indexes(len(prior))
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(prior[a], prior[b]); c != 0 {
			return c
		}
		return cmp.Compare(ranks[b], ranks[a])
	})
	for _, i := range order {
		if count == 0 {
			break
		}
		n := min(prior[i], count)
		prior[i] -= n
		count -= n
	}
	return prior
}

func weightsOf(targets []Target) []int64 {
	w := make([]int64, len(targets))
	for i, t := range targets {
		w[i] = max(t.Weight, 0)
	}
	return w
}

func priorsOf(targets []Target) []int64 {
	p := make([]int64, len(targets))
	for i, t := range targets {
		p[i] = int64(max(t.Prior, 0))
	}
	return p
}

func ranksOf(targets []Target) []uint64 {
	r := make([]uint64, len(targets))
	for i, t := range targets {
		r[i] = t.Rank
	}
	return r
}

// sum adds non-negative values, saturating at MaxInt64.
func sum(v []int64) int64 {
	var s int64
	for _, x := range v {
		if s > math.MaxInt64-x {
			return math.MaxInt64
		}
		s += x
	}
	return s
}

func indexes(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// toInt32 narrows the result; every value is bounded by the replica count, an int32.
func toInt32(v []int64) []int32 {
	out := make([]int32, len(v))
	for i, x := range v {
		out[i] = int32(x)
	}
	return out
}

// quotas are the exact shares replicas*w[i]/W, held as floor[i] + rem[i]/W.
type quotas struct {
	replicas int64
	floor    []int64
	rem      []uint64
	total    uint64 // W, the sum of the weights; never 0
}

// newQuotas computes the shares. All-zero weights share equally.
func newQuotas(replicas int32, weights []int64) quotas {
	w := scaledWeights(weights)
	var total uint64
	for _, x := range w {
		total += x
	}
	if total == 0 {
		for i := range w {
			w[i] = 1
		}
		total = uint64(len(w))
	}
	q := quotas{replicas: int64(replicas), floor: make([]int64, len(w)), rem: make([]uint64, len(w)), total: total}
	for i, x := range w {
		hi, lo := bits.Mul64(uint64(replicas), x)
		quo, rem := bits.Div64(hi, lo, total) // hi < total because x <= total
		q.floor[i], q.rem[i] = int64(quo), rem
	}
	return q
}

// scaledWeights returns the weights as uint64, halved as often as needed for their sum to fit
// in 64 bits. A weight that is not 0 stays at least 1.
func scaledWeights(weights []int64) []uint64 {
	shift := 0
	for {
		var total uint64
		overflow := false
		for _, x := range weights {
			s := scaled(x, shift)
			if total > math.MaxUint64-s {
				overflow = true
				break
			}
			total += s
		}
		if !overflow {
			break
		}
		shift++
	}
	w := make([]uint64, len(weights))
	for i, x := range weights {
		w[i] = scaled(x, shift)
	}
	return w
}

func scaled(x int64, shift int) uint64 {
	if x <= 0 {
		return 0
	}
	return max(uint64(x)>>shift, 1)
}

// ceil returns the share of i rounded up.
func (q quotas) ceil(i int) int64 {
	if q.rem[i] > 0 {
		return q.floor[i] + 1
	}
	return q.floor[i]
}

// noneAbove reports whether no cluster holds more than its share rounded up.
func (q quotas) noneAbove(prior []int64) bool {
	for i, p := range prior {
		if p > q.ceil(i) {
			return false
		}
	}
	return true
}

// noneBelow reports whether no cluster holds less than its share rounded down.
func (q quotas) noneBelow(prior []int64) bool {
	for i, p := range prior {
		if p < q.floor[i] {
			return false
		}
	}
	return true
}

// apportion is the largest remainder method: every cluster gets its share rounded down, and
// the replicas left over go to the largest remainders, lower rank first among equals.
func (q quotas) apportion(ranks []uint64) []int64 {
	return addLargest(make([]int64, len(q.floor)), q.deficits(nil), ranks, q.replicas)
}

// deficits returns, for each cluster, the sequence of the values of giving it one more
// replica: share - prior, share - prior - 1, ...
func (q quotas) deficits(prior []int64) []sequence {
	s := make([]sequence, len(q.floor))
	for i := range s {
		var p int64
		if prior != nil {
			p = prior[i]
		}
		s[i] = sequence{whole: q.floor[i] - p, frac: q.rem[i], limit: -1}
	}
	return s
}

// surpluses returns, for each cluster, the sequence of the values of taking one replica away:
// prior - share, prior - share - 1, ..., at most prior of them.
func (q quotas) surpluses(prior []int64) []sequence {
	s := make([]sequence, len(q.floor))
	for i, p := range prior {
		whole, frac := p-q.floor[i], uint64(0)
		if q.rem[i] > 0 { // p - floor - rem/W = (p - floor - 1) + (W - rem)/W
			whole, frac = whole-1, q.total-q.rem[i]
		}
		s[i] = sequence{whole: whole, frac: frac, limit: p}
	}
	return s
}

// addLargest adds count replicas to base, one at a time to the cluster whose next replica has
// the largest value.
func addLargest(base []int64, values []sequence, ranks []uint64, count int64) []int64 {
	for i, n := range takeLargest(values, ranks, count) {
		base[i] += n
	}
	return base
}

// removeLargest removes count replicas from base, one at a time from the cluster whose next
// replica has the largest value (the largest surplus). Among equals the worst rank loses
// first, so that scaling down ends where dividing afresh would.
func removeLargest(base []int64, values []sequence, ranks []uint64, count int64) []int64 {
	worstFirst := make([]uint64, len(ranks))
	for i, r := range ranks {
		worstFirst[i] = ^r
	}
	for i, n := range takeLargest(values, worstFirst, count) {
		base[i] -= n
	}
	return base
}

// ByWeightWithin divides as ByWeight does, but gives no target more than its cap (caps[i],
// for targets[i]): the replicas a capped target cannot take are divided among the others by
// their weights, as often as needed. It returns an *InsufficientCapacityError when the caps
// together hold fewer than replicas.
func ByWeightWithin(replicas int32, targets []Target, caps []int64) ([]int32, error) {
	if len(caps) != len(targets) {
		return nil, fmt.Errorf("divide %d replicas: %d caps for %d targets", replicas, len(caps), len(targets))
	}
	limits := make([]int64, len(caps))
	for i, c := range caps {
		limits[i] = max(c, 0)
	}
	if total := sum(limits); total < int64(replicas) {
		return nil, &InsufficientCapacityError{Replicas: replicas, Capacity: total}
	}
	out, err := ByWeight(replicas, targets)
	if err != nil {
		return nil, err
	}
	capped := make([]bool, len(targets))
	for {
		more := false
		for i := range out {
			if !capped[i] && int64(out[i]) > limits[i] {
				capped[i], more = true, true
			}
		}
		if !more {
			return out, nil
		}
		rest := int64(replicas)
		var free []int
		var sub []Target
		for i := range targets {
			if capped[i] {
				out[i] = int32(limits[i])
				rest -= limits[i]
				continue
			}
			free = append(free, i)
			sub = append(sub, targets[i])
		}
		// Only targets given more than their cap are capped, so rest > 0 and some are free.
		share, err := ByWeight(int32(rest), sub)
		if err != nil {
			return nil, err
		}
		for j, i := range free {
			out[i] = share[j]
		}
	}
}
