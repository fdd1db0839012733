package hashmix

import (
	"math/bits"
	"testing"
)

// TestFmix64Avalanche checks that flipping one input bit flips about half the output bits.
func TestFmix64Avalanche(t *testing.T) {
	total, n := 0, 0
	for x := uint64(1); x < 1<<12; x++ {
		for b := range 64 {
			total += bits.OnesCount64(Fmix64(x) ^ Fmix64(x^(1<<b)))
			n++
		}
	}
	if mean := float64(total) / float64(n); mean < 30 || mean > 34 {
		t.Fatalf("one flipped input bit flips %.1f output bits on average, want about 32", mean)
	}
	if Fmix64(0) != 0 {
		t.Fatal("the finalizer maps 0 to 0")
	}
}
