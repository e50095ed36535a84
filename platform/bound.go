package platform

import (
	"sync"
	"sync/atomic"
)

// Held is a built school as a Bound counts it.
type Held interface {
	comparable
	Hold() *Hold
}

// Bound keeps at most Max schools built (max_active): each school built
// is added, and past the bound the least recently used idle ones are
// closed and handed back for the caller to let go of. A school with a
// request in flight is never closed here: past the bound with every
// school busy, Over is set, and the next request that leaves a school
// idle trims again.
type Bound[S Held] struct {
	max    int
	mu     sync.Mutex
	active map[S]struct{}
	over   atomic.Bool
}

// NewBound is a bound of max built schools.
func NewBound[S Held](max int) *Bound[S] {
	return &Bound[S]{max: max, active: map[S]struct{}{}}
}

// Max is the bound.
func (b *Bound[S]) Max() int { return b.max }

// Add counts s, just built, and returns the idle schools it closed to
// stay within the bound; the caller lets go of them.
func (b *Bound[S]) Add(s S) []S {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.active[s] = struct{}{}
	return b.pickIdle()
}

// Trim returns the idle schools it closed to come back within the bound;
// the caller lets go of them.
func (b *Bound[S]) Trim() []S {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pickIdle()
}

// Over reports whether more than Max schools are built, every one busy.
func (b *Bound[S]) Over() bool { return b.over.Load() }

// Forget stops counting s, let go of.
func (b *Bound[S]) Forget(s S) {
	b.mu.Lock()
	delete(b.active, s)
	b.mu.Unlock()
}

// Len is how many schools are built now.
func (b *Bound[S]) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.active)
}

// All are the schools built now.
func (b *Bound[S]) All() []S {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]S, 0, len(b.active))
	for s := range b.active {
		out = append(out, s)
	}
	return out
}

// pickIdle closes the least recently used schools without a request in
// flight until at most max are built. The caller holds b.mu. A scan of
// the built schools per school let go of: the build that calls it opened
// a store, which costs more.
func (b *Bound[S]) pickIdle() []S {
	var out []S
	for len(b.active) > b.max {
		var oldest S
		found := false
		for s := range b.active {
			if h := s.Hold(); h.Idle() && (!found || h.Used() < oldest.Hold().Used()) {
				oldest, found = s, true
			}
		}
		if !found {
			b.over.Store(true)
			return out
		}
		if !oldest.Hold().CloseIdle() {
			continue // a request came in meanwhile
		}
		delete(b.active, oldest)
		out = append(out, oldest)
	}
	b.over.Store(false)
	return out
}
