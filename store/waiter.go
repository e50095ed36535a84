package store

import (
	"context"
	"time"
)

// Waiter is what a request holds of its instance while the gateway works
// on it (a slot of package admission's gate). A store call that waits on
// I/O — a database round trip, a commit's sync — pauses it for the wait,
// so that a request waiting on the disk or the network holds no share of
// the processors meanwhile. Pauses nest; every Pause has its Resume.
//
// Resume may wait for the request's turn behind other requests that hold
// the processors. So it is called only once the store call holds nothing
// another request may be waiting for — no pooled connection, no open
// transaction, no lock: a request waiting for its turn while holding what
// the requests ahead of it wait for would hold them all until a deadline.
// A store pauses around a whole call (the wait for a connection or for
// the group commit included) rather than around each round trip within
// it.
//
// Charge tells the Waiter of processor time a store call spent on the
// request's behalf while it was paused: the work a group commit's leader
// does for each call of its group (the call's function, its share of the
// page spill and writes), which would otherwise count for no request and
// so for no school. It is called before the Resume that ends the pause.
type Waiter interface {
	Pause()
	Resume()
	Charge(d time.Duration)
}

type waiterKey struct{}

// WithWaiter returns ctx with the request's Waiter.
func WithWaiter(ctx context.Context, w Waiter) context.Context {
	return context.WithValue(ctx, waiterKey{}, w)
}

// WaiterOf returns the request's Waiter; nil when it has none.
func WaiterOf(ctx context.Context) Waiter {
	w, _ := ctx.Value(waiterKey{}).(Waiter)
	return w
}
