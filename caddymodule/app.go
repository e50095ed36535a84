package caddymodule

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/metrics"
)

const appName = "schoolgate"

func init() {
	caddy.RegisterModule(new(App))
}

// App keeps the schools of a config. Provision registers each school and
// refuses two site blocks sharing an issuer or a data file; Start builds
// them (start.go), which Caddy does only for a config it runs. Each
// school's background work (expiry purges, catalog refresh) runs with its
// state, which may outlive a config (sitepool.go).
type App struct {
	// FairShare is how the instance is shared between schools while it
	// is contended (globaloption.go). Default: on, with its defaults.
	FairShare *FairShare `json:"fair_share,omitempty"`
	// MetricsPerSchool is which schools have metric series of their own
	// beside the instance's totals: none, all, or "top <n>" by traffic
	// (metrics.PerSchoolOf). Default: all for a config of site blocks only,
	// none for one with a school_platform.
	MetricsPerSchool string `json:"metrics_per_school,omitempty"`

	// metrics are the config's (package metrics).
	metrics *metrics.Metrics

	mu sync.Mutex
	// gateways are the config's schools in the order they were
	// provisioned, which Start builds in; issuers and dataFiles index
	// them by issuer and by bbolt file.
	gateways  []*Gateway
	issuers   map[string]*Gateway
	dataFiles map[string]*Gateway
	// sites are the started schools that serve, failed those whose data
	// failed to load (failure.go).
	sites  map[string]*site
	failed map[string]*failedSite
	// proxies are the config's reverse proxies to legacy servers, one
	// per configuration (upstreamproxy.go).
	proxies map[[sha256.Size]byte]*pooledProxy
	// proxyCtx is the parent of the platform proxies' own contexts
	// (proxyBase).
	proxyCtx *caddy.Context
	// platforms are the config's school_platform registries ranked by
	// their key (PlatformRegistry.key), which Start reads them in;
	// platformKeys index them by key. platformList is platforms for the
	// certificate permission and the claims of issuers, read without a
	// lock.
	platforms    []*platform
	platformKeys map[string]*platform
	platformList atomic.Pointer[[]*platform]
}

// CaddyModule returns the Caddy module information.
func (*App) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  appName,
		New: func() caddy.Module { return new(App) },
	}
}

var (
	_ caddy.App         = (*App)(nil)
	_ caddy.Provisioner = (*App)(nil)
	_ caddy.Validator   = (*App)(nil)
)

// Provision finds the config's metrics, which its schools count into.
func (a *App) Provision(ctx caddy.Context) error {
	a.metrics = metrics.For(ctx.GetMetricsRegistry())
	return nil
}

// Validate checks the app's own options.
func (a *App) Validate() error { return a.validateGlobal() }

// register adds a provisioned school to the config, refusing a second
// site block of its issuer and a bbolt file another school of the config
// uses. Two site blocks alike would share one state (sitepool.go), so
// the checks cannot wait for the state.
func (a *App) register(g *Gateway) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.issuers == nil {
		a.issuers, a.dataFiles = map[string]*Gateway{}, map[string]*Gateway{}
	}
	if _, ok := a.issuers[g.Issuer]; ok {
		return fmt.Errorf("issuer: %s is configured in two site blocks; each school needs its own", g.Issuer)
	}
	// A database tells sites apart by issuer; a bbolt file holds one.
	var file string
	if g.Store == nil {
		file = g.dataPath()
		if other, ok := a.dataFiles[file]; ok {
			return fmt.Errorf("data: %s is used by %s and %s; each school needs its own data directory",
				file, other.Issuer, g.Issuer)
		}
		a.dataFiles[file] = g
	}
	a.issuers[g.Issuer] = g
	a.gateways = append(a.gateways, g)
	return nil
}

// registerPlatform adds a school_platform handler to the config: the
// handlers that name one registry share its platform, and must configure
// it alike.
func (a *App) registerPlatform(ctx caddy.Context, h *Platform) (*platform, error) {
	key := h.Registry.key()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.platformKeys == nil {
		a.platformKeys = map[string]*platform{}
	}
	if p, ok := a.platformKeys[key]; ok {
		if err := p.sameSettings(h); err != nil {
			return nil, err
		}
		p.users++
		return p, nil
	}
	p := newPlatform(ctx, a, h)
	p.users = 1
	a.platformKeys[key] = p
	// Ranked by key, not in the order Caddy provisions them (its servers
	// are a map): the rank decides which platform serves an issuer that
	// two have a record of, the same way at every start.
	i, _ := slices.BinarySearchFunc(a.platforms, key, func(q *platform, k string) int { return strings.Compare(q.regKey, k) })
	a.platforms = slices.Insert(a.platforms, i, p)
	list := slices.Clone(a.platforms)
	a.platformList.Store(&list)
	return p, nil
}

