// Package hashmix finishes FNV hashes. FNV alone barely changes its high bits when inputs
// differ only in their last bytes (member1, member2, ...; shard 1, shard 2, ...), which
// skews any order or choice made from the hash; a finalizer spreads every input bit over
// the whole result.
package hashmix

// Fmix64 is MurmurHash3's 64-bit finalizer.
func Fmix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}
