package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/internal/schedule"
	"github.com/schoolgate/schoolgate/internal/source"
	"github.com/schoolgate/schoolgate/policy"
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
// further (see storepool.go).
type site struct {
	*school.Site
	gateway *Gateway
	// observe is the school's observer, which a reload that keeps the
	// school points at the new config's metrics (metrics.go).
	observe *observerRef
	// stored is the store and how to release it (see storepool.go).
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
	g.setDefaults()
	if g.Issuer == "" {
		return fmt.Errorf("issuer: is required (it defaults to the site address only in a Caddyfile)")
	}
	if err := g.Validate(); err != nil {
		return err
	}
	if err := g.readAdminOpenAPI(ctx); err != nil {
		return err
	}
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

// readAdminOpenAPI reads the admin OpenAPI file the configuration names,
// if it names one, and renders the documents with it.
func (g *Gateway) readAdminOpenAPI(ctx context.Context) error {
	src := g.AdminOpenAPI
	if src == "" || source.IsURL(src) {
		return nil
	}
	raw, err := source.Read(ctx, nil, src, school.AdminOpenAPIDoc)
	if err != nil {
		return fmt.Errorf("admin_openapi: %v", err)
	}
	cfg := g.schoolConfig()
	cfg.AdminOpenAPI = raw
	if err := school.CheckDocuments(cfg); err != nil {
		return fmt.Errorf("%v (admin_openapi %s)", err, src)
	}
	g.adminOpenAPI = raw
	return nil
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
	observe := newObserverRef(newSiteObserver(metricsFor(ctx.GetMetricsRegistry()), g.Issuer))
	cfg.Store, cfg.Observer, cfg.Logger, cfg.Scheduler = stored.Store, observe, ctx.Slogger(), background
	cfg.AuditLogger, cfg.RequestID = auditLogger(ctx), requestID
	cfg.Admission, cfg.Instances = fairShare.School(cfg.Weight), stored.instances
	sch, err := school.New(life, cfg)
	var de *school.DataError
	switch {
	case errors.As(err, &de):
		return fail(failedLoading("its signing keys and settings could not be read from its store", de.Err))
	case err != nil:
		return fail(err)
	}
	return &site{Site: sch, gateway: g, observe: observe, stored: stored, log: cfg.Logger}, cancel, nil
}

// schoolConfig is the school's configuration, without what is opened or
// shared when it is built (its store, observer, logger and scheduler).
// The admin OpenAPI file's content is Provision's reading of it.
func (g *Gateway) schoolConfig() school.Config {
	c := school.Config{
		Issuer:            g.Issuer,
		Upstream:          g.Upstream,
		SessionURL:        g.SessionURL,
		LoginURL:          g.LoginURL,
		AdminPrefix:       g.AdminPrefix,
		Rules:             g.policyRules(),
		Catalog:           g.Catalog,
		Language:          g.Language,
		CatalogRefresh:    time.Duration(g.CatalogRefresh),
		AssertionAudience: g.assertionAudience(),
		AssertionOnly:     g.IdentityHeaders == identityHeadersAssertion,
		Vendors:           g.vendorClients(),
		MCPConnections:    g.MCPConnections,
		MetadataDocuments: g.metadataDocuments(),
		RateLimits:        g.authserverLimits(),
		Weight:            max(g.Weight, 1),
		Budget:            g.schoolBudget(),
		CodeTTL:           time.Duration(g.CodeTTL),
		AccessTTL:         time.Duration(g.AccessTTL),
		RefreshTTL:        time.Duration(g.RefreshTTL),
		AuditRetention:    time.Duration(g.AuditRetention),
		StepRetention:     time.Duration(g.DoctorRetention),
		RefreshGrace:      time.Duration(g.RefreshGrace),
		NoRefreshGrace:    g.NoRefreshGrace,
		DPoP:              g.dpopMode(),
		DPoPNonce:         g.DPoPNonce,
		AdminOpenAPI:      g.adminOpenAPI,
		ClientIP:          clientIP,
		Identified:        setPlaceholders,
	}
	if source.IsURL(g.AdminOpenAPI) {
		c.AdminOpenAPIURL = g.AdminOpenAPI
	}
	return c
}

func (g *Gateway) vendorClients() []authserver.VendorClient {
	out := make([]authserver.VendorClient, 0, len(g.Vendors))
	for _, v := range g.Vendors {
		out = append(out, authserver.VendorClient{ClientID: v.ClientID, Name: v.Name,
			RedirectURIs: v.RedirectURIs, Audience: v.Audience, Scopes: v.Scopes, Secret: v.ClientSecret})
	}
	return out
}

func (g *Gateway) metadataDocuments() authserver.MetadataDocumentsConfig {
	if g.MetadataDocuments == nil {
		return authserver.MetadataDocumentsConfig{}
	}
	return authserver.MetadataDocumentsConfig{AllowHosts: g.MetadataDocuments.AllowHosts,
		AllowPrivateNetworks: g.MetadataDocuments.AllowPrivateNetworks}
}

func (g *Gateway) policyRules() []policy.Rule {
	out := make([]policy.Rule, 0, len(g.Rules))
	for _, r := range g.Rules {
		pr := policy.Rule{Method: r.Method, Path: r.Path, Deny: r.Audience == "deny",
			Requirement: policy.Requirement{Audience: r.Audience, Scopes: r.Scopes}}
		if pr.Deny {
			pr.Requirement = policy.Requirement{}
		}
		out = append(out, pr)
	}
	return out
}

func (r Rule) validate() error {
	where := fmt.Sprintf("rule %s %s", r.Method, r.Path)
	if !strings.HasPrefix(r.Path, "/") {
		return fmt.Errorf("%s: the path must start with /", where)
	}
	if r.Audience != policy.AudienceMember && r.Audience != policy.AudienceOperator && r.Audience != "deny" {
		return fmt.Errorf("%s: audience must be member, operator or deny, not %q", where, r.Audience)
	}
	return checkScopes(where, r.Scopes)
}

// checkScopes refuses a scope the table does not know. offline_access is
// refused by name: every client may request it without being given it,
// and no request can need it.
func checkScopes(where string, scopes []string) error {
	for _, s := range scopes {
		if s == policy.OfflineAccess {
			return fmt.Errorf("%s: scope %q is not configured: every client may request it, and no request needs it", where, s)
		}
		known := false
		for _, k := range policy.AllScopes {
			if k == s {
				known = true
				break
			}
		}
		if !known {
			return fmt.Errorf("%s: unknown scope %q", where, s)
		}
	}
	return nil
}
