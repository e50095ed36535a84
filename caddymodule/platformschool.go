package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	platformcore "github.com/schoolgate/schoolgate/platform"
	"github.com/schoolgate/schoolgate/registry"
	"github.com/schoolgate/schoolgate/school"
)

// A platform school is idle (its record only) until its first request
// builds it, as a site block's school is built (newSite, the site and
// store pools): it is then active, with its store open and its keys
// loaded. It goes back to idle when the platform lets go of it, the least
// recently used first, to keep at most max_active built; a changed or
// removed record retires it. Either way a request in flight finishes on
// the school it started on, and the store is released after the last
// one (activeSchool).

// platformSchool is one record of the registry as the platform serves it.
// A changed record is a new platformSchool, which replaces the old one in
// the table; the old one is retired.
type platformSchool struct {
	p   *platform
	rec registry.Record

	// active is the built school, nil while idle.
	active atomic.Pointer[activeSchool]
	// failed is the stand-in of a school that could not be built, which
	// is built again in the background (rebuilds); nil otherwise.
	failed atomic.Pointer[platformFailure]
	// retired is set once the record changed or was removed, or the
	// platform ended: nothing is built for it any more. removed is set
	// first for a record removed: its metric series go once its last
	// request is out.
	retired atomic.Bool
	removed atomic.Bool

	// mu makes one build at a time: concurrent first requests wait for
	// it and share what it built.
	mu sync.Mutex
	// What the first build prepared from the record, under mu: the
	// school's configuration and its key in the site pool. The proxy to
	// its legacy server is held by what serves (activeSchool,
	// platformFailure), and let go of with it.
	g   *Gateway
	key string
	// dataPath is the bbolt file the school claimed (platform.claimData),
	// "" before or in a database; under p.mu.
	dataPath string
	// claimedBy is the platform that served the issuer instead when the
	// school was made (conflictOf), nil if none; set before the school
	// is in a table, never after.
	claimedBy *platform
}

// platformFailure is a school that could not be built, and the handler
// its stand-in hands the legacy site's public pages to: nil for a record
// that does not read as a configuration, which names no legacy server.
type platformFailure struct {
	*failedSite
	next caddyhttp.Handler
	// releaseNext lets go of next, once: when a rebuild replaced the
	// stand-in, or the school was retired.
	releaseNext func()
	// stop ends the rebuilds, whose job then leaves the scheduler at
	// once rather than at its next run.
	stop context.CancelFunc
}

// end lets go of what the stand-in holds.
func (f *platformFailure) end() {
	f.stop()
	if f.releaseNext != nil {
		f.releaseNext()
	}
}

// serveFailed answers a request of a school that could not be built.
func (f *platformFailure) serveFailed(w http.ResponseWriter, r *http.Request) error {
	if f.next == nil {
		return school.WriteTemporarilyUnavailable(w, f.retryAfter(),
			"this school is not available: "+f.failure.Load().Reason)
	}
	return f.serve(w, r, f.next)
}

// activeSchool is a built school and the requests in flight in it. Its
// hold counts them; its closed bit, once set, lets no request in, and the
// school is let go of (its store released, its background work ended)
// when the count reaches zero under it: a request never meets a closed
// store.
type activeSchool struct {
	*site
	school *platformSchool
	next   caddyhttp.Handler
	// releaseNext lets go of next, the school's hold on its proxy.
	releaseNext func()
	// hold counts the requests in flight and closes the school
	// (package platform); unload lets go of it once.
	hold   platformcore.Hold
	unload sync.Once
}

// Hold is the school's hold, as the platform's bound counts it.
func (a *activeSchool) Hold() *platformcore.Hold { return &a.hold }

// acquire lets a request in, unless the school is closed.
func (a *activeSchool) acquire() bool {
	ok, letGo := a.hold.Acquire()
	if letGo {
		a.letGo()
	}
	return ok
}

// release lets a request out; the last one out of a closed school lets go
// of it. Past max_active with no idle school to let go of at the last
// activation, the last request out of this one makes room.
func (a *activeSchool) release() {
	switch letGo, idle := a.hold.Release(); {
	case letGo:
		a.letGo()
	case idle && a.school.p.built.Over():
		a.school.p.trim()
	}
}

