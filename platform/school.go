package platform

import (
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schoolgate/schoolgate/school"
)

// A school of the platform is idle (its record only) until its first
// request builds it: it is then active, held by the requests in it
// (Hold). It goes back to idle when the platform lets go of it, the least
// recently used first, to keep at most max_active built (Bound); a
// changed or removed record retires it. Either way a request in flight
// finishes on the school it started on, and what was built is let go of
// after the last one. A school that cannot be built answers through a
// stand-in, which the adapter makes and which rebuilds it in the
// background.

// Builder is the adapter's side of one school: what builds it, what lets
// go of it, and the stand-in that answers while it cannot be built. B is
// what a build makes (a store opened, keys loaded, the proxy to the
// legacy server held), F the stand-in.
type Builder[B, F any] interface {
	// Build builds the school, one build at a time per school: what the
	// adapter holds for it, and what serves its requests.
	Build() (*B, Serving, error)
	// LetGo lets go of what Build built, once, after its last request.
	LetGo(*B)
	// Fail is the stand-in of a school whose build failed with err, its
	// rebuilds scheduled (each calls School.Rebuild).
	Fail(err error) *F
	// ServeFailed answers a request of the school through its stand-in.
	ServeFailed(f *F, w http.ResponseWriter, r *http.Request) error
	// StillFailing records why a rebuild failed.
	StillFailing(f *F, err error)
	// EndFailure lets go of the stand-in: a rebuild built the school
	// (rebuilt), or the school was retired.
	EndFailure(f *F, rebuilt bool)
}

// Serving is what serves a built school's requests: the school, and the
// handler after it (the proxy to its legacy server). A request goes from
// the platform's table straight to Site.Serve, through nothing of the
// adapter's.
type Serving struct {
	Site *school.Site
	Next school.Handler
}

// errRetired is a request that met a school whose record was replaced
// after the request found it: the current table has what serves.
var errRetired = errors.New("the school's record was replaced")

// School is one record's school, built lazily and reference-counted: a
// changed record is a new School, which replaces the old one; the old
// one is retired.
type School[B, F any] struct {
	b     Builder[B, F]
	bound *Bound[*Active[B, F]]

	// active is the built school, nil while idle.
	active atomic.Pointer[Active[B, F]]
	// failed is the stand-in of a school that could not be built, nil
	// otherwise.
	failed atomic.Pointer[F]
	// retired is set once the record changed or was removed, or the
	// platform ended: nothing is built for it any more.
	retired atomic.Bool
	// Removed is the adapter's own: set when the record was removed,
	// not replaced, before the school is retired. The platform does not
	// read it. It lies here, beside retired, where it costs nothing: a
	// field of the adapter's would take an idle school's allocation at
	// 100,000 schools from 96 bytes to 112.
	Removed atomic.Bool
	// mu makes one build at a time: concurrent first requests wait for
	// it and share what it built.
	mu sync.Mutex
}

// NewSchool is an idle school built by b, counted by bound once built.
func NewSchool[B, F any](b Builder[B, F], bound *Bound[*Active[B, F]]) *School[B, F] {
	s := new(School[B, F])
	s.Init(b, bound)
	return s
}

// Init makes s, a zero School in a builder of the adapter's own (one
// allocation a school where 100,000 are idle), the idle school built by
// b, counted by bound once built; before s is used, once.
func (s *School[B, F]) Init(b Builder[B, F], bound *Bound[*Active[B, F]]) {
	s.b, s.bound = b, bound
}

// Active is a built school and the requests in flight in it.
type Active[B, F any] struct {
	built   *B
	serving Serving
	school  *School[B, F]
	hold    Hold
	unload  sync.Once
}

// Built is what the build made.
func (a *Active[B, F]) Built() *B { return a.built }

// Hold is the school's hold, as the Bound counts it.
func (a *Active[B, F]) Hold() *Hold { return &a.hold }

// Acquire lets a request in, unless the school is closed.
func (a *Active[B, F]) Acquire() bool {
	ok, letGo := a.hold.Acquire()
	if letGo {
		a.LetGo()
	}
	return ok
}

// Release lets a request out; the last one out of a closed school lets go
// of it. Past max_active with no idle school to let go of at the last
// build, the last request out of this one makes room.
func (a *Active[B, F]) Release() {
	switch letGo, idle := a.hold.Release(); {
	case letGo:
		a.LetGo()
	case idle && a.school.bound.Over():
		for _, v := range a.school.bound.Trim() {
			v.LetGo()
		}
	}
}

// Close lets no further request in; the school is let go of after the
// last one in flight (now, if none is).
func (a *Active[B, F]) Close() {
	if a.hold.Close() {
		a.LetGo()
	}
}

// LetGo lets go of the school, once: the bound stops counting it, and the
// adapter lets go of what was built. Only once closed (Bound's trim, the
// last request out of a closed school).
func (a *Active[B, F]) LetGo() {
	a.unload.Do(func() {
		s := a.school
		s.bound.Forget(a)
		s.active.CompareAndSwap(a, nil)
		s.b.LetGo(a.built)
	})
}

