package caddymodule

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"
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

// proxy returns the config's reverse_proxy handler for raw, provisioning
// it on first use with the config's context, so that it ends with the
// config (Cleanup).
func (a *App) proxy(ctx caddy.Context, raw json.RawMessage) (*reverseproxy.Handler, error) {
	key := sha256.Sum256(raw)
	a.mu.Lock()
	defer a.mu.Unlock()
	if h, ok := a.proxies[key]; ok {
		return h, nil
	}
	h := new(reverseproxy.Handler)
	if err := json.Unmarshal(raw, h); err != nil {
		return nil, fmt.Errorf("proxy: %v", err)
	}
	if err := h.Provision(ctx); err != nil {
		return nil, fmt.Errorf("proxy: %v", err)
	}
	if a.proxies == nil {
		a.proxies = map[[sha256.Size]byte]*reverseproxy.Handler{}
	}
	a.proxies[key] = h
	return h, nil
}

// Cleanup lets go of the config's proxies (their upstream state; their
// transports and background work end with the config's context).
func (a *App) Cleanup() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	var errs []error
	for key, h := range a.proxies {
		errs = append(errs, h.Cleanup())
		delete(a.proxies, key)
	}
	return errors.Join(errs...)
}

var (
	_ caddyhttp.MiddlewareHandler = (*UpstreamProxy)(nil)
	_ caddy.Provisioner           = (*UpstreamProxy)(nil)
	_ caddy.CleanerUpper          = (*App)(nil)
)