// close lets no further request in; the school is let go of after the
// last one in flight (now, if none is).
func (a *activeSchool) close() {
	if a.hold.Close() {
		a.letGo()
	}
}

// letGo releases the school, once: the platform stops counting it, the
// site pool lets go of its state (store, keys, MCP server, background
// work) when no config has it any more, and the proxy pool its proxy when
// no school has it.
func (a *activeSchool) letGo() {
	a.unload.Do(func() {
		e := a.school
		e.p.forget(a)
		e.active.CompareAndSwap(a, nil)
		if err := releaseSite(e.key); err != nil {
			e.p.ctx.Slogger().Error("letting go of a school", "issuer", e.rec.Issuer, "error", err)
		}
		a.releaseNext()
		if e.removed.Load() {
			e.p.forgetMetrics(e.rec.Issuer)
		}
	})
}

// closed reports whether the school lets requests in no more.
func (a *activeSchool) closed() bool { return a.hold.Closed() }

// errRetired is a request that met a school whose record was replaced
// after the request found it: the current table has what serves.
var errRetired = errors.New("the school's record was replaced")

// serve answers a request of the school, building it first if it is
// idle.
func (e *platformSchool) serve(w http.ResponseWriter, r *http.Request) error {
	a := e.active.Load()
	if a == nil || !a.acquire() {
		var f *platformFailure
		if a, f = e.activate(); a == nil {
			if f == nil {
				return errRetired
			}
			return f.serveFailed(w, r)
		}
	}
	defer a.release()
	a.hold.Touch(time.Now().UnixNano())
	return handlerError(a.Serve(w, r, a.next))
}

// activate returns the built school with the caller's request let in,
// building it if need be; or the stand-in of a school that failed; or
// neither for a retired one.
func (e *platformSchool) activate() (*activeSchool, *platformFailure) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.retired.Load() {
		return nil, nil
	}
	if a := e.active.Load(); a != nil && a.acquire() {
		return a, nil
	}
	if f := e.failed.Load(); f != nil {
		return nil, f
	}
	a, err := e.build()
	if err != nil {
		return nil, e.fail(err)
	}
	a.hold.Start()
	e.install(a)
	return a, nil
}

// warm builds the school without a request, unless it is built or
// failed: a changed record of a school in use, or one a reload hands on.
func (e *platformSchool) warm(used int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.retired.Load() || e.failed.Load() != nil {
		return
	}
	if a := e.active.Load(); a != nil && !a.closed() {
		return
	}
	a, err := e.build()
	if err != nil {
		e.fail(err)
		return
	}
	a.hold.Touch(used)
	e.install(a)
}

// build builds the school as a site block's is built: its store opened
// (or shared with a config that has it), its keys loaded. The caller
// holds e.mu.
func (e *platformSchool) build() (*activeSchool, error) {
	if err := e.prepare(); err != nil {
		return nil, err
	}
	if err := e.p.claimData(e, e.g); err != nil {
		return nil, err
	}
	next, releaseNext, err := e.p.upstream(e.g)
	if err != nil {
		return nil, err
	}
	ctx := e.p.ctx
	s, kept, err := acquireSite(e.key, func() (*site, context.CancelFunc, error) { return e.g.newSite(ctx) })
	if err != nil {
		releaseNext()
		return nil, err
	}
	if kept {
		// This config serves its own metrics registry.
		s.observe.use(newSiteObserver(metricsFor(ctx.GetMetricsRegistry()), e.g.Issuer))
	}
	a := &activeSchool{site: s, school: e, next: next, releaseNext: releaseNext}
	a.hold.Touch(time.Now().UnixNano())
	return a, nil
}

// prepare reads the record as a school's configuration and places its
// state where the registry keeps it, then reads its admin OpenAPI file,
// once: what was prepared stays for the next build, and for the stand-in
// of a school that fails (its legacy server). The caller holds e.mu.
func (e *platformSchool) prepare() error {
	if e.g == nil {
		g, err := recordGateway(&e.rec)
		if err != nil {
			return err
		}
		if err := e.p.reg.place(g); err != nil {
			return err
		}
		if _, err := defaultUpstreamProxy(g.Upstream, g.LegacyTimeout()); err != nil {
			return fmt.Errorf("upstream: %v", err)
		}
		e.g = g
	}
	if e.key != "" {
		return nil
	}
	raw, err := e.g.ReadAdminOpenAPI(e.p.ctx)
	if err != nil {
		return err
	}
	e.g.adminOpenAPI = raw
	key, err := e.g.siteKey()
	if err != nil {
		return err
	}
	e.key = key
	return nil
}

