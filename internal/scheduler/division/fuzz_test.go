package division

import (
	"encoding/binary"
	"testing"
)

// FuzzDivide feeds odd replica counts, weights and priors to every division: no panic, no
// negative result, and a sum equal to the replicas whenever there is no error.
func FuzzDivide(f *testing.F) {
	f.Add(int32(2), []byte{10, 0, 10, 0, 10, 0})
	f.Add(int32(3), []byte{10, 1, 10, 1, 10, 0})
	f.Add(int32(-1), []byte{})
	f.Add(int32(2147483647), []byte{255, 255, 0, 1})
	f.Fuzz(func(t *testing.T, replicas int32, raw []byte) {
		ts := decodeTargets(raw)
		for _, divide := range []func(int32, []Target) ([]int32, error){ByWeight, ByCapacity, Aggregate} {
			got, err := divide(replicas, ts)
			if err != nil {
				continue
			}
			if len(got) != len(ts) {
				t.Fatalf("got %d results for %d targets", len(got), len(ts))
			}
			var s int64
			for _, r := range got {
				if r < 0 {
					t.Fatalf("negative replicas: %v", got)
				}
				s += int64(r)
			}
			if len(ts) > 0 && s != int64(replicas) {
				t.Fatalf("divide(%d, %+v) = %v, sums to %d", replicas, ts, got, s)
			}
		}
	})
}

// decodeTargets reads 11-byte records: weight (8), prior (2, signed), rank (1). Short input
// makes small weights so that the fuzzer reaches interesting cases quickly.
func decodeTargets(raw []byte) []Target {
	var ts []Target
	for len(raw) >= 2 && len(ts) < 64 {
		if len(raw) >= 11 {
			ts = append(ts, Target{
				Weight: int64(binary.LittleEndian.Uint64(raw)),
				Prior:  int32(int16(binary.LittleEndian.Uint16(raw[8:]))),
				Rank:   uint64(raw[10]),
			})
			raw = raw[11:]
			continue
		}
		ts = append(ts, Target{Weight: int64(raw[0]), Prior: int32(int8(raw[1]))})
		raw = raw[2:]
	}
	return ts
}

// FuzzByWeightWithin: no target above its cap, and the replicas all placed, whenever there is
// no error; an error only when the caps hold fewer than the replicas.
func FuzzByWeightWithin(f *testing.F) {
	f.Add(int32(9), []byte{10, 0, 10, 0, 10, 0}, []byte{1, 100, 100})
	f.Add(int32(2147483647), []byte{255, 255, 0, 1}, []byte{255, 0})
	f.Fuzz(func(t *testing.T, replicas int32, raw, rawCaps []byte) {
		ts := decodeTargets(raw)
		caps := make([]int64, len(ts))
		var room int64
		for i := range caps {
			caps[i] = int64(i * 3)
			if i < len(rawCaps) {
				caps[i] = int64(int8(rawCaps[i]))
			}
			room += max(caps[i], 0)
		}
		got, err := ByWeightWithin(replicas, ts, caps)
		if err != nil {
			if replicas >= 0 && room >= int64(replicas) {
				t.Fatalf("ByWeightWithin(%d, %+v, %v): %v", replicas, ts, caps, err)
			}
			return
		}
		var s int64
		for i, r := range got {
			if r < 0 || int64(r) > max(caps[i], 0) {
				t.Fatalf("ByWeightWithin(%d, %+v, %v) = %v", replicas, ts, caps, got)
			}
			s += int64(r)
		}
		if s != int64(replicas) {
			t.Fatalf("ByWeightWithin(%d, %+v, %v) = %v, sums to %d", replicas, ts, caps, got, s)
		}
	})
}
