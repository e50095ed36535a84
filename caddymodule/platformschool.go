package caddymodule

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/schoolgate/schoolgate/metrics"
	platformcore "github.com/schoolgate/schoolgate/platform"
	"github.com/schoolgate/schoolgate/registry"
	"github.com/schoolgate/schoolgate/school"
)

// A platform school is a lazily built, reference-counted school
// (platform.School), which this adapter builds as a site block's school
// is built (newSite, the site and store pools): its store opened, its
// keys loaded, the proxy to its legacy server held. The platform lets go
// of it past max_active, or when its record changes or is removed, after
// its last request (LetGo).

// platformSchool is one record of the registry as the platform serves it,
// and its builder (platform.Builder). A changed record is a new
// platformSchool, which replaces the old one in the table; the old one
// is retired.
//
// At 100,000 schools most are idle, never built, and each costs the
// process what this holds: the record is the registry's own (a
// pointer, never changed), its platform.School is part of it (one
// allocation), and what a build prepares is apart (schoolBuild), made at
// the first build only.
type platformSchool struct {
	platformcore.School[builtSchool, failedSite]
	p   *platform
	rec *registry.Record

	// (School.Removed is set for a record removed, before it is
	// retired: its metric series go once its last request is out.)

	// prep guards build: concurrent builds are one at a time already,
	// but the usage API prepares without building.
	prep sync.Mutex
	// build is what the first build prepared from the record, nil
	// before; under prep.
	build *schoolBuild
	// claimedBy is the platform that served the issuer instead when the
	// school was made (conflictOf), nil if none; set before the school
	// is in a table, never after.
	claimedBy *platform
}

// schoolBuild is what a school's first build prepared from its record:
// its configuration and its key in the site pool (kept for the next
// build, and for the stand-in of a school that fails), and the bbolt
// file it claimed. The proxy to its legacy server is held by what
// serves (activeSchool, failedSite), and let go of with it.
type schoolBuild struct {
	g *Gateway
	// key is "" until the admin OpenAPI file was read (prepare).
	key string
	// dataPath is the bbolt file the school claimed (platform.claimData),
	// "" before or in a database; under p.mu.
	dataPath string
}

// prepared is what the school's builds prepared, nil if none did yet.
func (e *platformSchool) prepared() *schoolBuild {
	e.prep.Lock()
	defer e.prep.Unlock()
	return e.build
}

// activeSchool is a built school and the requests in flight in it
// (platform.Active): a request never meets a closed store.
type activeSchool = platformcore.Active[builtSchool, failedSite]

// builtSchool is what a build made of a platform school: its state from
// the site pool and its hold on the proxy to its legacy server. What
// serves its requests the platform holds beside it (platform.Serving).
type builtSchool struct {
	*site
	school *platformSchool
	// releaseNext lets go of the school's hold on its proxy.
	releaseNext func()
}

// Build builds the school as a site block's is built: its store opened
// (or shared with a config that has it), its keys loaded. One build at a
// time (platform.School).
func (e *platformSchool) Build() (*builtSchool, platformcore.Serving, error) {
	var none platformcore.Serving
	b, err := e.prepare()
	if err != nil {
		return nil, none, err
	}
	if err := e.p.claimData(e, b); err != nil {
		return nil, none, err
	}
	next, releaseNext, err := e.p.upstream(b.g)
	if err != nil {
		return nil, none, err
	}
	ctx := e.p.ctx
	s, kept, err := acquireSite(b.key, func() (*site, context.CancelFunc, error) { return b.g.newSite(ctx) })
	if err != nil {
		releaseNext()
		return nil, none, err
	}
	if kept {
		// This config serves its own metrics registry.
		s.observe.Use(metrics.NewObserver(metrics.For(ctx.GetMetricsRegistry()), b.g.Issuer))
	}
	return &builtSchool{site: s, school: e, releaseNext: releaseNext}, platformcore.Serving{Site: s.Site, Next: next}, nil
}

// ServeFailed answers a request through the stand-in of the school that
// failed to build, with the proxy to its legacy server it holds.
func (e *platformSchool) ServeFailed(f *failedSite, w http.ResponseWriter, r *http.Request) error {
	return f.serve(w, r, f.next)
}

