package shard

import (
	"fmt"
	"slices"
	"testing"
)

func TestOfIsStableAndInRange(t *testing.T) {
	for _, n := range []int{-1, 0, 1, 2, 3, 16} {
		for i := range 200 {
			key := fmt.Sprintf("ns-%d/app-%d-deployment", i%7, i)
			k := Of(key, n)
			if k < 0 || k >= max(n, 1) {
				t.Fatalf("Of(%q, %d) = %d, out of range", key, n, k)
			}
			if Of(key, n) != k {
				t.Fatalf("Of(%q, %d) is not stable", key, n)
			}
		}
	}
}

func TestOfSpreadsKeys(t *testing.T) {
	const n, keys = 3, 3000
	counts := make([]int, n)
	for i := range keys {
		counts[Of(fmt.Sprintf("bench/app-%d-deployment", i), n)]++
	}
	for k, c := range counts {
		// A fair split is 1000 each; 15% off would mean a poor hash.
		if c < keys/n*85/100 || c > keys/n*115/100 {
			t.Errorf("shard %d has %d of %d keys: %v", k, c, keys, counts)
		}
	}
}

func TestAssignmentIsBalancedAndMovesLittle(t *testing.T) {
	for _, n := range []int{3, 6, 64} {
		three := []string{"a", "b", "c"}
		before := Assignment(n, three)
		checkBalanced(t, n, three, before)
		// c leaves: c's shards move, and few others.
		after := Assignment(n, []string{"a", "b"})
		checkBalanced(t, n, []string{"a", "b"}, after)
		moved, held := 0, 0
		for k := range before {
			if before[k] == "c" {
				held++
			} else if after[k] != before[k] {
				moved++
			}
		}
		if moved > held {
			t.Errorf("%d shards: c held %d, and %d of the others moved as well: %v → %v", n, held, moved, before, after)
		}
		// d joins: shards move to d, and few others.
		joined := Assignment(n, []string{"a", "b", "c", "d"})
		checkBalanced(t, n, []string{"a", "b", "c", "d"}, joined)
		gained, others := 0, 0
		for k := range before {
			switch {
			case joined[k] == "d":
				gained++
			case joined[k] != before[k]:
				others++
			}
		}
		if others > gained {
			t.Errorf("%d shards: d gained %d, and %d others moved between the old replicas: %v → %v", n, gained, others, before, joined)
		}
	}
}

// checkBalanced fails unless every shard has an owner among replicas and each holds
// floor(n/r) or ceil(n/r) of them.
func checkBalanced(t *testing.T, n int, replicas, got []string) {
	t.Helper()
	load := map[string]int{}
	for k, o := range got {
		if !slices.Contains(replicas, o) {
			t.Fatalf("shard %d owned by %q, not one of %v", k, o, replicas)
		}
		load[o]++
	}
	lo, hi := n/len(replicas), (n+len(replicas)-1)/len(replicas)
	for _, r := range replicas {
		if load[r] < lo || load[r] > hi {
			t.Errorf("%d shards over %v: %s holds %d (want %d-%d): %v", n, replicas, r, load[r], lo, hi, got)
		}
	}
}

func TestAssignmentIgnoresOrderAndDuplicates(t *testing.T) {
	x := Assignment(8, []string{"c", "a", "b"})
	y := Assignment(8, []string{"b", "c", "a", "a"})
	if !slices.Equal(x, y) {
		t.Fatalf("assignment depends on order: %v vs %v", x, y)
	}
	if got := Assignment(2, nil); !slices.Equal(got, []string{"", ""}) {
		t.Fatalf("no replicas must own nothing: %q", got)
	}
}

func FuzzAssignment(f *testing.F) {
	f.Add("ns/name", 3, "a", "b", "c")
	f.Add("", 0, "", "x", "x")
	f.Fuzz(func(t *testing.T, key string, n int, r1, r2, r3 string) {
		if n > 512 || n < -512 {
			return
		}
		k := Of(key, n)
		if k < 0 || k >= max(n, 1) {
			t.Fatalf("Of(%q, %d) = %d", key, n, k)
		}
		replicas := []string{r1, r2, r3}
		got := Assignment(n, replicas)
		if len(got) != max(n, 1) || !slices.Contains(replicas, got[k]) {
			t.Fatalf("Assignment(%d, %q) = %q", n, replicas, got)
		}
		slices.Reverse(replicas)
		if again := Assignment(n, replicas); !slices.Equal(got, again) {
			t.Fatalf("Assignment depends on order: %q vs %q", got, again)
		}
	})
}
