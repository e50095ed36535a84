package caddymodule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/schoolgate/schoolgate/metrics"
	platformcore "github.com/schoolgate/schoolgate/platform"
	"github.com/schoolgate/schoolgate/registry"
	"github.com/schoolgate/schoolgate/storepool"
)

// platform is a registry's schools in one config. The App's Start opens
// the registry, reads its records (each an idle school: nothing is built)
// and watches it; each change replaces the host table, so that requests
// route without a lock and a change applies without a reload (the
// registry's watch, platform.Watch). Schools are built by their first
// request (platform.School, through platformschool.go), at most max of
// them at once.
type platform struct {
	cfg    PlatformRegistry
	regKey string
	max    int
	ctx    caddy.Context
	app    *App
	// users counts the config's handlers that share the platform; the
	// last one's Cleanup ends it. Under app.mu.
	users int

	// open opens the registry; upstream returns a school's next handler,
	// the config's proxy to its legacy server, held until release.
	// Variables for tests.
	open     func(ctx context.Context) (*openedRegistry, error)
	upstream func(g *Gateway) (next caddyhttp.Handler, release func(), err error)

	// metrics are the config's collectors, which a removed school's
	// series are deleted from.
	metrics *metrics.Metrics

	// tables is the host table that serves, nil until the registry was
	// read, and the way of a request through it to its school.
	tables *platformcore.Hosts[*platformSchool]
	// life ends with the platform: the rebuilds of failed schools, the
	// retries of a registry that could not be read.
	life context.Context
	end  context.CancelFunc

	// watch keeps the table to the registry (platform.Watch); its lock
	// orders the table's writers: the start, the changes, the end, the
	// claims. Under it: reg, unwatch.
	watch   *platformcore.Watch[*platformSchool]
	reg     *openedRegistry
	unwatch func()

	// built are the schools built, at most max of them (max_active).
	built *platformcore.Bound[*activeSchool]
	// mu guards failing and dataFiles.
	mu sync.Mutex
	// failing are the schools of the table that failed to build, kept as
	// they fail and recover so that the health check reads them without
	// a pass over every school (platformstatus.go).
	failing map[*platformSchool]struct{}
	// dataFiles are the bbolt files of the schools built, by path: two
	// records naming one data directory would mix two schools in one
	// file.
	dataFiles map[string]*platformSchool
}

// openedRegistry is an opened registry, where it keeps its schools, and
// how to let go of it.
type openedRegistry struct {
	registry.Registry
	place   placement
	release func() error
}

func newPlatform(ctx caddy.Context, app *App, h *Platform) *platform {
	life, end := context.WithCancel(context.Background())
	p := &platform{cfg: h.Registry, regKey: h.Registry.key(), max: h.MaxActive, ctx: ctx, app: app,
		metrics: metrics.For(ctx.GetMetricsRegistry()), life: life, end: end,
		built: platformcore.NewBound[*activeSchool](h.MaxActive), failing: map[*platformSchool]struct{}{}, dataFiles: map[string]*platformSchool{}}
	p.open = func(c context.Context) (*openedRegistry, error) { return h.Registry.open(c, ctx) }
	p.upstream = p.proxyFor
	p.watch = platformcore.NewWatch[*platformSchool](p, platformcore.WatchConfig{
		Life: life, Log: ctx.Slogger(), Name: h.Registry.describe(), Timeout: storeCallTimeout,
		First: firstRebuild, Last: lastRebuild,
		Schedule: func(c context.Context, first time.Duration, fn func(context.Context) time.Duration) {
			background.Add(c, first, fn)
		}})
	p.tables = platformcore.NewHosts[*platformSchool](p.watch.Failure)
	return p
}

// proxyFor is the config's reverse proxy to g's legacy server, shared with
// the schools (site blocks included) that have the same one, and held
// until release: the last school to let go of a proxy ends it (its
// transport, health checks and metrics goroutine), so that the proxies
// of schools removed or let go of do not pile up while the config runs.
func (p *platform) proxyFor(g *Gateway) (caddyhttp.Handler, func(), error) {
	rp, err := defaultUpstreamProxy(g.Upstream, g.LegacyTimeout())
	if err != nil {
		return nil, nil, fmt.Errorf("upstream: %v", err)
	}
	raw, err := json.Marshal(rp)
	if err != nil {
		return nil, nil, fmt.Errorf("upstream: %v", err)
	}
	h, release, err := p.app.acquireProxy(p.ctx, raw, true)
	if err != nil {
		return nil, nil, err
	}
	return caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		return h.ServeHTTP(w, r, lastHandler)
	}), release, nil
}

