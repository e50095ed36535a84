package caddymodule

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"
	"go.uber.org/zap"
)

func init() {
	caddy.RegisterModule(UpstreamProxy{})
}

// UpstreamProxy is Caddy's reverse_proxy to a school's legacy server,
// provisioned once per config for all the schools that configure it
// alike. Each reverse_proxy handler keeps its own upstream state, health
// checks and a metrics goroutine; a thousand schools in front of one legacy
// server need one of each, not a thousand. The school_gateway directive
// uses it; JSON configurations may use it or reverse_proxy itself.
type UpstreamProxy struct {
	// Proxy is the reverse_proxy handler's configuration, as for the
	// reverse_proxy handler itself (without "handler").
	Proxy json.RawMessage `json:"proxy"`

	handler *reverseproxy.Handler
}

// CaddyModule returns the Caddy module information.
func (UpstreamProxy) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.schoolgate_upstream",
		New: func() caddy.Module { return new(UpstreamProxy) },
	}
}

// Provision finds the config's proxy configured alike, or provisions it.
func (u *UpstreamProxy) Provision(ctx caddy.Context) error {
	if len(u.Proxy) == 0 {
		return fmt.Errorf("proxy: a reverse_proxy configuration is required")
	}
	app, err := ctx.App(appName)
	if err != nil {
		return err
	}
	u.handler, err = app.(*App).proxy(ctx, u.Proxy)
	return err
}

// ServeHTTP proxies the request to the legacy server.
func (u *UpstreamProxy) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	return u.handler.ServeHTTP(w, r, next)
}

// pooledProxy is one of the config's reverse proxies and how many hold
// it.
type pooledProxy struct {
	h    *reverseproxy.Handler
	refs int
	// A proxy first held by a platform's school is provisioned in a
	// context of its own, ctx, which end ends with the proxy: what its
	// provisioning started (its transport, health checks, and the metrics
	// goroutine each reverse_proxy runs) would otherwise last as long as
	// the config's. Its metrics registry is the context's, which Caddy
	// does not serve: caddy_reverse_proxy_upstreams_healthy (one gauge
	// for the process) is served only by a config where a site block's
	// proxy registered it. Both nil for a site block's proxy.
	ctx context.Context
	end context.CancelFunc
}

// proxy returns the config's reverse_proxy handler for raw, provisioning
// it on first use with the config's context, and holds it until the
// config ends (Cleanup): a site block's.
func (a *App) proxy(ctx caddy.Context, raw json.RawMessage) (*reverseproxy.Handler, error) {
	h, _, err := a.acquireProxy(ctx, raw, false)
	return h, err
}

// acquireProxy returns the config's reverse_proxy handler for raw, held
// until release is called: the last release lets go of it. own
// provisions a proxy not provisioned yet in a context of its own, which
// its last release ends (a platform's school, which comes and goes while
// the config runs).
func (a *App) acquireProxy(ctx caddy.Context, raw json.RawMessage, own bool) (*reverseproxy.Handler, func(), error) {
	key := sha256.Sum256(raw)
	a.mu.Lock()
	defer a.mu.Unlock()
	pp, ok := a.proxies[key]
	if !ok {
		h := new(reverseproxy.Handler)
		if err := json.Unmarshal(raw, h); err != nil {
			return nil, nil, fmt.Errorf("proxy: %v", err)
		}
		pp = &pooledProxy{h: h}
		pctx := ctx
		if own {
			pctx, pp.end = caddy.NewContext(a.proxyBase(ctx))
			pp.ctx = pctx
		}
		if err := h.Provision(pctx); err != nil {
			if pp.end != nil {
				pp.end()
			}
			return nil, nil, fmt.Errorf("proxy: %v", err)
		}
		lazyProxyLog(h)
		if a.proxies == nil {
			a.proxies = map[[sha256.Size]byte]*pooledProxy{}
		}
		a.proxies[key] = pp
	}
	pp.refs++
	var once sync.Once
	return pp.h, func() { once.Do(func() { a.releaseProxy(key, pp) }) }, nil
}

// releaseProxy lets go of one hold of a proxy, and of the proxy with the
// last.
func (a *App) releaseProxy(key [sha256.Size]byte, pp *pooledProxy) {
	a.mu.Lock()
	pp.refs--
	last := pp.refs == 0 && a.proxies[key] == pp
	if last {
		delete(a.proxies, key)
	}
	a.mu.Unlock()
	if last {
		if err := pp.close(); err != nil {
			caddy.Log().Named("schoolgate").Error("letting go of a proxy", zap.Error(err))
		}
	}
}

// close lets go of the proxy's upstream state (in Caddy's pool of hosts)
// and of what its provisioning started.
func (pp *pooledProxy) close() error {
	err := pp.h.Cleanup()
	if pp.end != nil {
		pp.end()
	}
	return err
}

// proxyBase is the parent of the proxies' own contexts: a child of the
// config's that runs none of the config's functions when a proxy's
// context ends (Caddy's NewContext runs its parent's at the child's end:
// of the config's context, they close its logs). Never ended itself: it
// ends with the config's. The caller holds a.mu.
func (a *App) proxyBase(ctx caddy.Context) caddy.Context {
	if a.proxyCtx == nil {
		base, _ := caddy.NewContext(ctx)
		a.proxyCtx = &base
	}
	return *a.proxyCtx
}

// Cleanup lets go of the config's proxies (their upstream state; their
// transports and background work end with the config's context, or their
// own).
func (a *App) Cleanup() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	var errs []error
	for key, pp := range a.proxies {
		errs = append(errs, pp.close())
		delete(a.proxies, key)
	}
	return errors.Join(errs...)
}

var (
	_ caddyhttp.MiddlewareHandler = (*UpstreamProxy)(nil)
	_ caddy.Provisioner           = (*UpstreamProxy)(nil)
	_ caddy.CleanerUpper          = (*App)(nil)
)
