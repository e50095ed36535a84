package caddymodule

import (
	"crypto/sha256"
	"fmt"
	"sync"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"
)

const appName = "schoolgate"

func init() {
	caddy.RegisterModule(new(App))
}

// App keeps the schools of the running config: it refuses two site blocks
// sharing an issuer or a data file. Each school's background work (expiry
// purges, catalog refresh) runs with its state, which may outlive a config
// (sitepool.go).
type App struct {
	mu    sync.Mutex
	sites map[string]*site
	// failed are the schools whose data failed to load (failure.go).
	failed map[string]*failedSite
	// proxies are the config's reverse proxies to legacy servers, one
	// per configuration (upstreamproxy.go).
	proxies map[[sha256.Size]byte]*reverseproxy.Handler
}

// CaddyModule returns the Caddy module information.
func (*App) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  appName,
		New: func() caddy.Module { return new(App) },
	}
}

var _ caddy.App = (*App)(nil)

func (a *App) register(s *site) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sites == nil {
		a.sites = map[string]*site{}
	}
	issuer := s.Issuer()
	// Two site blocks alike would share one state (sitepool.go), so the
	// check cannot be on the state itself.
	if err := a.issuerFree(issuer); err != nil {
		return err
	}
	if err := a.dataFree(s); err != nil {
		return err
	}
	a.sites[issuer] = s
	return nil
}

// dataFree refuses a school whose bbolt file another school of the config
// uses. The caller holds a.mu.
func (a *App) dataFree(s *site) error {
	issuer := s.Issuer()
	for _, other := range a.sites {
		// A database tells sites apart by issuer; a bbolt file holds one.
		if s.gateway.Store == nil && other.stored.where == s.stored.where && other.Issuer() != issuer {
			return fmt.Errorf("data: %s is used by %s and %s; each school needs its own data directory",
				s.stored.where, other.Issuer(), issuer)
		}
	}
	return nil
}

// rebuilt moves a failed school that a rebuild built to the serving ones.
func (a *App) rebuilt(f *failedSite, s *site) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.failed[f.issuer] != f {
		return errNotFailed
	}
	if err := a.dataFree(s); err != nil {
		return err
	}
	delete(a.failed, f.issuer)
	if a.sites == nil {
		a.sites = map[string]*site{}
	}
	a.sites[f.issuer] = s
	return nil
}

// registerFailed keeps a school that failed to load, for the admin API.
func (a *App) registerFailed(f *failedSite) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.issuerFree(f.issuer); err != nil {
		return err
	}
	if a.failed == nil {
		a.failed = map[string]*failedSite{}
	}
	a.failed[f.issuer] = f
	return nil
}

// issuerFree refuses a second site block of an issuer. The caller holds
// a.mu.
func (a *App) issuerFree(issuer string) error {
	_, serving := a.sites[issuer]
	_, failed := a.failed[issuer]
	if serving || failed {
		return fmt.Errorf("issuer: %s is configured in two site blocks; each school needs its own", issuer)
	}
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

// Start does nothing: the schools' background work started with their
// state.
func (a *App) Start() error { return nil }

// Stop does nothing: the schools' background work ends with their state.
func (a *App) Stop() error { return nil }
