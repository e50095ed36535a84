package storetest

import (
	"context"
	"testing"

	"github.com/schoolgate/schoolgate/store"
)

// countingWaiter counts the pauses of a request and how deep they are.
type countingWaiter struct{ pauses, depth, deepest int }

func (w *countingWaiter) Pause() {
	w.pauses++
	w.depth++
	w.deepest = max(w.deepest, w.depth)
}

func (w *countingWaiter) Resume() { w.depth-- }

// A write pauses the request's Waiter while it waits on I/O, and resumes
// it before returning, as many times as it paused it.
func testWaiter(t *testing.T, s store.Store) {
	w := &countingWaiter{}
	ctx := store.WithWaiter(context.Background(), w)
	if err := s.PutCode(ctx, unique("code"), newCode("app")); err != nil {
		t.Fatal(err)
	}
	if w.pauses == 0 {
		t.Error("a write did not pause the request's Waiter")
	}
	if w.depth != 0 {
		t.Errorf("a write left the Waiter paused %d deep", w.depth)
	}
}
