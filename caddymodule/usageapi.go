package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/adminapi"
	"github.com/schoolgate/schoolgate/store"
)

func init() {
	caddy.RegisterModule(usageAPI{})
}

// usageAPI adds each school's usage to Caddy's admin API
// (docs/operator.md, "Usage"):
//
//	GET /schoolgate/usage?issuer=...   requests, tokens, refusals by cause, p50/p99 of the last 5 min, hour and day; last active
type usageAPI struct{}

// CaddyModule returns the Caddy module information.
func (usageAPI) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.schoolgate_usage",
		New: func() caddy.Module { return new(usageAPI) },
	}
}

// Routes returns the admin routes.
func (usageAPI) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{{Pattern: "/schoolgate/usage", Handler: caddy.AdminHandlerFunc(handleUsage)}}
}

var _ caddy.AdminRouter = usageAPI{}

// handleUsage answers GET /schoolgate/usage (package adminapi), reading
// the school's usage with usageOf, within storeCallTimeout.
var handleUsage = adminRoute(adminapi.UsageAPI{Read: func(ctx context.Context, w http.ResponseWriter, issuer string) (*store.Usage, error) {
	ctx, cancel := context.WithTimeout(ctx, storeCallTimeout)
	defer cancel()
	return usageOf(ctx, w, issuer)
}}.Usage)

// errUsageUnread is a store that failed to answer, logged where it
// failed: the 503 of the admin API.
var errUsageUnread = adminapi.ErrUsageUnread

// unreadable logs a failed read of a school's usage as errUsageUnread.
func unreadable(log *slog.Logger, issuer string, u *store.Usage, err error) (*store.Usage, error) {
	if err != nil {
		log.Error("reading a school's usage failed", "issuer", issuer, "error", err)
		return nil, errUsageUnread
	}
	return u, nil
}

// usageOf reads the usage of the school with the issuer (in its one
// spelling): a built school's from its store and what it has counted
// since its last flush; a platform's idle school's (and a disabled or a
// failed one's) from its store alone, without building it, so that
// reading the figures of many schools neither builds them nor lets go
// of the schools in use to make room. A site block's school that failed
// to load is a 503 with Retry-After (set on w), as for the other
// operations.
func usageOf(ctx context.Context, w http.ResponseWriter, issuer string) (*store.Usage, error) {
	app, err := runningApp()
	if err != nil {
		return nil, err
	}
	if s, ok := app.Site(issuer); ok {
		u, err := s.Usage(ctx)
		return unreadable(s.log, issuer, u, err)
	}
	if f := app.failedSite(issuer); f != nil {
		return nil, unavailableSchool(w.Header(), f)
	}
	var unread *platform
	for _, p := range app.platformsNow() {
		t := p.tables.state.Load()
		if t == nil {
			unread = p
			continue
		}
		e := t.School(issuer)
		if e == nil {
			continue
		}
		if a := e.Active(); a != nil && a.Acquire() {
			defer a.Release()
			u, err := a.Built().Usage(ctx)
			return unreadable(a.Built().log, issuer, u, err)
		}
		return e.storedUsage(ctx)
	}
	if unread != nil {
		return nil, unread.unreadRegistry(w, issuer)
	}
	return nil, caddy.APIError{HTTPStatus: http.StatusNotFound, Err: fmt.Errorf("no school with issuer %s", issuer)}
}

// storedUsage reads the usage of a school that is not built from its
// store alone: its bbolt file if it has one (none: it never served), or
// its database's rows.
func (e *platformSchool) storedUsage(ctx context.Context) (*store.Usage, error) {
	err := e.prepare()
	e.prep.Lock()
	g := e.g
	e.prep.Unlock()
	if err != nil {
		return nil, caddy.APIError{HTTPStatus: http.StatusConflict,
			Err: fmt.Errorf("%s: its record cannot be used (%v), so where its usage is kept is not known", e.rec.Issuer, err)}
	}
	u, err := g.storedUsage(ctx)
	return unreadable(e.p.ctx.Slogger(), e.rec.Issuer, u, err)
}

// storedUsage reads the school's usage from its store without opening it
// as a school.
func (g *Gateway) storedUsage(ctx context.Context) (*store.Usage, error) {
	if opts := g.Store.options(); opts != nil {
		return opts.loadUsage(ctx, g.Issuer)
	}
	path := g.dataPath()
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return &store.Usage{}, nil
	}
	s, err := acquireBolt(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = releaseBolt(path) }()
	return s.LoadUsage(ctx)
}
