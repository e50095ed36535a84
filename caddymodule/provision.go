package caddymodule

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/policy"
)

// site is the state of one school for one loaded config. The bbolt file
// beneath it outlives configs (see storepool.go).
type site struct {
	gateway *Gateway
	as      *authserver.Server
	store   authserver.Store
	policy  *policy.Policy
	observe siteObserver
	// stored is the store and how to release it (see storepool.go).
	stored   *siteStore
	upstream *http.Client
	extras   siteExtras
	// assertionAudience is the aud of identity assertions; "" is off.
	assertionAudience string
	logger            *slog.Logger
}

// Provision opens the site's store, loads its keys and builds its servers.
func (g *Gateway) Provision(ctx caddy.Context) error {
	g.setDefaults()
	if g.Issuer == "" {
		return fmt.Errorf("issuer: is required (it defaults to the site address only in a Caddyfile)")
	}
	if err := g.Validate(); err != nil {
		return err
	}
	logger := ctx.Slogger()
	stored, err := g.openStore(ctx)
	if err != nil {
		return err
	}
	store := stored.Store
	s := &site{gateway: g, store: store, stored: stored, assertionAudience: g.assertionAudience(), logger: logger,
		upstream: &http.Client{Timeout: 15 * time.Second, CheckRedirect: noRedirects},
		observe:  newSiteObserver(metricsFor(ctx.GetMetricsRegistry()), g.Issuer)}
	s.as, err = authserver.New(ctx, authserver.Config{
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
	}, store)
	if err != nil {
		_ = stored.release()
		return fmt.Errorf("school %s: %v", g.Issuer, err)
	}
	s.policy = &policy.Policy{AdminPrefix: g.AdminPrefix, Rules: g.policyRules()}
	if err := s.provisionExtras(ctx); err != nil {
		_ = stored.release()
		return err
	}
	app, err := ctx.App(appName)
	if err != nil {
		_ = stored.release()
		return err
	}
	if err := app.(*App).register(s); err != nil {
		_ = stored.release()
		return err
	}
	g.site = s
	return nil
}

// Cleanup releases the store; the file or pool closes when no config
// uses it.
func (g *Gateway) Cleanup() error {
	if g.site == nil {
		return nil
	}
	return g.site.stored.release()
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
	if r.Audience != "member" && r.Audience != "operator" && r.Audience != "deny" {
		return fmt.Errorf("%s: audience must be member, operator or deny, not %q", where, r.Audience)
	}
	return checkScopes(where, r.Scopes)
}

func checkScopes(where string, scopes []string) error {
	for _, s := range scopes {
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
