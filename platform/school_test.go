package platform

import (
	"errors"
	"net/http"
	"sync"
	"testing"
)

// fakeBuilt is what fakeBuilder builds: a number, to tell builds apart.
type fakeBuilt struct{ n int }

// fakeStandIn is fakeBuilder's stand-in of a school that failed.
type fakeStandIn struct {
	err     error
	ended   int
	rebuilt bool
}

// fakeBuilder builds a school unless fail is set, and counts what it was
// asked to do.
type fakeBuilder struct {
	mu       sync.Mutex
	fail     error
	builds   int
	letGo    []int
	standIns []*fakeStandIn
}

func (b *fakeBuilder) Build() (*fakeBuilt, Serving, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fail != nil {
		return nil, Serving{}, b.fail
	}
	b.builds++
	return &fakeBuilt{n: b.builds}, Serving{}, nil
}

func (b *fakeBuilder) LetGo(x *fakeBuilt) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.letGo = append(b.letGo, x.n)
}

func (b *fakeBuilder) Fail(err error) *fakeStandIn {
	f := &fakeStandIn{err: err}
	b.standIns = append(b.standIns, f)
	return f
}

func (b *fakeBuilder) ServeFailed(f *fakeStandIn, w http.ResponseWriter, _ *http.Request) error {
	w.WriteHeader(http.StatusServiceUnavailable)
	return nil
}

func (b *fakeBuilder) StillFailing(f *fakeStandIn, err error) { f.err = err }

func (b *fakeBuilder) EndFailure(f *fakeStandIn, rebuilt bool) { f.ended++; f.rebuilt = rebuilt }

type fakeSchoolT = School[fakeBuilt, fakeStandIn]

func newFake(bound *Bound[*Active[fakeBuilt, fakeStandIn]]) (*fakeSchoolT, *fakeBuilder) {
	b := &fakeBuilder{}
	return NewSchool(b, bound), b
}

// The first request builds the school; requests at once share one
// build; a school built stays built for the next request.
func TestSchoolBuildsOnce(t *testing.T) {
	s, b := newFake(NewBound[*Active[fakeBuilt, fakeStandIn]](10))
	if s.State() != "idle" || s.Active() != nil {
		t.Fatalf("a new school is %s", s.State())
	}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			a, f := s.Enter()
			if a == nil || f != nil {
				t.Error("a request was not let in")
				return
			}
			a.Release()
		})
	}
	wg.Wait()
	if b.builds != 1 || s.State() != "active" || !s.IsActive() {
		t.Fatalf("%d builds, state %s", b.builds, s.State())
	}
	a, _ := s.Enter()
	a.Release()
	if b.builds != 1 || a.Built().n != 1 {
		t.Fatalf("the next request built again: %d builds", b.builds)
	}
}

// A retired school lets no request in and is let go of after the last
// one in flight, once; its stand-in ends with it.
func TestSchoolRetire(t *testing.T) {
	s, b := newFake(NewBound[*Active[fakeBuilt, fakeStandIn]](10))
	a, _ := s.Enter()
	s.Retire()
	if len(b.letGo) != 0 {
		t.Fatal("let go of with a request in flight")
	}
	if a, f := s.Enter(); a != nil || f != nil {
		t.Fatal("a retired school let a request in")
	}
	a.Release()
	if len(b.letGo) != 1 || s.Active() != nil {
		t.Fatalf("let go of %v after the last request", b.letGo)
	}
	s.Warm(1)
	if b.builds != 1 {
		t.Fatal("a retired school was warmed")
	}

	failed, fb := newFake(NewBound[*Active[fakeBuilt, fakeStandIn]](10))
	failed.Refuse(errors.New("refused"))
	failed.Retire()
	if f := failed.Failed(); f == nil || f.ended != 1 || f.rebuilt {
		t.Fatalf("the retired school's stand-in: %+v", f)
	}
	if !failed.Rebuild(failed.Failed()) || fb.builds != 0 {
		t.Fatal("a retired school's rebuilds go on")
	}
}

// A school that fails to build answers through its stand-in, without a
// build per request, until a rebuild builds it; the stand-in ends then.
func TestSchoolFailsAndRebuilds(t *testing.T) {
	s, b := newFake(NewBound[*Active[fakeBuilt, fakeStandIn]](10))
	b.fail = errors.New("store locked")
	a, f := s.Enter()
	if a != nil || f == nil || f.err != b.fail || s.State() != "failed" {
		t.Fatalf("a failed build: %v %v %s", a, f, s.State())
	}
	if _, again := s.Enter(); again != f || len(b.standIns) != 1 {
		t.Fatal("the next request made another stand-in")
	}
	b.fail = errors.New("still locked")
	if s.Rebuild(f) || f.err != b.fail || f.ended != 0 {
		t.Fatalf("a failed rebuild: %+v", f)
	}
	b.fail = nil
	if !s.Rebuild(f) || f.ended != 1 || !f.rebuilt || s.Failed() != nil || s.State() != "active" {
		t.Fatalf("a rebuild that built: %+v, %s", f, s.State())
	}
	if a, _ := s.Enter(); a == nil || a.Built().n != 1 {
		t.Fatal("the rebuilt school does not serve")
	} else {
		a.Release()
	}
}

// Past max_active the least recently used idle school is let go of when
// another is built; one busy then is let go of by its last request out
// once the bound is over.
func TestSchoolBound(t *testing.T) {
	bound := NewBound[*Active[fakeBuilt, fakeStandIn]](1)
	one, b1 := newFake(bound)
	two, b2 := newFake(bound)
	a1, _ := one.Enter()
	a1.Release()
	a2, _ := two.Enter() // one is idle: let go of
	if len(b1.letGo) != 1 || one.State() != "idle" || bound.Len() != 1 {
		t.Fatalf("past the bound: %v let go of, one %s", b1.letGo, one.State())
	}
	a1, _ = one.Enter() // two is busy: the bound is over
	if !bound.Over() || len(b2.letGo) != 0 {
		t.Fatal("a busy school was let go of")
	}
	a2.Release() // two idle: trimmed
	if len(b2.letGo) != 1 || bound.Over() || two.State() != "idle" {
		t.Fatalf("the last request out of two: %v let go of, over %v", b2.letGo, bound.Over())
	}
	a1.Release()
	one.Warm(5)
	if b1.builds != 2 {
		t.Fatalf("warming a built school built it again: %d builds", b1.builds)
	}
}
