package platform

import (
	"slices"
	"sync"
	"testing"
)

// A request let in never meets a school let go of: the school closed
// with requests in it is let go of by the last one out, exactly once, and
// lets no request in meanwhile.
func TestHold(t *testing.T) {
	var h Hold
	if !h.Idle() || h.Closed() {
		t.Fatal("the zero Hold is open and idle")
	}
	h.Start()
	if ok, _ := h.Acquire(); !ok {
		t.Fatal("an open school lets a request in")
	}
	if letGo := h.Close(); letGo {
		t.Fatal("closing a school with requests in flight lets go of it now")
	}
	if ok, letGo := h.Acquire(); ok || letGo {
		t.Fatalf("a closed school let a request in (%v) or was let go of by it (%v)", ok, letGo)
	}
	if letGo, _ := h.Release(); letGo {
		t.Fatal("let go of with a request still in it")
	}
	if letGo, _ := h.Release(); !letGo {
		t.Fatal("the last request out of a closed school does not let go of it")
	}
	if h.Close() {
		t.Fatal("closing a closed school lets go of it again")
	}

	var idle Hold
	if !idle.Close() {
		t.Fatal("closing an idle school does not let go of it now")
	}
	var open Hold
	open.Start()
	if letGo, wasIdle := open.Release(); letGo || !wasIdle {
		t.Fatalf("the last request out of an open school: letGo %v, idle %v", letGo, wasIdle)
	}
	if !open.CloseIdle() || open.CloseIdle() {
		t.Fatal("CloseIdle closes an idle school once")
	}
}

// Many requests and a close at once: the school is let go of exactly
// once, after every request let in left.
func TestHoldConcurrent(t *testing.T) {
	for range 50 {
		var h Hold
		h.Start()
		var lets, in sync.WaitGroup
		var mu sync.Mutex
		letGos := 0
		release := func() {
			if letGo, _ := h.Release(); letGo {
				mu.Lock()
				letGos++
				mu.Unlock()
			}
		}
		for range 8 {
			in.Add(1)
			lets.Go(func() {
				defer in.Done()
				ok, letGo := h.Acquire()
				if letGo {
					mu.Lock()
					letGos++
					mu.Unlock()
				}
				if ok {
					release()
				}
			})
		}
		lets.Go(func() {
			if h.Close() {
				mu.Lock()
				letGos++
				mu.Unlock()
			}
		})
		in.Wait()
		release() // the builder's request
		lets.Wait()
		if letGos != 1 {
			t.Fatalf("let go of %d times, want once", letGos)
		}
	}
}

type fakeSchool struct {
	name string
	hold Hold
}

func (s *fakeSchool) Hold() *Hold { return &s.hold }

func names(ss []*fakeSchool) []string {
	out := []string{}
	for _, s := range ss {
		out = append(out, s.name)
	}
	slices.Sort(out)
	return out
}

// Past max_active the least recently used idle school is let go of
// first; a busy one never; with every one busy the bound is over until a
// request leaves one idle and trims.
func TestBound(t *testing.T) {
	b := NewBound[*fakeSchool](2)
	a, c, d := &fakeSchool{name: "a"}, &fakeSchool{name: "c"}, &fakeSchool{name: "d"}
	a.hold.Touch(1)
	c.hold.Touch(2)
	d.hold.Touch(3)
	if out := b.Add(a); len(out) != 0 {
		t.Fatalf("within the bound: %v let go of", names(out))
	}
	b.Add(c)
	if out := b.Add(d); !slices.Equal(names(out), []string{"a"}) || !a.hold.Closed() {
		t.Fatalf("past the bound: %v let go of, want the least recently used, a", names(out))
	}
	if b.Len() != 2 || b.Over() {
		t.Fatalf("%d built, over %v", b.Len(), b.Over())
	}
	// Every one busy: nothing to let go of, the bound is over.
	c.hold.Start()
	d.hold.Start()
	e := &fakeSchool{name: "e"}
	e.hold.Start()
	if out := b.Add(e); len(out) != 0 || !b.Over() {
		t.Fatalf("every school busy: %v let go of, over %v", names(out), b.Over())
	}
	// A request leaves c idle: the next trim lets go of it.
	if _, idle := c.hold.Release(); !idle {
		t.Fatal("c is idle")
	}
	if out := b.Trim(); !slices.Equal(names(out), []string{"c"}) || b.Over() {
		t.Fatalf("trim: %v let go of, over %v", names(out), b.Over())
	}
	b.Forget(d)
	if got := names(b.All()); !slices.Equal(got, []string{"e"}) {
		t.Fatalf("built: %v", got)
	}
}