// Serve answers a request of the school, building it first if it is
// idle: through the built school, or the stand-in of one that failed;
// errRetired for a retired school, whose replacement the table that
// replaced it has.
func (s *School[B, F]) Serve(w http.ResponseWriter, r *http.Request) error {
	a, f := s.Enter()
	if a == nil {
		if f == nil {
			return errRetired
		}
		return s.b.ServeFailed(f, w, r)
	}
	defer a.Release()
	return a.serving.Site.Serve(w, r, a.serving.Next)
}

// Enter lets a request in: the built school (building it if idle), its
// last use noted; or the stand-in of a school that failed; neither for a
// retired school. The caller releases the built school.
func (s *School[B, F]) Enter() (*Active[B, F], *F) {
	a := s.active.Load()
	if a == nil || !a.Acquire() {
		var f *F
		if a, f = s.activate(); a == nil {
			return nil, f
		}
	}
	a.hold.Touch(time.Now().UnixNano())
	return a, nil
}

// activate returns the built school with the caller's request let in,
// building it if need be; or the stand-in of a school that failed; or
// neither for a retired one.
func (s *School[B, F]) activate() (*Active[B, F], *F) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.retired.Load() {
		return nil, nil
	}
	if a := s.active.Load(); a != nil && a.Acquire() {
		return a, nil
	}
	if f := s.failed.Load(); f != nil {
		return nil, f
	}
	a, err := s.build()
	if err != nil {
		return nil, s.fail(err)
	}
	a.hold.Start()
	s.install(a)
	return a, nil
}

// Warm builds the school without a request, unless it is built or
// failed: a changed record of a school in use, or one a reload hands on;
// used is its last use (Unix nanoseconds).
func (s *School[B, F]) Warm(used int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.retired.Load() || s.failed.Load() != nil {
		return
	}
	if a := s.active.Load(); a != nil && !a.hold.Closed() {
		return
	}
	a, err := s.build()
	if err != nil {
		s.fail(err)
		return
	}
	a.hold.Touch(used)
	s.install(a)
}

// Refuse makes the school answer through the stand-in of err without a
// build: a record the platform refuses before any request.
func (s *School[B, F]) Refuse(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail(err)
}

// build builds the school. The caller holds s.mu.
func (s *School[B, F]) build() (*Active[B, F], error) {
	built, serving, err := s.b.Build()
	if err != nil {
		return nil, err
	}
	a := &Active[B, F]{built: built, serving: serving, school: s}
	a.hold.Touch(time.Now().UnixNano())
	return a, nil
}

// install makes a the school's built state, counted by the bound, which
// lets go of the least recently used idle schools past max_active. The
// caller holds s.mu.
func (s *School[B, F]) install(a *Active[B, F]) {
	s.active.Store(a)
	for _, v := range s.bound.Add(a) {
		v.LetGo()
	}
	// A retire that ran while this was built closes it here (Retire
	// sets retired, then closes what is active).
	if s.retired.Load() {
		a.Close()
	}
}

// fail makes the school answer through its stand-in. The caller holds
// s.mu.
func (s *School[B, F]) fail(err error) *F {
	f := s.b.Fail(err)
	s.failed.Store(f)
	if s.retired.Load() {
		s.b.EndFailure(f, false) // Retire ran meanwhile
	}
	return f
}

// Rebuild builds the failed school once, for its stand-in f, and reports
// whether its rebuilds are over: it is built, or retired.
func (s *School[B, F]) Rebuild(f *F) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.retired.Load() {
		return true
	}
	a, err := s.build()
	if err != nil {
		s.b.StillFailing(f, err)
		return false
	}
	s.failed.Store(nil)
	s.b.EndFailure(f, true)
	s.install(a)
	return true
}

// Retire ends the school's part in the platform: no request is let in
// any more, and what was built is let go of after the last one in
// flight.
func (s *School[B, F]) Retire() {
	s.retired.Store(true)
	if a := s.active.Load(); a != nil {
		a.Close()
	}
	// A stand-in installed by a build that ran meanwhile ends here or
	// in fail, which reads retired after it installed it.
	if f := s.failed.Load(); f != nil {
		s.b.EndFailure(f, false)
	}
}

// Retired reports whether the school was retired.
func (s *School[B, F]) Retired() bool { return s.retired.Load() }

// Active is the built school, nil while idle; it may be closed.
func (s *School[B, F]) Active() *Active[B, F] { return s.active.Load() }

// Failed is the stand-in of a school that failed to build, nil otherwise.
func (s *School[B, F]) Failed() *F { return s.failed.Load() }

// IsActive reports whether the school is built and lets requests in.
func (s *School[B, F]) IsActive() bool {
	a := s.active.Load()
	return a != nil && !a.hold.Closed()
}

// State names what the school is now: failed, active or idle.
func (s *School[B, F]) State() string {
	switch {
	case s.failed.Load() != nil:
		return "failed"
	case s.IsActive():
		return "active"
	}
	return "idle"
}

// Building reports whether a build of the school (or a rebuild, or a
// warm-up) runs now: a test waits for one to end.
func (s *School[B, F]) Building() bool {
	if s.mu.TryLock() {
		s.mu.Unlock()
		return false
	}
	return true
}
