package startgate

import (
	"context"
	"testing"
	"time"
)

// A request that came before the value waits for it; one whose context
// ends first, or that waits on a gate ended without a value, gets nil;
// a later Set replaces the value.
func TestGate(t *testing.T) {
	g := New[int]()
	got := make(chan *int)
	go func() { got <- g.Await(context.Background()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if v := g.Await(ctx); v != nil {
		t.Fatalf("before Set, a request whose context ended got %v", *v)
	}
	one, two := 1, 2
	g.Set(&one)
	if v := <-got; v == nil || *v != 1 {
		t.Fatalf("the waiting request got %v, want 1", v)
	}
	g.Set(&two)
	if v := g.Await(context.Background()); v == nil || *v != 2 || g.Load() != &two {
		t.Fatalf("after a second Set: %v", v)
	}

	ended := New[int]()
	ended.End()
	ended.End() // twice: no panic
	if v := ended.Await(context.Background()); v != nil {
		t.Fatalf("a gate ended without a value gave %v", *v)
	}
}
