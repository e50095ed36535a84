package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/store"
)

// Waiter is a store.Waiter that records what a store did with it: the
// pauses, how deep they are, and the time charged, and whether a charge
// came while the request was not paused (it must not). Backends' own
// tests use it too.
type Waiter struct {
	Pauses, Depth, Deepest int
	Charged                time.Duration
	ChargedAwake           bool
}

func (w *Waiter) Pause() {
	w.Pauses++
	w.Depth++
	w.Deepest = max(w.Deepest, w.Depth)
}

func (w *Waiter) Resume() { w.Depth-- }

func (w *Waiter) Charge(d time.Duration) {
	w.Charged += d
	w.ChargedAwake = w.ChargedAwake || w.Depth == 0
}

// A write pauses the request's Waiter while it waits on I/O, and resumes
// it before returning, as many times as it paused it.
func testWaiter(t *testing.T, s store.Store) {
	w := &Waiter{}
	ctx := store.WithWaiter(context.Background(), w)
	if err := s.PutCode(ctx, unique("code"), newCode("app")); err != nil {
		t.Fatal(err)
	}
	if w.Pauses == 0 {
		t.Error("a write did not pause the request's Waiter")
	}
	if w.Depth != 0 {
		t.Errorf("a write left the Waiter paused %d deep", w.Depth)
	}
	if w.Charged < 0 || w.ChargedAwake {
		t.Errorf("a write charged the Waiter %v, awake: %v (a charge is for time spent while paused, before its Resume)", w.Charged, w.ChargedAwake)
	}
}

// nestingWaiter makes another call of the store when the request takes
// its share back (its outermost Resume), as the request whose turn comes
// first may: a store that resumed while holding what that call needs (a
// pooled connection, the write lock, an open transaction) would hold it
// until the deadline.
type nestingWaiter struct {
	depth int
	call  func() error
	errs  []error
}

func (w *nestingWaiter) Pause() { w.depth++ }

func (w *nestingWaiter) Charge(time.Duration) {}

func (w *nestingWaiter) Resume() {
	if w.depth--; w.depth == 0 {
		w.errs = append(w.errs, w.call())
	}
}

// WaiterResumesHoldingNothing checks that s resumes a request's Waiter
// only once it holds nothing: a write and a read made as the Waiter is
// resumed, by others that were waiting, go through. It is part of Run; a
// backend runs it alone too where it can make what it holds scarce (a
// pool of one connection).
func WaiterResumesHoldingNothing(t *testing.T, s store.Store) {
	other := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		id := unique("other")
		if err := s.PutCode(ctx, id, newCode("app")); err != nil {
			return err
		}
		_, err := s.ListClients(ctx)
		return err
	}
	w := &nestingWaiter{call: other}
	ctx := store.WithWaiter(context.Background(), w)
	if err := s.PutCode(ctx, unique("code"), newCode("app")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ListClients(ctx); err != nil {
		t.Fatal(err)
	}
	if len(w.errs) == 0 {
		t.Fatal("the calls did not pause the request's Waiter")
	}
	for _, err := range w.errs {
		if err != nil {
			t.Errorf("a call made as the request was resumed failed: %v", err)
		}
	}
}
