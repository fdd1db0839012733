package division

import (
	"cmp"
	"math/rand/v2"
	"testing"
)

// naiveTakeLargest takes count values one at a time: the reference takeLargest must match.
func naiveTakeLargest(seqs []sequence, ranks []uint64, count int64) []int64 {
	taken := make([]int64, len(seqs))
	for ; count > 0; count-- {
		best := -1
		for i, s := range seqs {
			if s.limit >= 0 && taken[i] >= s.limit {
				continue
			}
			if best < 0 || better(s.whole-taken[i], s.frac, ranks[i], seqs[best].whole-taken[best], seqs[best].frac, ranks[best]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		taken[best]++
	}
	return taken
}

func better(w1 int64, f1, r1 uint64, w2 int64, f2, r2 uint64) bool {
	if c := cmp.Compare(w1, w2); c != 0 {
		return c > 0
	}
	if f1 != f2 {
		return f1 > f2
	}
	return r1 < r2
}

func TestTakeLargestMatchesOneAtATime(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 2000; iter++ {
		n := 1 + rng.IntN(6)
		seqs := make([]sequence, n)
		ranks := make([]uint64, n)
		for i := range seqs {
			seqs[i] = sequence{whole: int64(rng.IntN(21) - 10), frac: uint64(rng.IntN(4)), limit: -1}
			if rng.IntN(2) == 0 {
				seqs[i].limit = int64(rng.IntN(8))
			}
			ranks[i] = uint64(rng.IntN(3))
		}
		count := int64(rng.IntN(30))
		got, want := takeLargest(seqs, ranks, count), naiveTakeLargest(seqs, ranks, count)
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("takeLargest(%+v, %v, %d) = %v, want %v", seqs, ranks, count, got, want)
			}
		}
	}
}

func sum32(v []int32) int64 {
	var s int64
	for _, x := range v {
		s += int64(x)
	}
	return s
}

func randomTargets(rng *rand.Rand, n int, withPrior bool) []Target {
	ts := make([]Target, n)
	for i := range ts {
		ts[i] = Target{Weight: int64(rng.IntN(20)), Rank: rng.Uint64()}
		if withPrior {
			ts[i].Prior = int32(rng.IntN(10))
		}
	}
	return ts
}

// TestDivisionProperties checks, over random inputs, that every division hands out exactly the
// replicas (or reports missing capacity), never a negative count, and the same answer twice.
func TestDivisionProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	divisions := map[string]func(int32, []Target) ([]int32, error){
		"ByWeight": ByWeight, "ByCapacity": ByCapacity, "Aggregate": Aggregate,
	}
	for iter := 0; iter < 3000; iter++ {
		ts := randomTargets(rng, 1+rng.IntN(8), rng.IntN(2) == 0)
		replicas := int32(rng.IntN(60))
		for name, divide := range divisions {
			got, err := divide(replicas, ts)
			if err != nil {
				if name == "ByWeight" {
					t.Fatalf("%s(%d, %+v): %v", name, replicas, ts, err)
				}
				continue
			}
			if s := sum32(got); s != int64(replicas) {
				t.Fatalf("%s(%d, %+v) = %v, sums to %d", name, replicas, ts, got, s)
			}
			for i, r := range got {
				if r < 0 {
					t.Fatalf("%s(%d, %+v) = %v: negative", name, replicas, ts, got)
				}
				if name != "ByWeight" && int64(r) > max(int64(ts[i].Prior), 0)+max(ts[i].Weight, 0) && int64(r) > int64(ts[i].Prior) {
					t.Fatalf("%s(%d, %+v) = %v: cluster %d over capacity", name, replicas, ts, got, i)
				}
			}
			again, _ := divide(replicas, ts)
			for i := range got {
				if got[i] != again[i] {
					t.Fatalf("%s(%d, %+v) not deterministic: %v then %v", name, replicas, ts, got, again)
				}
			}
		}
	}
}

// TestScaleUpIsStable scales up step by step with the same weights: no cluster ever loses a
// replica, and every step stays within one replica of the exact share.
func TestScaleUpIsStable(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for iter := 0; iter < 300; iter++ {
		ts := randomTargets(rng, 1+rng.IntN(6), false)
		var current []int32
		for replicas := int32(0); replicas <= 40; replicas += int32(1 + rng.IntN(3)) {
			for i := range current {
				ts[i].Prior = current[i]
			}
			next, err := ByWeight(replicas, ts)
			if err != nil {
				t.Fatal(err)
			}
			for i := range current {
				if next[i] < current[i] {
					t.Fatalf("scaling %v to %d replicas with weights %+v gave %v: cluster %d lost replicas", current, replicas, ts, next, i)
				}
			}
			current = next
		}
	}
}

// TestTieBreakSpreadsTemplates gives one replica to each of many templates over three equal
// clusters; with a different rank per template each cluster gets about a third.
func TestTieBreakSpreadsTemplates(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const templates = 3000
	counts := make([]int, 3)
	for i := 0; i < templates; i++ {
		ts := []Target{{Weight: 1, Rank: rng.Uint64()}, {Weight: 1, Rank: rng.Uint64()}, {Weight: 1, Rank: rng.Uint64()}}
		got, err := ByWeight(1, ts)
		if err != nil {
			t.Fatal(err)
		}
		for c, r := range got {
			counts[c] += int(r)
		}
	}
	for c, n := range counts {
		if n < templates/3-150 || n > templates/3+150 {
			t.Errorf("cluster %d got %d of %d replicas, want about a third: %v", c, n, templates, counts)
		}
	}
}
