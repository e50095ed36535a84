// Package startgate holds what a handler serves once it is built — a
// site block's school, a platform's host table — and lets the requests
// that arrived before wait for it, no longer than their context allows.
package startgate

import (
	"context"
	"sync"
	"sync/atomic"
)

// Gate is a value set once it is built, replaced whole after (Set), read
// with one atomic load once set.
type Gate[T any] struct {
	v atomic.Pointer[T]
	// ready is closed at the first Set, or at End: a start that failed
	// lets the waiting requests go without a value.
	ready chan struct{}
	once  sync.Once
}

// New returns a Gate with no value yet.
func New[T any]() *Gate[T] { return &Gate[T]{ready: make(chan struct{})} }

// Load is the value, nil before the first Set.
func (g *Gate[T]) Load() *T { return g.v.Load() }

// Set makes v the value and lets the waiting requests in.
func (g *Gate[T]) Set(v *T) {
	g.v.Store(v)
	g.End()
}

// End lets the waiting requests go, with the value if one is set.
func (g *Gate[T]) End() { g.once.Do(func() { close(g.ready) }) }

// Await returns the value, waiting for the first no longer than ctx
// allows; nil if none is set (yet).
func (g *Gate[T]) Await(ctx context.Context) *T {
	if v := g.v.Load(); v != nil {
		return v
	}
	select {
	case <-g.ready:
		return g.v.Load()
	case <-ctx.Done():
		return nil
	}
}