// LetGo releases the built school: the site pool lets go of its state
// (store, keys, MCP server, background work) when no config has it any
// more, and the proxy pool its proxy when no school has it.
func (e *platformSchool) LetGo(b *builtSchool) {
	if err := releaseSite(e.prepared().key); err != nil {
		e.p.ctx.Slogger().Error("letting go of a school", "issuer", e.rec.Issuer, "error", err)
	}
	b.releaseNext()
	if e.Removed.Load() {
		e.p.forgetMetrics(e.rec.Issuer)
	}
}

// prepare reads the record as a school's configuration and places its
// state where the registry keeps it, then reads its admin OpenAPI file,
// once: what was prepared stays for the next build, and for the stand-in
// of a school that fails (its legacy server).
func (e *platformSchool) prepare() (*schoolBuild, error) {
	e.prep.Lock()
	defer e.prep.Unlock()
	if e.build == nil {
		g, err := recordGateway(e.rec)
		if err != nil {
			return nil, err
		}
		if err := e.p.reg.place(g); err != nil {
			return nil, err
		}
		if _, err := defaultUpstreamProxy(g.Upstream, g.LegacyTimeout()); err != nil {
			return nil, fmt.Errorf("upstream: %v", err)
		}
		e.build = &schoolBuild{g: g}
	}
	b := e.build
	if b.key != "" {
		return b, nil
	}
	raw, err := b.g.ReadAdminOpenAPI(e.p.ctx)
	if err != nil {
		return nil, err
	}
	b.g.adminOpenAPI = raw
	key, err := b.g.siteKey()
	if err != nil {
		return nil, err
	}
	b.key = key
	return b, nil
}

// Fail makes the school's stand-in and schedules its rebuilds.
func (e *platformSchool) Fail(err error) *failedSite {
	lf := school.AsBuildError(err, "its configuration could not be used")
	e.p.ctx.Slogger().Error("a school of the platform failed to load; it answers 503 until a rebuild in the background builds it",
		"issuer", e.rec.Issuer, "error", err, "next_try", firstRebuild)
	var g *Gateway
	if b := e.prepared(); b != nil {
		g = b.g
	}
	var next caddyhttp.Handler
	var releaseNext func()
	if g == nil {
		// A record that does not read as a configuration: its stand-in
		// has no legacy server to hand anything to (failedSite.serve),
		// nor has one whose proxy cannot be provisioned.
		g = &Gateway{Options: school.Options{Issuer: e.rec.Issuer}}
		g.SetDefaults()
	} else if h, release, perr := e.p.upstream(g); perr == nil {
		next, releaseNext = h, release
	}
	life, stop := context.WithCancel(e.p.life)
	f := newFailedSite(g, lf)
	f.next, f.releaseNext, f.rebuild.stop = next, releaseNext, stop
	e.p.noteFailing(e, true)
	e.scheduleRebuilds(life, f)
	return f
}

// scheduleRebuilds builds the failed school again in the background, on
// the schedule of a site block's (rebuild.go), until it is built or
// retired or the platform ends (life).
func (e *platformSchool) scheduleRebuilds(life context.Context, f *failedSite) {
	delay := firstRebuild
	background.Add(life, delay, func(context.Context) time.Duration {
		if e.Rebuild(f) {
			return 0
		}
		delay = min(delay*2, lastRebuild)
		f.rebuild.next.Store(time.Now().Add(delay).UnixNano())
		return delay
	})
}

// StillFailing records why a rebuild failed.
func (e *platformSchool) StillFailing(f *failedSite, err error) {
	f.failure.Store(school.AsBuildError(err, "its configuration could not be used"))
	e.p.ctx.Slogger().Warn("a school of the platform still fails to load; it is tried again later",
		"issuer", e.rec.Issuer, "error", err)
}

// EndFailure lets go of the stand-in: a rebuild built the school, or it
// was retired.
func (e *platformSchool) EndFailure(f *failedSite, rebuilt bool) {
	e.p.noteFailing(e, false)
	f.end()
	if rebuilt {
		e.p.ctx.Slogger().Info("a school of the platform failed to load before and serves now", "issuer", e.rec.Issuer)
	}
}

// retire ends the school's part in the platform (platform.School.Retire),
// and its metric series if its record was removed.
func (e *platformSchool) retire(removed bool) {
	if removed {
		e.Removed.Store(true)
		e.p.forgetMetrics(e.rec.Issuer)
	}
	e.Retire()
	e.p.releaseData(e)
	e.p.noteFailing(e, false)
}

// state names what the school is now, for the admin API.
func (e *platformSchool) state() string {
	if e.rec.Disabled {
		return "disabled"
	}
	return e.State()
}
