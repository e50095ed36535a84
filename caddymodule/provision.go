package caddymodule

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/internal/schedule"
	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/store"
)

// background runs every school's periodic work (expiry purges, catalog
// and admin OpenAPI refreshes) on a few goroutines, however many schools
// there are.
var background = schedule.New(backgroundWorkers)

const (
	// backgroundWorkers bounds the periodic jobs running at once; a job
	// is a store purge or a feed fetch, mostly waiting on I/O.
	backgroundWorkers = 8
	// janitorEvery is how often each school's expired records are purged.
	janitorEvery = 10 * time.Minute
)

// site is the state of one school. It lives as long as some loaded
// config has the school with the same configuration: a reload that leaves
// the school's options as they were keeps it, with its keys, catalog,
// index, documents and caches (see sitepool.go). The bbolt file or
// database pool beneath it is shared further (see storepool.go).
type site struct {
	gateway *Gateway
	as      *authserver.Server
	store   store.Store
	policy  *policy.Policy
	observe *observerRef
	// stored is the store and how to release it (see storepool.go).
	stored   *siteStore
	upstream *http.Client
	extras   siteExtras
	// assertionAudience is the aud of identity assertions; "" is off.
	assertionAudience string
	logger            *slog.Logger
	// since is when the state was built.
	since time.Time
}

// Provision finds the school's running state, or builds it: opens the
// store, loads the keys and builds the servers.
func (g *Gateway) Provision(ctx caddy.Context) error {
	g.setDefaults()
	if g.Issuer == "" {
		return fmt.Errorf("issuer: is required (it defaults to the site address only in a Caddyfile)")
	}
	if err := g.Validate(); err != nil {
		return err
	}
	key, err := g.siteKey()
	if err != nil {
		return err
	}
	s, kept, err := acquireSite(key, func() (*site, context.CancelFunc, error) { return g.newSite(ctx) })
	if err != nil {
		return g.provisionFailed(ctx, key, err)
	}
	if kept {
		// This config serves its own metrics registry.
		s.observe.use(newSiteObserver(metricsFor(ctx.GetMetricsRegistry()), g.Issuer))
	}
	app, err := ctx.App(appName)
	if err == nil {
		err = app.(*App).register(s)
	}
	if err != nil {
		_ = releaseSite(key)
		return err
	}
	g.site, g.key = s, key
	return nil
}

// provisionFailed decides what a school that failed to build does. An
// error in its data leaves the other schools starting and this one
// answering 503 (failure.go) and being built again in the background
// (rebuild.go) — unless the running config serves the school: then the
// load fails, and the running config keeps serving it, for a reload must
// never trade a serving school for a 503.
func (g *Gateway) provisionFailed(ctx caddy.Context, key string, err error) error {
	f, isData := asLoadFailure(err)
	if !isData || servingNow(g.Issuer) {
		return err
	}
	ctx.Slogger().Error("the school failed to load; it answers 503 until a rebuild in the background or a reload builds it",
		"issuer", g.Issuer, "error", err, "next_try", firstRebuild)
	fs := newFailedSite(g, f)
	v, err := ctx.App(appName)
	if err != nil {
		return err
	}
	app := v.(*App)
	if err := app.registerFailed(fs); err != nil {
		return err
	}
	g.failed = fs
	fs.startRebuilds(ctx, app, key)
	return nil
}

// servingNow reports whether the running config serves the school.
func servingNow(issuer string) bool {
	app, err := runningApp()
	if err != nil {
		return false
	}
	_, ok := app.Site(issuer)
	return ok
}

// newSite builds a school's state and starts its background work, which
// runs until the returned cancel: when no config has the school any more.
func (g *Gateway) newSite(ctx caddy.Context) (*site, context.CancelFunc, error) {
	logger := ctx.Slogger()
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
	s := &site{gateway: g, store: stored.Store, stored: stored, assertionAudience: g.assertionAudience(), logger: logger,
		since:    time.Now().UTC(),
		upstream: &http.Client{Timeout: 15 * time.Second, CheckRedirect: noRedirects},
		observe:  newObserverRef(newSiteObserver(metricsFor(ctx.GetMetricsRegistry()), g.Issuer))}
	s.as, err = authserver.New(life, authserver.Config{
		Issuer:            g.Issuer,
		SessionURL:        g.upstreamURL(g.SessionURL),
		LoginURL:          g.LoginURL,
		AdminPrefix:       g.AdminPrefix,
		SchoolName:        s.schoolName,
		Vendors:           g.vendorClients(),
		MCPConnections:    g.MCPConnections,
		CodeTTL:           time.Duration(g.CodeTTL),
		AccessTTL:         time.Duration(g.AccessTTL),
		RefreshTTL:        time.Duration(g.RefreshTTL),
		RefreshGrace:      time.Duration(g.RefreshGrace),
		NoRefreshGrace:    g.NoRefreshGrace,
		SessionClient:     s.upstream,
		MetadataDocuments: g.metadataDocuments(),
		RateLimits:        g.authserverLimits(),
		ClientIP:          clientIP,
		Observer:          s.observe,
		Logger:            logger,
	}, stored.Store)
	if err != nil {
		return fail(failedLoading("its signing keys and settings could not be read from its store",
			fmt.Errorf("school %s: %v", g.Issuer, err)))
	}
	s.policy = &policy.Policy{AdminPrefix: g.AdminPrefix, Rules: g.policyRules()}
	// The admin OpenAPI file ships with the configuration: an error in it
	// fails the load, as a configuration error does.
	if err := s.provisionExtras(ctx, life); err != nil {
		return fail(err)
	}
	// The janitor runs on the shared scheduler, each school at its own
	// point of the period.
	background.Add(life, schedule.Offset(g.Issuer, janitorEvery), func(ctx context.Context) time.Duration {
		s.as.Purge(ctx, janitorEvery)
		return janitorEvery
	})
	s.startExtras(life)
	return s, cancel, nil
}

// Cleanup lets go of the school's state; it ends, with its background
// work, when no config has the school any more.
func (g *Gateway) Cleanup() error {
	if g.failed != nil {
		return g.failed.endRebuilds()
	}
	if g.site == nil {
		return nil
	}
	return releaseSite(g.key)
}

func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// upstreamURL resolves a path against the upstream; URLs pass unchanged.
func (g *Gateway) upstreamURL(pathOrURL string) string {
	if strings.HasPrefix(pathOrURL, "/") {
		return g.Upstream + pathOrURL
	}
	return pathOrURL
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
