package caddymodule

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/school"
)

// A school whose data failed to load is built again in the background,
// from a few seconds to a few minutes apart, until it loads or its config
// ends. What fails a load is mostly passing: a store file another process
// still holds (a restart's overlap, a second Caddy on the same data), a
// database that was not up yet, a data directory or file an operator then
// repairs. None of these should leave a school answering 503 until
// someone thinks of a reload.
const (
	firstRebuild = 5 * time.Second
	lastRebuild  = 5 * time.Minute
)

// rebuilder is the background rebuild of a failed school.
type rebuilder struct {
	// next is when the next attempt runs (Unix nanoseconds): what a
	// client is told to wait for (Retry-After) and the operator is shown.
	next atomic.Int64
	// site is the school once a rebuild built it; it then serves in the
	// failed stand-in's place.
	site atomic.Pointer[site]

	mu    sync.Mutex // orders a rebuild's success against the config's end
	key   string     // the school's key in the site pool
	stop  context.CancelFunc
	ended bool
}

// startRebuilds schedules the rebuilds of f; they end with the config
// (endRebuilds). ctx is the config's context, which builds the school as
// the App's Start would.
func (f *failedSite) startRebuilds(ctx caddy.Context, app *App, key string) {
	life, stop := context.WithCancel(context.Background())
	f.rebuild.key, f.rebuild.stop = key, stop
	delay := firstRebuild
	f.rebuild.next.Store(time.Now().Add(delay).UnixNano())
	background.Add(life, delay, func(context.Context) time.Duration {
		if f.tryRebuild(ctx, app) {
			return 0
		}
		delay = min(delay*2, lastRebuild)
		f.rebuild.next.Store(time.Now().Add(delay).UnixNano())
		return delay
	})
}

// nextTry is when the school is next built again.
func (f *failedSite) nextTry() time.Time { return time.Unix(0, f.rebuild.next.Load()).UTC() }

// tryRebuild builds the school once and reports whether it now serves.
func (f *failedSite) tryRebuild(ctx caddy.Context, app *App) bool {
	g := f.gateway
	key := f.rebuild.key
	// A school another config already holds can only be a newer config's,
	// which built what this one could not: its metrics stay with that
	// config, and this one serves the school until it ends.
	s, _, err := acquireSite(key, func() (*site, context.CancelFunc, error) { return g.newSite(ctx) })
	if err != nil {
		f.stillFailing(ctx, err)
		return false
	}
	f.rebuild.mu.Lock()
	defer f.rebuild.mu.Unlock()
	if f.rebuild.ended {
		_ = releaseSite(key)
		return true
	}
	if err := app.rebuilt(f, s); err != nil {
		_ = releaseSite(key)
		f.stillFailing(ctx, err)
		return false
	}
	f.rebuild.site.Store(s)
	ctx.Slogger().Info("the school failed to load before and serves now", "issuer", g.Issuer)
	return true
}

// stillFailing records why a rebuild failed.
func (f *failedSite) stillFailing(ctx caddy.Context, err error) {
	f.failure.Store(school.AsBuildError(err, "it could not be built"))
	ctx.Slogger().Warn("the school still fails to load; it is tried again later",
		"issuer", f.gateway.Issuer, "error", err)
}

// built is the school a rebuild built, nil before.
func (f *failedSite) built() *site { return f.rebuild.site.Load() }

// endRebuilds stops the rebuilds when the config ends, and lets go of
// the school if one of them built it.
func (f *failedSite) endRebuilds() error {
	f.rebuild.mu.Lock()
	defer f.rebuild.mu.Unlock()
	f.rebuild.ended = true
	if f.rebuild.stop != nil {
		f.rebuild.stop()
	}
	if f.built() == nil {
		return nil
	}
	return releaseSite(f.rebuild.key)
}

// errNotFailed is a rebuilt school the App does not hold as failed.
var errNotFailed = errors.New("the school is no longer this config's failed school")
