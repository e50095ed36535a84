package caddymodule

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/internal/schedule"
	"github.com/schoolgate/schoolgate/metrics"
	"github.com/schoolgate/schoolgate/school"
)

// background runs every school's periodic work (expiry purges, catalog
// and admin OpenAPI refreshes) on a few goroutines, however many schools
// there are.
var background = schedule.New(backgroundWorkers)

// backgroundWorkers bounds the periodic jobs running at once; a job is a
// store purge or a feed fetch, mostly waiting on I/O.
const backgroundWorkers = 8

// site is one school (package school) with what the Caddy adapter keeps
// beside it. It lives as long as some loaded config has the school with
// the same configuration: a reload that leaves the school's options as
// they were keeps it, with its keys, catalog, index, documents and caches
// (see sitepool.go). The bbolt file or database pool beneath it is shared
// further (package storepool).
type site struct {
	*school.Site
	gateway *Gateway
	// observe is the school's observer, which a reload that keeps the
	// school points at the new config's metrics (package metrics).
	observe *metrics.Ref
	// stored is the store and how to release it (see storeopen.go).
	stored *siteStore
	// log is the logger of the config that built the school.
	log *slog.Logger
}

// Provision checks the school's configuration and registers the school
// with the App, and does nothing else: it opens no store and builds
// nothing, for Caddy provisions a config it will not run, too (caddy
// validate, caddy adapt --validate). The App's Start builds the school
// (start.go). The admin OpenAPI file is read here: it ships with the
// configuration, and an error in it is the configuration's.
func (g *Gateway) Provision(ctx caddy.Context) error {
	g.SetDefaults()
	if g.Issuer == "" {
		return fmt.Errorf("issuer: is required (it defaults to the site address only in a Caddyfile)")
	}
	if err := g.Validate(); err != nil {
		return err
	}
	raw, err := g.ReadAdminOpenAPI(ctx)
	if err != nil {
		return err
	}
	g.adminOpenAPI = raw
	key, err := g.siteKey()
	if err != nil {
		return err
	}
	g.key, g.ctx, g.run = key, ctx, newGatewayRun()
	app, err := ctx.App(appName)
	if err != nil {
		return err
	}
	return app.(*App).register(g)
}

// newSite builds a school's state and starts its background work, which
// runs until the returned cancel: when no config has the school any more.
func (g *Gateway) newSite(ctx caddy.Context) (*site, context.CancelFunc, error) {
	stored, err := g.openStore(ctx)
	if err != nil {
		return nil, nil, failedLoading("its store could not be opened", err)
	}
	life, cancel := context.WithCancel(context.Background())
	fail := func(err error) (*site, context.CancelFunc, error) {
		cancel()
		_ = stored.release()
		return nil, nil, err
	}
	cfg := g.schoolConfig()
	observe := metrics.NewRef(metrics.NewObserver(metrics.For(ctx.GetMetricsRegistry()), g.Issuer))
	cfg.Store, cfg.Observer, cfg.Logger, cfg.Scheduler = stored.Store, observe, ctx.Slogger(), background
	cfg.AuditLogger, cfg.RequestID = auditLogger(ctx), requestID
	cfg.Admission, cfg.Instances = fairShare.School(max(cfg.Weight, 1)), stored.instances
	sch, err := school.New(life, cfg)
	if err != nil {
		return fail(err)
	}
	return &site{Site: sch, gateway: g, observe: observe, stored: stored, log: cfg.Logger}, cancel, nil
}

// schoolConfig is the school's configuration, without what is opened or
// shared when it is built (its store, observer, logger and scheduler).
// The admin OpenAPI file's content is Provision's reading of it.
func (g *Gateway) schoolConfig() school.Config {
	return school.Config{Options: g.Options, AdminOpenAPIFile: g.adminOpenAPI,
		ClientIP: clientIP, Identified: setPlaceholders}
}