// lastHandler ends a route: the proxy answers every request itself.
var lastHandler = caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return nil })

// start opens the registry and reads it. A registry that cannot be read
// leaves the platform answering 503 and trying again in the background —
// unless the running config serves this registry: then the start fails,
// and the running config keeps serving, as for a site block's school.
func (p *platform) start() error {
	err := p.connect()
	if err == nil {
		return nil
	}
	if p.servedNow() {
		return err
	}
	p.ctx.Slogger().Error("the platform's registry could not be read; its schools answer 503 until it can",
		"registry", p.cfg.describe(), "error", err, "next_try", firstRebuild)
	p.watch.Failed(err)
	p.tables.End()
	return nil
}

// connect opens the registry, watches it and reads it into the first
// table. Changes announced meanwhile wait for the table (platform.Watch).
func (p *platform) connect() error {
	ctx, cancel := context.WithTimeout(p.life, storepool.ConnectTimeout)
	defer cancel()
	reg, err := p.open(ctx)
	if err != nil {
		return err
	}
	unwatch := reg.Watch(p.watch.Changed)
	// The listing has its own time: a registry dir's opening reads every
	// file, which at 100,000 on a busy machine outlasts the wait meant
	// for a database that does not answer, and a listing failed for the
	// opening's time would open it again, forever.
	lctx, lcancel := context.WithTimeout(p.life, storepool.ConnectTimeout)
	defer lcancel()
	p.watch.Listing()
	records, err := listShared(lctx, reg.Registry)
	if err != nil {
		unwatch()
		_ = reg.release()
		return fmt.Errorf("registry: %v", err)
	}
	t := newHostTable(len(records))
	for _, rec := range records {
		t.Add(p.newSchool(rec))
	}
	p.watch.Lock()
	defer p.watch.Unlock()
	if p.watch.Ended() {
		unwatch()
		_ = reg.release()
		return errors.New("the platform ended")
	}
	p.reg, p.unwatch = reg, unwatch
	p.ctx.Slogger().Info("the platform's registry is read", "registry", p.cfg.describe(), "schools", t.Len())
	p.watch.Start(reg.Registry, t)
	p.reclaimAll()
	p.handOver()
	return nil
}

// listShared lists the records of reg for the schools to keep: the
// registry's own where it shares them (registry.Sharer), else the
// listing's, which the schools then hold together (one array, as long
// as one of them is served).
func listShared(ctx context.Context, reg registry.Registry) ([]*registry.Record, error) {
	if s, ok := reg.(registry.Sharer); ok {
		return s.ListShared(ctx)
	}
	records, err := reg.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*registry.Record, len(records))
	for i := range records {
		out[i] = &records[i]
	}
	return out, nil
}

// servedNow reports whether the running config serves this registry.
// While a config starts, the running config is the one it replaces.
func (p *platform) servedNow() bool {
	prev := p.runningTwin()
	return prev != nil && prev.tables.Load() != nil
}

// runningTwin is the running config's platform of the same registry, if
// it is not this one.
func (p *platform) runningTwin() *platform {
	app, err := runningApp()
	if err != nil || app == p.app {
		return nil
	}
	app.mu.Lock()
	defer app.mu.Unlock()
	return app.platformKeys[p.regKey]
}

// handOver builds, at a reload, the schools that the running config has
// built and whose record is unchanged: they keep their state (the site
// pool hands it over), so that a reload does not turn every school in use
// idle. The cost is the number of schools in use. The caller holds
// the watch's lock.
func (p *platform) handOver() {
	prev := p.runningTwin()
	if prev == nil {
		return
	}
	built := prev.built.All()
	used := make(map[*platformSchool]int64, len(built))
	for _, a := range built {
		used[a.Built().school] = a.Hold().Used()
	}
	t := p.tables.Load()
	for old, at := range used {
		if e := t.School(old.rec.Issuer); e != nil && !e.rec.Disabled && registry.SameRecord(e.rec, old.rec) {
			e.Warm(at)
		}
	}
}

