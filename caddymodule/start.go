package caddymodule

import (
	"context"
	"errors"

	"github.com/schoolgate/schoolgate/internal/startgate"
	"github.com/schoolgate/schoolgate/metrics"
	"github.com/schoolgate/schoolgate/school"
)

// A school is built when its config starts, not when it is provisioned:
// Caddy calls an App's Start only for a config it runs, and provisions
// the configs it validates or adapts too. The App's Start builds each
// registered school in turn (start); Caddy starts apps in map order, so
// the http app may already serve when it does, and a request that reaches
// a school not built yet waits for it (gatewayRun.Await).

// gatewayRun is what a Gateway serves: nothing until the App's Start
// built its school, then the school or the stand-in of one that failed
// to load (failure.go).
type gatewayRun = startgate.Gate[gatewayState]

// gatewayState is a started Gateway's school: site, or failed.
type gatewayState struct {
	site   *site
	failed *failedSite
}

func newGatewayRun() *gatewayRun { return startgate.New[gatewayState]() }

// start builds the school, or finds its running state: opens the store,
// loads the keys and builds the servers. An error fails the config's
// start.
func (g *Gateway) start(app *App) error {
	ctx := g.ctx
	s, kept, err := acquireSite(g.key, func() (*site, context.CancelFunc, error) { return g.newSite(ctx) })
	if err != nil {
		return g.startFailed(app, err)
	}
	if kept {
		// This config serves its own metrics registry.
		s.observe.Use(metrics.NewObserver(metrics.For(ctx.GetMetricsRegistry()), g.Issuer))
	}
	app.serving(s)
	g.run.Set(&gatewayState{site: s})
	return nil
}

// startFailed decides what a school that failed to build does. An error
// in its data leaves the other schools starting and this one answering
// 503 (failure.go) and being built again in the background (rebuild.go)
// — unless the running config serves the school: then the start fails,
// and the running config keeps serving it, for a reload must never trade
// a serving school for a 503.
func (g *Gateway) startFailed(app *App, err error) error {
	f, isData := errors.AsType[*school.BuildError](err)
	if !isData || servingNow(g.Issuer) {
		return err
	}
	g.ctx.Slogger().Error("the school failed to load; it answers 503 until a rebuild in the background or a reload builds it",
		"issuer", g.Issuer, "error", err, "next_try", firstRebuild)
	fs := newFailedSite(g, f)
	app.failing(fs)
	g.run.Set(&gatewayState{failed: fs})
	fs.startRebuilds(g.ctx, app, g.key)
	return nil
}

// servingNow reports whether the running config serves the school. While
// a config starts, the running config is the one it replaces.
func servingNow(issuer string) bool {
	app, err := runningApp()
	if err != nil {
		return false
	}
	_, ok := app.Site(issuer)
	return ok
}

// Cleanup lets go of the school's state; it ends, with its background
// work, when no config has the school any more. Requests still waiting
// for a school that was never built are let go.
func (g *Gateway) Cleanup() error {
	if g.run == nil {
		return nil
	}
	g.run.End()
	st := g.run.Load()
	switch {
	case st == nil:
		return nil
	case st.failed != nil:
		return st.failed.endRebuilds()
	}
	return releaseSite(g.key)
}
