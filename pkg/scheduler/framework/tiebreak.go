package framework

import "github.com/flotilla-io/flotilla/internal/hashmix"

// TieBreaker orders otherwise equal clusters for one binding. The order is a hash of the
// binding's seed (its template UID) and the cluster name, so it is the same in every cycle for
// the same template, and different templates prefer different clusters: one replica of each
// of many templates over three equal clusters lands on each about a third of the time.
type TieBreaker uint64

// FNV-1a, 64 bit.
const (
	fnvOffset uint64 = 14695981039346656037
	fnvPrime  uint64 = 1099511628211
)

// NewTieBreaker hashes the seed once; Rank then only hashes the cluster name.
func NewTieBreaker(seed string) TieBreaker {
	h := fnvOffset
	for i := 0; i < len(seed); i++ {
		h = (h ^ uint64(seed[i])) * fnvPrime
	}
	// A separator keeps ("ab", "c") and ("a", "bc") apart.
	h = (h ^ 0xff) * fnvPrime
	return TieBreaker(h)
}

// Rank returns the cluster's rank; lower ranks win ties.
func (t TieBreaker) Rank(cluster string) uint64 {
	h := uint64(t)
	for i := 0; i < len(cluster); i++ {
		h = (h ^ uint64(cluster[i])) * fnvPrime
	}
	// FNV alone would skew the order of member1, member2, ...
	return hashmix.Fmix64(h)
}