// release lets go of the platform when the last of its config's handlers
// is cleaned up.
func (p *platform) release() error {
	p.app.mu.Lock()
	p.users--
	last := p.users == 0
	p.app.mu.Unlock()
	if !last {
		return nil
	}
	return p.stop()
}

// stop ends the platform with its config: no change is applied any more,
// every school is retired (let go of after its last request), and the
// registry is let go of.
func (p *platform) stop() error {
	p.watch.Lock()
	p.watch.End()
	reg, unwatch := p.reg, p.unwatch
	p.watch.Unlock()
	p.end()
	p.tables.End()
	if unwatch != nil {
		// Outside the watch's lock: a registry's stop may wait for a change being
		// announced, which waits for the lock.
		unwatch()
	}
	if t := p.tables.Load(); t != nil {
		for _, e := range t.Schools() {
			e.retire(false)
		}
	}
	if reg == nil {
		return nil
	}
	return reg.release()
}

// newSchool is the platform's school of rec. A record of an issuer that a
// site block of the config serves, or another platform of it
// (conflictOf), fails at once, without a build, so that the admin API
// and the health check report it before any request.
func (p *platform) newSchool(rec *registry.Record) *platformSchool {
	e := &platformSchool{p: p, rec: rec}
	e.Init(e, p.built)
	if !rec.Disabled {
		if err := p.conflictOf(e); err != nil {
			e.Refuse(err)
		}
	}
	return e
}

// siteBlockConflict refuses to build a school whose issuer, or whose bbolt
// file (path, "" for none), is a site block's of the config: the site
// block serves the school (a Caddyfile's site block is matched by its
// host before a platform's catch-all), and two handlers of one school
// would answer it from two stores. The registry is shared by instances
// whose Caddyfiles differ, so a record cannot be refused where it is
// written.
func (p *platform) siteBlockConflict(issuer, path string) error {
	g := p.app.siteBlockOf(issuer, path)
	switch {
	case g == nil:
		return nil
	case g.Issuer == issuer:
		return failedLoading("another part of this server's configuration serves it",
			fmt.Errorf("issuer: %s is a school_gateway site block's in this config, which serves it; "+
				"this record of the registry is not used: remove the site block or the record", issuer))
	}
	return failedLoading("its data directory is another school's",
		fmt.Errorf("data: %s is the school_gateway site block of %s's; each school needs its own data directory", path, g.Issuer))
}

// claimData records the bbolt file a school (as its build prepared it) is about to
// open, refusing one that another school of the config's platforms, or a
// site block, has; and refuses a school that a site block or a platform
// ranked before this one serves (platformclaim.go).
func (p *platform) claimData(e *platformSchool, b *schoolBuild) error {
	g := b.g
	if err := p.siteBlockConflict(e.rec.Issuer, ""); err != nil {
		return err
	}
	if q := p.claimant(e.rec.Issuer); q != nil {
		return p.claimed(q, e.rec.Issuer)
	}
	if g.Store != nil {
		return nil
	}
	path := g.dataPath()
	if err := p.siteBlockConflict(e.rec.Issuer, path); err != nil {
		return err
	}
	return p.claimFile(e, b, path)
}

// forgetMetrics deletes the series of a school removed from the registry,
// unless its issuer is back in the table: the series of a school that is
// only let go of, changed or disabled stay while its record does, so that
// their count is bounded by the registry's size.
func (p *platform) forgetMetrics(issuer string) {
	if t := p.tables.Load(); t != nil && t.School(issuer) != nil {
		return
	}
	p.metrics.Forget(issuer)
}

// releaseData forgets the bbolt file of a retired school.
func (p *platform) releaseData(e *platformSchool) {
	b := e.prepared()
	if b == nil {
		return // never built: it claimed nothing
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if b.dataPath != "" && p.dataFiles[b.dataPath] == e {
		delete(p.dataFiles, b.dataPath)
	}
}
