package memo

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestMap(t *testing.T) {
	var m Map[string, int]
	if _, ok := m.Load("a"); ok {
		t.Fatal("the zero Map has a value")
	}
	m.Delete("a") // on the zero Map: nothing to do, and no panic
	m.Store("a", 1)
	if v, ok := m.Load("a"); !ok || v != 1 {
		t.Fatalf("Load(a) = %d, %t after Store(a, 1)", v, ok)
	}
	if v, loaded := m.LoadOrStore("a", 2); !loaded || v != 1 {
		t.Fatalf("LoadOrStore(a, 2) = %d, %t; want the stored 1, true", v, loaded)
	}
	if v, loaded := m.LoadOrStore("b", 3); loaded || v != 3 {
		t.Fatalf("LoadOrStore(b, 3) = %d, %t; want 3, false", v, loaded)
	}
	if old, ok := m.Swap("b", 5); !ok || old != 3 {
		t.Fatalf("Swap(b, 5) = %d, %t; want the replaced 3, true", old, ok)
	}
	if old, ok := m.Swap("d", 6); ok || old != 0 {
		t.Fatalf("Swap(d, 6) = %d, %t; want 0, false", old, ok)
	}
	m.Delete("d")
	m.Delete("a")
	if _, ok := m.Load("a"); ok {
		t.Fatal("a is still there after Delete")
	}
	if m.Len() != 1 {
		t.Fatalf("Len = %d, want 1", m.Len())
	}
	m.Clear()
	if _, ok := m.Load("b"); ok || m.Len() != 0 {
		t.Fatal("Clear left values")
	}
	m.Store("c", 4) // usable again after Clear
	if v, _ := m.Load("c"); v != 4 {
		t.Fatalf("Load(c) = %d after Clear and Store(c, 4)", v)
	}
}

// TestMapShrinks checks that deleting most of a large map keeps the rest and moves it to a
// smaller map.
func TestMapShrinks(t *testing.T) {
	var m Map[int, int]
	const n = 4 * shrinkBelow
	for i := range n {
		m.Store(i, i)
	}
	for i := range n - 10 {
		m.Delete(i)
	}
	if m.peak >= n {
		t.Fatalf("peak = %d after deleting all but 10 of %d: the map was not rebuilt", m.peak, n)
	}
	for i := n - 10; i < n; i++ {
		if v, ok := m.Load(i); !ok || v != i {
			t.Fatalf("Load(%d) = %d, %t after the rebuild", i, v, ok)
		}
	}
	if m.Len() != 10 {
		t.Fatalf("Len = %d, want 10", m.Len())
	}
}

func TestMapDeleteFuncAndKeys(t *testing.T) {
	var m Map[string, int]
	if n := m.DeleteFunc(func(string, int) bool { return true }); n != 0 || len(m.Keys()) != 0 {
		t.Fatalf("the zero Map: DeleteFunc removed %d, Keys = %v", n, m.Keys())
	}
	const n = 4 * shrinkBelow
	for i := range n {
		m.Store(fmt.Sprintf("a/%d", i), i)
	}
	m.Store("b/0", -1)
	if got := m.DeleteFunc(func(k string, _ int) bool { return strings.HasPrefix(k, "a/") }); got != n {
		t.Fatalf("DeleteFunc removed %d, want %d", got, n)
	}
	if keys := m.Keys(); len(keys) != 1 || keys[0] != "b/0" {
		t.Fatalf("Keys = %v after removing a/*, want [b/0]", keys)
	}
	if m.peak >= n {
		t.Fatalf("peak = %d after DeleteFunc removed all but one of %d: the map was not rebuilt", m.peak, n+1)
	}
}

// TestMapConcurrent is for the race detector: workers storing, loading and deleting at once.
func TestMapConcurrent(t *testing.T) {
	var m Map[int, string]
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				k := w*10000 + i
				m.Store(k, "x")
				if _, ok := m.Load(k); !ok {
					t.Errorf("Load(%d) missed a value this worker stored", k)
					return
				}
				m.LoadOrStore(k+1, "y")
				if i%2 == 0 {
					m.Delete(k)
				}
			}
		})
	}
	wg.Wait()
	if m.Len() == 0 {
		t.Fatal("no values left")
	}
}

// entry is the execution controller's memo: what it last applied for a Work.
type entry struct {
	workGeneration, memberGeneration int64
	memberUID                        types.UID
	memberResourceVersion            string
}

// BenchmarkBytesPerEntry prints the heap each memo entry costs, this Map against sync.Map,
// for 10,000 Works keyed by UID: `go test -run '^$' -bench BytesPerEntry ./internal/memo/`.
// The UIDs and values are made before the first reading, as a manager's cache holds them
// already.
func BenchmarkBytesPerEntry(b *testing.B) {
	const n = 10000
	keys := make([]types.UID, n)
	for i := range keys {
		keys[i] = types.UID(fmt.Sprintf("%08d-77f3-4dd7-9469-1f137835bf24", i))
	}
	measure := func(b *testing.B, fill func() any) {
		var kept any
		for range b.N {
			before := heap()
			kept = fill()
			b.ReportMetric(float64(heap()-before)/n, "B/entry")
		}
		runtime.KeepAlive(kept)
	}
	b.Run("memo.Map", func(b *testing.B) {
		measure(b, func() any {
			m := &Map[types.UID, entry]{}
			for i, k := range keys {
				m.Store(k, entry{workGeneration: int64(i), memberGeneration: 1, memberUID: k, memberResourceVersion: "12345"})
			}
			return m
		})
	})
	b.Run("sync.Map", func(b *testing.B) {
		measure(b, func() any {
			m := &sync.Map{}
			for i, k := range keys {
				m.Store(k, entry{workGeneration: int64(i), memberGeneration: 1, memberUID: k, memberResourceVersion: "12345"})
			}
			return m
		})
	})
}

func heap() uint64 {
	runtime.GC()
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	return s.HeapAlloc
}
