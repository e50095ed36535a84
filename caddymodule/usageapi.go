package caddymodule

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"os"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/adminapi"
	"github.com/schoolgate/schoolgate/store"
	"github.com/schoolgate/schoolgate/storepool"
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
// failed one's) from its store alone, without building it
// (storedread.go).
func usageOf(ctx context.Context, w http.ResponseWriter, issuer string) (*store.Usage, error) {
	s, e, release, err := schoolToRead(w, issuer)
	if err != nil {
		return nil, err
	}
	defer release()
	if s != nil {
		u, err := s.Usage(ctx)
		return unreadable(s.log, issuer, u, err)
	}
	g, err := e.placed("usage")
	if err != nil {
		return nil, err
	}
	u, err := g.storedUsage(ctx)
	return unreadable(e.p.ctx.Slogger(), issuer, u, err)
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
	s, err := storepool.Bolt(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = storepool.ReleaseBolt(path) }()
	return s.LoadUsage(ctx)
}
