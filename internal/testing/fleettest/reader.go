package fleettest

import (
	"context"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CountingReader is a client.Reader that counts its Gets per object key, so that a suite can
// tell whether a reconciler read an object from the host.
type CountingReader struct {
	client.Reader
	mu   sync.Mutex
	gets map[client.ObjectKey]int
}

// Get counts the read and reads through.
func (c *CountingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.mu.Lock()
	if c.gets == nil {
		c.gets = map[client.ObjectKey]int{}
	}
	c.gets[key]++
	c.mu.Unlock()
	return c.Reader.Get(ctx, key, obj, opts...)
}

// Gets is how many times the object of that key was read.
func (c *CountingReader) Gets(key client.ObjectKey) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gets[key]
}