// startParallel is how many schools are built at once. A new school's
// build waits mostly on its file's syncs (two: boltstore's newfile.go),
// which the disk overlaps across files: one at a time, a thousand new
// schools waited for four thousand syncs in a row, as many as bbolt then
// made of a new file.
const startParallel = 16

// Start builds the config's schools, up to startParallel at once, then
// reads the platforms' registries (their schools are built on their
// first request). A school that fails to load for its data answers 503
// and is built again in the background (start.go), a registry that
// cannot be read is read again; any other failure fails the start (the
// first such school in the order they were provisioned names it), and
// the requests waiting for the schools not built are let go.
func (a *App) Start() error {
	fairShare.Configure(a.FairShare.options())
	a.mu.Lock()
	gateways, platforms := a.gateways, a.platforms
	a.mu.Unlock()
	// The schools are counted once every site block is provisioned,
	// which is after the App's own Validate.
	per, err := metrics.PerSchoolOf(a.MetricsPerSchool, len(gateways), len(platforms) > 0)
	if err != nil {
		for _, g := range gateways {
			g.run.End()
		}
		for _, p := range platforms {
			p.tables.End()
		}
		return err
	}
	if a.metrics != nil {
		a.metrics.SetPerSchool(per)
	}
	if err := startGateways(a, gateways); err != nil {
		for _, p := range platforms {
			p.tables.End()
		}
		return err
	}
	for i, p := range platforms {
		if err := p.start(); err != nil {
			for _, rest := range platforms[i:] {
				rest.tables.End()
			}
			return err
		}
	}
	return nil
}

// startGateways starts the schools, startParallel at a time; once one
// fails, those not begun yet are not built.
func startGateways(a *App, gateways []*Gateway) error {
	errs := make([]error, len(gateways))
	var failed atomic.Bool
	var wg sync.WaitGroup
	slots := make(chan struct{}, startParallel)
	for i, g := range gateways {
		slots <- struct{}{}
		if failed.Load() {
			<-slots
			g.run.End()
			continue
		}
		wg.Go(func() {
			defer func() { <-slots }()
			if errs[i] = g.start(a); errs[i] != nil {
				failed.Store(true)
				g.run.End()
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Stop does nothing: the schools' background work ends with their state,
// which the config's Cleanup lets go of once the servers have stopped.
func (a *App) Stop() error { return nil }

// serving adds a started school to the serving ones.
func (a *App) serving(s *site) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sites == nil {
		a.sites = map[string]*site{}
	}
	a.sites[s.Issuer()] = s
}

// failing keeps a school that failed to load, for the admin API.
func (a *App) failing(f *failedSite) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.failed == nil {
		a.failed = map[string]*failedSite{}
	}
	a.failed[f.issuer] = f
}

// rebuilt moves a failed school that a rebuild built to the serving ones.
func (a *App) rebuilt(f *failedSite, s *site) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.failed[f.issuer] != f {
		return errNotFailed
	}
	delete(a.failed, f.issuer)
	if a.sites == nil {
		a.sites = map[string]*site{}
	}
	a.sites[f.issuer] = s
	return nil
}

// Failed returns the schools that failed to load.
func (a *App) Failed() []*failedSite {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]*failedSite, 0, len(a.failed))
	for _, f := range a.failed {
		out = append(out, f)
	}
	return out
}

// Site returns a running school by issuer.
func (a *App) Site(issuer string) (*site, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sites[issuer]
	return s, ok
}

// failedSite returns a school that failed to load, by issuer; nil if none.
func (a *App) failedSite(issuer string) *failedSite {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.failed[issuer]
}

// platformsNow are the config's platforms, ranked by key.
func (a *App) platformsNow() []*platform {
	if list := a.platformList.Load(); list != nil {
		return *list
	}
	return nil
}

// siteBlockOf returns the config's site block of an issuer, or the one
// whose bbolt file is path; nil if none.
func (a *App) siteBlockOf(issuer, path string) *Gateway {
	a.mu.Lock()
	defer a.mu.Unlock()
	if g := a.issuers[issuer]; g != nil {
		return g
	}
	if path != "" {
		return a.dataFiles[path]
	}
	return nil
}
