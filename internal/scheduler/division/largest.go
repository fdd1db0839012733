package division

import (
	"cmp"
	"math"
	"slices"
)

// sequence is the decreasing values whole+frac/W, whole-1+frac/W, whole-2+frac/W, ... of
// successive replicas of one cluster (W is the quotas' total). limit caps how many there are;
// -1 means no cap.
type sequence struct {
	whole int64
	frac  uint64
	limit int64
}

// countFrom returns how many values of s have a whole part of at least m.
func (s sequence) countFrom(m int64) int64 {
	n := s.whole - m + 1
	if n <= 0 {
		return 0
	}
	if s.limit >= 0 && n > s.limit {
		return s.limit
	}
	return n
}

// takeLargest takes the count largest values over all sequences, as if one at a time, and
// returns how many it took from each. Among equal values the larger fraction, then the lower
// rank, then the lower index wins. When the sequences hold fewer than count values, it takes
// them all.
//
// It runs in O(n log(range)) rather than O(count): it finds the whole part m of the last value
// taken by binary search, takes every value above m, and ranks the values at m.
func takeLargest(seqs []sequence, ranks []uint64, count int64) []int64 {
	taken := make([]int64, len(seqs))
	if count <= 0 || len(seqs) == 0 {
		return taken
	}
	lo, hi := searchRange(seqs, count)
	if countAll(seqs, lo, count) < count { // too few values: take them all
		for i, s := range seqs {
			taken[i] = s.countFrom(lo)
		}
		return taken
	}
	for lo < hi { // largest m with countAll(m) >= count
		mid := lo + (hi-lo+1)/2
		if countAll(seqs, mid, count) >= count {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	level := lo
	var atLevel []int
	rest := count
	for i, s := range seqs {
		taken[i] = s.countFrom(level + 1)
		rest -= taken[i]
		if s.countFrom(level) > taken[i] {
			atLevel = append(atLevel, i)
		}
	}
	slices.SortFunc(atLevel, func(a, b int) int {
		if c := cmp.Compare(seqs[b].frac, seqs[a].frac); c != 0 {
			return c
		}
		if c := cmp.Compare(ranks[a], ranks[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	for _, i := range atLevel[:min(rest, int64(len(atLevel)))] {
		taken[i]++
	}
	return taken
}

// searchRange bounds the whole part of the last value taken: hi is the largest first value,
// and at lo either count values are reachable or every value is (a sequence without limit
// holds count values down to whole-count+1, a limited one all of them down to whole-limit+1).
func searchRange(seqs []sequence, count int64) (lo, hi int64) {
	lo, hi = math.MaxInt64, math.MinInt64
	for _, s := range seqs {
		hi = max(hi, s.whole)
		n := count
		if s.limit >= 0 {
			n = s.limit
		}
		lo = min(lo, s.whole-n+1)
	}
	return lo, hi
}

// countAll counts the values with a whole part of at least m, stopping once it reaches enough.
func countAll(seqs []sequence, m, enough int64) int64 {
	var n int64
	for _, s := range seqs {
		n += s.countFrom(m)
		if n >= enough {
			return n
		}
	}
	return n
}
