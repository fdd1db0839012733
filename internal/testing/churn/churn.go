// Package churn measures what a controller keeps per object as objects come and go: a
// benchmark runs many create/delete cycles through the controller's memos and reports how
// many entries are left and how much heap is in use before and after.
package churn

import (
	"runtime"
	"testing"
)

// Cycles is how many objects a benchmark creates and deletes per iteration.
const Cycles = 10_000

// Run runs cycle(i) for i in [0, Cycles) at each iteration of b, and reports, after the
// last one, entries() as entries-left and the heap in use before the first cycle and after
// the last (both after a collection) as heap-before-bytes and heap-after-bytes. Memory that
// follows the objects there are (none, once each is deleted) shows entries-left 0 and
// heap-after-bytes about heap-before-bytes, however many iterations ran.
func Run(b *testing.B, cycle func(i int), entries func() int) {
	b.Helper()
	b.ReportAllocs()
	before := heapInUse()
	n := 0
	for b.Loop() {
		for i := range Cycles {
			cycle(n*Cycles + i)
		}
		n++
	}
	b.StopTimer()
	after := heapInUse()
	b.ReportMetric(float64(entries()), "entries-left")
	b.ReportMetric(float64(before), "heap-before-bytes")
	b.ReportMetric(float64(after), "heap-after-bytes")
	b.ReportMetric(float64(n*Cycles), "cycles")
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}