// install makes a the school's built state. The caller holds e.mu.
func (e *platformSchool) install(a *activeSchool) {
	e.active.Store(a)
	e.p.activated(a)
	// A retire that ran while this was built closes it here (retire
	// sets retired, then closes what is active).
	if e.retired.Load() {
		a.close()
	}
}

// fail makes the school answer through its stand-in and schedules its
// rebuilds, unless a stand-in serves already. The caller holds e.mu.
func (e *platformSchool) fail(err error) *platformFailure {
	lf := school.AsBuildError(err, "its configuration could not be used")
	e.p.ctx.Slogger().Error("a school of the platform failed to load; it answers 503 until a rebuild in the background builds it",
		"issuer", e.rec.Issuer, "error", err, "next_try", firstRebuild)
	g := e.g
	var next caddyhttp.Handler
	var releaseNext func()
	if g == nil {
		// A record that does not read as a configuration: its stand-in
		// has no legacy server to hand anything to (serveFailed), nor
		// has one whose proxy cannot be provisioned.
		g = &Gateway{Options: school.Options{Issuer: e.rec.Issuer}}
		g.SetDefaults()
	} else if h, release, perr := e.p.upstream(g); perr == nil {
		next, releaseNext = h, release
	}
	life, stop := context.WithCancel(e.p.life)
	f := &platformFailure{failedSite: newFailedSite(g, lf), next: next, releaseNext: releaseNext, stop: stop}
	e.failed.Store(f)
	e.p.noteFailing(e, true)
	e.scheduleRebuilds(life, f)
	if e.retired.Load() {
		f.end() // retire ran meanwhile (retire)
		e.p.noteFailing(e, false)
	}
	return f
}

// scheduleRebuilds builds the failed school again in the background, on
// the schedule of a site block's (rebuild.go), until it is built or
// retired or the platform ends (life).
func (e *platformSchool) scheduleRebuilds(life context.Context, f *platformFailure) {
	delay := firstRebuild
	background.Add(life, delay, func(context.Context) time.Duration {
		if e.rebuild(f) {
			return 0
		}
		delay = min(delay*2, lastRebuild)
		f.rebuild.next.Store(time.Now().Add(delay).UnixNano())
		return delay
	})
}

// rebuild builds the failed school once and reports whether its rebuilds
// are over: it is built, or retired.
func (e *platformSchool) rebuild(f *platformFailure) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.retired.Load() {
		return true
	}
	a, err := e.build()
	if err != nil {
		f.failure.Store(school.AsBuildError(err, "its configuration could not be used"))
		e.p.ctx.Slogger().Warn("a school of the platform still fails to load; it is tried again later",
			"issuer", e.rec.Issuer, "error", err)
		return false
	}
	e.failed.Store(nil)
	e.p.noteFailing(e, false)
	f.end()
	e.install(a)
	e.p.ctx.Slogger().Info("a school of the platform failed to load before and serves now", "issuer", e.rec.Issuer)
	return true
}

// retire ends the school's part in the platform: no request is let in
// any more, and its state is let go of after the last one in flight; so
// are its metric series if its record was removed.
func (e *platformSchool) retire(removed bool) {
	if removed {
		e.removed.Store(true)
		e.p.forgetMetrics(e.rec.Issuer)
	}
	e.retired.Store(true)
	if a := e.active.Load(); a != nil {
		a.close()
	}
	e.p.releaseData(e)
	e.p.noteFailing(e, false)
	// A stand-in installed by a build that ran meanwhile ends here or
	// in fail, which reads retired after it installed it.
	if f := e.failed.Load(); f != nil {
		f.end()
	}
}

// state names what the school is now, for the admin API.
func (e *platformSchool) state() string {
	switch {
	case e.rec.Disabled:
		return "disabled"
	case e.failed.Load() != nil:
		return "failed"
	case e.isActive():
		return "active"
	}
	return "idle"
}

// isActive reports whether the school is built and lets requests in.
func (e *platformSchool) isActive() bool {
	a := e.active.Load()
	return a != nil && !a.closed()
}
