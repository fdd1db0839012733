// Package shard splits the manager's work between replicas.
//
// A key (a binding's or a Work's namespace/name) belongs to one of a fixed number of shards,
// by a hash of the key (Of). Each shard is held by one replica at a time through a
// coordination.k8s.io Lease of its own; which live replica should hold it is decided by
// rendezvous hashing with bounded load (Assignment), so that every replica holds its fair
// share and a replica joining or leaving moves mostly the shards it gains or held. Set gates
// reconciles on the shards this replica holds; Elector keeps its Leases.
//
// Of and Assignment are pure; Set and Elector are the thin shell around them.
package shard

import (
	"hash/fnv"
	"slices"
	"strconv"

	"github.com/flotilla-io/flotilla/internal/hashmix"
)

// Of returns the shard of key among n shards: a number in [0, n). n below 1 counts as 1.
func Of(key string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum64() % uint64(n))
}

// Assignment returns, for each of n shards, the live replica that should hold it: rendezvous
// (highest random weight) hashing with bounded load. Every (shard, replica) pair gets a
// score; going from the highest score down, a shard goes to the replica of the pair unless it
// has one already or the replica holds its share already: floor(n / replicas), or one more
// for the first n mod replicas replicas to fill it. So every replica holds its fair share, and the answer depends only on the set of
// replicas: every replica that sees the same live set computes the same assignment. A
// replica that joins or leaves moves mostly the shards it gains or held. With no replicas,
// every shard's owner is "".
func Assignment(n int, replicas []string) []string {
	replicas = slices.Compact(slices.Sorted(slices.Values(replicas)))
	out := make([]string, max(n, 1))
	if len(replicas) == 0 {
		return out
	}
	type pair struct {
		score   uint64
		shard   int
		replica int
	}
	pairs := make([]pair, 0, len(out)*len(replicas))
	for k := range out {
		for i, r := range replicas {
			pairs = append(pairs, pair{score(k, r), k, i})
		}
	}
	slices.SortFunc(pairs, func(a, b pair) int {
		switch {
		case a.score != b.score:
			if a.score > b.score {
				return -1
			}
			return 1
		case a.shard != b.shard:
			return a.shard - b.shard
		}
		return a.replica - b.replica
	})
	// Each replica holds lo shards, and extra of them one more.
	lo, extra := len(out)/len(replicas), len(out)%len(replicas)
	load := make([]int, len(replicas))
	assigned := make([]bool, len(out))
	for _, p := range pairs {
		if assigned[p.shard] || load[p.replica] > lo || (load[p.replica] == lo && extra == 0) {
			continue
		}
		if load[p.replica] == lo {
			extra--
		}
		out[p.shard], assigned[p.shard] = replicas[p.replica], true
		load[p.replica]++
	}
	return out
}

func score(shard int, replica string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(replica))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(strconv.Itoa(shard)))
	// FNV alone barely separates replicas or shards that differ in their last bytes.
	return hashmix.Fmix64(h.Sum64())
}
