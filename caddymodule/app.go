package caddymodule

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
)

const appName = "schoolgate"

func init() {
	caddy.RegisterModule(new(App))
}

// App keeps the schools of the running config: it refuses two site blocks
// sharing an issuer or a data file, and runs each site's background work
// (expiry purges, catalog refresh) while the config is running.
type App struct {
	mu     sync.Mutex
	sites  map[string]*site
	cancel context.CancelFunc
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
	issuer := s.as.Issuer()
	if other, ok := a.sites[issuer]; ok && other != s {
		return fmt.Errorf("issuer: %s is configured in two site blocks; each school needs its own", issuer)
	}
	for _, other := range a.sites {
		// A database tells sites apart by issuer; a bbolt file holds one.
		if s.gateway.Store == nil && other.stored.where == s.stored.where && other.as.Issuer() != issuer {
			return fmt.Errorf("data: %s is used by %s and %s; each school needs its own data directory",
				s.stored.where, other.as.Issuer(), issuer)
		}
	}
	a.sites[issuer] = s
	return nil
}

// Site returns a running school by issuer.
func (a *App) Site(issuer string) (*site, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sites[issuer]
	return s, ok
}

// Start launches each site's background work.
func (a *App) Start() error {
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range a.sites {
		go s.as.RunJanitor(ctx, 10*time.Minute)
		s.startExtras(ctx)
	}
	return nil
}

// Stop ends the background work.
func (a *App) Stop() error {
	if a.cancel != nil {
		a.cancel()
	}
	return nil
}
