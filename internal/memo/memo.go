// Package memo holds what a controller remembers per object between reconciles: the
// generation it last applied, the status it last wrote, the warning it last sent.
//
// A controller keeps one entry per object it manages, so with 10,000 templates each memo
// holds 10,000 entries for the manager's lifetime. sync.Map, which these memos used, spends
// about 150 bytes of its own on each entry (its hash-trie nodes and a boxed key and value); a
// map under a read-write lock spends about 30. Its workers touch a memo once per reconcile,
// far too seldom for the lock to be contended.
package memo

import "sync"

// shrinkBelow is the size under which a map is not rebuilt after deletions: a Go map keeps
// the room it grew to, and rebuilding a small one gains nothing.
const shrinkBelow = 1024

// Map is a map safe for concurrent use. Its zero value is empty and ready to use. It hands out
// values by copy: V should be a value type, or pointers that nobody changes once stored.
type Map[K comparable, V any] struct {
	mu sync.RWMutex
	m  map[K]V
	// peak is the most entries the current map has held. Once fewer than a quarter of that
	// remain, Delete moves them to a new map, so that memory follows the objects there are
	// now, not the most there ever were.
	peak int
}

// Load returns the value stored for k, and whether there is one.
func (m *Map[K, V]) Load(k K) (V, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	v, ok := m.m[k]
	return v, ok
}

// Store sets the value for k.
func (m *Map[K, V]) Store(k K, v V) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = make(map[K]V)
	}
	m.m[k] = v
	m.peak = max(m.peak, len(m.m))
}

// LoadOrStore returns the value stored for k and true if there is one; otherwise it stores
// v and returns v and false.
func (m *Map[K, V]) LoadOrStore(k K, v V) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.m[k]; ok {
		return old, true
	}
	if m.m == nil {
		m.m = make(map[K]V)
	}
	m.m[k] = v
	m.peak = max(m.peak, len(m.m))
	return v, false
}

// Swap stores v for k and returns the value it replaces, and whether there was one.
func (m *Map[K, V]) Swap(k K, v V) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = make(map[K]V)
	}
	old, ok := m.m[k]
	m.m[k] = v
	m.peak = max(m.peak, len(m.m))
	return old, ok
}

// Delete removes the value for k, if any.
func (m *Map[K, V]) Delete(k K) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.m[k]; !ok {
		return
	}
	delete(m.m, k)
	if m.peak >= shrinkBelow && len(m.m) < m.peak/4 {
		m.shrinkLocked()
	}
}

// shrinkLocked moves the values to a map of their size.
func (m *Map[K, V]) shrinkLocked() {
	smaller := make(map[K]V, len(m.m))
	for k, v := range m.m {
		smaller[k] = v
	}
	m.m, m.peak = smaller, len(smaller)
}

// DeleteFunc removes the values for which del returns true, and returns how many it removed:
// what is kept of objects that went together (a member's, a binding's) goes at once. del is
// called under the lock and must not use m.
func (m *Map[K, V]) DeleteFunc(del func(K, V) bool) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k, v := range m.m {
		if del(k, v) {
			delete(m.m, k)
			n++
		}
	}
	if n > 0 && m.peak >= shrinkBelow && len(m.m) < m.peak/4 {
		m.shrinkLocked()
	}
	return n
}

// Keys returns the keys stored, in no order.
func (m *Map[K, V]) Keys() []K {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]K, 0, len(m.m))
	for k := range m.m {
		out = append(out, k)
	}
	return out
}

// Clear removes every value and lets go of the memory they took.
func (m *Map[K, V]) Clear() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.m, m.peak = nil, 0
}

// Len returns the number of values stored.
func (m *Map[K, V]) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.m)
}
